package ete

import (
	"reflect"
	"testing"

	"github.com/tracksum/tracksum/model/role"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		n          int
		want       role.Output
	}{
		{"well formed", "Adults with asthma. [CITE] 0 3", 5,
			role.Output{Summary: "Adults with asthma.", Indexes: []int{0, 3}}},
		{"unsorted, commas and brackets", "Adults.  [CITE] [3], 1,2", 5,
			role.Output{Summary: "Adults.", Indexes: []int{1, 2, 3}}},
		{"out of range dropped", "Adults. [CITE] 1 7 12", 5,
			role.Output{Summary: "Adults.", Indexes: []int{1}, Problems: []string{role.ProblemIndexOutOfRange}, Dropped: 2}},
		{"words and negatives dropped", "Adults. [CITE] 1 two -3 4a", 5,
			role.Output{Summary: "Adults.", Indexes: []int{1}, Problems: []string{role.ProblemBadCitations}, Dropped: 3}},
		{"repeat dropped", "Adults. [CITE] 2 2 1", 5,
			role.Output{Summary: "Adults.", Indexes: []int{1, 2}, Problems: []string{role.ProblemDuplicateIndex}, Dropped: 1}},
		{"no marker", "Adults with asthma.", 5,
			role.Output{Summary: "Adults with asthma.", Indexes: []int{}, Problems: []string{role.ProblemNoCitations}}},
		{"marker without indices", "Adults. [CITE]", 5,
			role.Output{Summary: "Adults.", Indexes: []int{}}},
		{"negative", "Unknown. [CITE]", 5,
			role.Output{Summary: "Unknown.", Indexes: []int{}}},
		{"negative without marker", "unknown", 5,
			role.Output{Summary: "Unknown.", Indexes: []int{}}},
		{"negative with indices", "Unknown. [CITE] 0 1", 5,
			role.Output{Summary: "Unknown.", Indexes: []int{}, Problems: []string{role.ProblemUnknownWithCitations}, Dropped: 2}},
		{"no summary", " [CITE] 0", 5,
			role.Output{Summary: "Unknown.", Indexes: []int{}, Problems: []string{role.ProblemNoSummary}, Dropped: 1}},
		{"empty output", "", 5,
			role.Output{Summary: "Unknown.", Indexes: []int{}, Problems: []string{role.ProblemNoSummary}}},
		{"last marker counts, any case", "A [CITE] b. [cite] 4", 5,
			role.Output{Summary: "A [CITE] b.", Indexes: []int{4}}},
		{"huge number", "A. [CITE] 99999999999999999999", 5,
			role.Output{Summary: "A.", Indexes: []int{}, Problems: []string{role.ProblemBadCitations}, Dropped: 1}},
		{"empty abstract", "A. [CITE] 0", 0,
			role.Output{Summary: "A.", Indexes: []int{}, Problems: []string{role.ProblemIndexOutOfRange}, Dropped: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Parse(tc.text, tc.n)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q, %d) = %+v, want %+v", tc.text, tc.n, got, tc.want)
			}
		})
	}
}

// TestTargetRoundTrip checks that a training target parses back to its summary and citations.
func TestTargetRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		summary string
		cites   []int32
	}{{"Adults with asthma (n = 12).", []int32{0, 4, 11}}, {"Unknown.", nil}, {"One sentence.", []int32{2}}} {
		text := Target(tc.summary, tc.cites)
		o := Parse(text, 12)
		want := []int{}
		for _, c := range tc.cites {
			want = append(want, int(c))
		}
		if o.Summary != tc.summary || !reflect.DeepEqual(o.Indexes, want) || o.Problems != nil {
			t.Errorf("Target %q parsed as %+v", text, o)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"A. [CITE] 0 3", "Unknown. [CITE]", "[CITE] [CITE] 1,,2", "x [cite] 9 -1 a"} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, text string, n int) {
		if n < 0 || n > 1000 {
			return
		}
		o := Parse(text, n)
		prev := -1
		for _, k := range o.Indexes {
			if k <= prev || k >= n {
				t.Fatalf("Parse(%q, %d): indexes %v not sorted, unique and in range", text, n, o.Indexes)
			}
			prev = k
		}
		if o.Summary == "Unknown." && len(o.Indexes) > 0 {
			t.Fatalf("Parse(%q): a negative with citations", text)
		}
	})
}
