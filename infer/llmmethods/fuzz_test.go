package llmmethods

import (
	"slices"
	"testing"

	"github.com/tracksum/tracksum/dataset"
)

// FuzzParseAnswers: whatever an endpoint answers, the parsers of the prompting and PCoA methods
// never panic and always return a prediction the evaluator accepts: citations are sorted, unique
// sentence indices of the abstract, and a negative summary has none. Seeds:
// testdata/fuzz/FuzzParseAnswers.
//
//	go test ./infer/llmmethods -run '^$' -fuzz '^FuzzParseAnswers$' -fuzztime 60s
func FuzzParseAnswers(f *testing.F) {
	for _, s := range []string{
		"Summary: Drug X reduced pain.\nCitations: [0, 2]",
		"**Summary:** Unknown.\n**Citations:** Null.",
		"Unknown.", "", "Summary:", "Citations: [9, -1, 2-4, S1]",
		"1. Indices: [1,2]\n2. Key phrases: [\"20 mg\", \"daily\"]\n3. Summary: Patients got 20 mg daily.",
		"I'm sorry, I can't help with that.", "Summary: a\n\nsome commentary\nCitations: []",
	} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, answer string, n int) {
		if n < 0 || n > 500 {
			return
		}
		check := func(name string, a Answer, withSummary bool) {
			if !slices.IsSorted(a.Indexes) || len(slices.Compact(slices.Clone(a.Indexes))) != len(a.Indexes) {
				t.Fatalf("%s(%q, %d): indexes %v not sorted and unique", name, answer, n, a.Indexes)
			}
			for _, i := range a.Indexes {
				if i < 0 || i >= n {
					t.Fatalf("%s(%q, %d): index %d outside the abstract", name, answer, n, i)
				}
			}
			// Evidence without a summary (PCoA's prior retrieval) leaves Summary empty on purpose.
			if withSummary && dataset.IsUnknownSummary(a.Summary) && len(a.Indexes) > 0 {
				t.Fatalf("%s(%q, %d): negative summary with citations %v", name, answer, n, a.Indexes)
			}
		}
		check("ParseSummaryCitations", ParseSummaryCitations(answer, n), true)
		check("ParseEvidence", ParseEvidence(answer, n, true), true)
		check("ParseEvidence(no summary)", ParseEvidence(answer, n, false), false)
		check("ParseSummary", ParseSummary(answer), true)
	})
}
