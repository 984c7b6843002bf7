package role

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tracksum/tracksum/dataset"
)

// Problems found in an END-TO-END answer (the same names as infer/llmmethods' for the same
// repairs). An answer with a problem is still used as well as it can be read; the prediction lists
// the problem, and EndToEnd.Stats counts it.
const (
	// ProblemNoCitations: no marker in the answer (read as the summary with no citation).
	ProblemNoCitations = "no_citations"
	// ProblemNoSummary: nothing before the Marker.
	ProblemNoSummary = "no_summary"
	// ProblemBadCitations: a word after the Marker that is not an index (dropped).
	ProblemBadCitations = "bad_citations"
	// ProblemIndexOutOfRange: an index that is not a sentence of the abstract (dropped).
	ProblemIndexOutOfRange = "index_out_of_range"
	// ProblemDuplicateIndex: an index written twice (the repeat dropped).
	ProblemDuplicateIndex = "duplicate_index"
	// ProblemUnknownWithCitations: "Unknown." with indices (read as negative, indices dropped).
	ProblemUnknownWithCitations = "unknown_with_citations"
)

// Output is an END-TO-END answer read back: the prediction's summary and indices, what had to be
// repaired, and how many written indices were dropped.
type Output struct {
	Summary string
	// Indexes are sorted, without repeats, all in [0, n); never nil.
	Indexes []int
	// Problems lists each problem found once, in the order of the constants above.
	Problems []string
	// Dropped counts the words after the Marker that did not become an index.
	Dropped int
}

// ParseMarked reads an END-TO-END answer for an abstract of n sentences, whose marker (any case)
// separates the summary from its indices: model/ete's "summary [CITE] 0 3" (ete.Parse), the
// paper's "Summary: ...\nCitations: 0, 3" on a pretrained LM (pretrained.ParseEndToEnd).
// Everything before the last marker is the summary, everything after it the indices, separated by
// spaces or commas (brackets ignored). Words that are not indices, indices outside [0, n) and
// repeats are dropped and counted. A summary that says the aspect is absent
// (dataset.IsUnknownSummary), or no summary at all, is the negative prediction, "Unknown." with no
// index, whatever indices follow it.
func ParseMarked(text string, n int, marker string) Output {
	found := map[string]bool{}
	o := Output{Indexes: []int{}}
	summary, cites, ok := cutLast(text, marker)
	if !ok {
		summary, cites = text, ""
	}
	o.Summary = strings.Join(strings.Fields(summary), " ")
	for _, w := range strings.FieldsFunc(cites, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' || r == ';' }) {
		w = strings.Trim(w, "[]().")
		if w == "" {
			continue
		}
		k, err := strconv.Atoi(w)
		switch {
		case err != nil || k < 0:
			found[ProblemBadCitations] = true
		case k >= n:
			found[ProblemIndexOutOfRange] = true
		case slices.Contains(o.Indexes, k):
			found[ProblemDuplicateIndex] = true
		default:
			o.Indexes = append(o.Indexes, k)
			continue
		}
		o.Dropped++
	}
	slices.Sort(o.Indexes)
	switch {
	case dataset.IsUnknownSummary(o.Summary):
		// An empty summary is the negative prediction too, as the LLM methods' parser makes it: a
		// record with citations but no text to check them against would break the rule that
		// nothing kept means "Unknown.".
		switch {
		case o.Summary == "":
			found[ProblemNoSummary] = true
		case len(o.Indexes) > 0:
			found[ProblemUnknownWithCitations] = true
		}
		o.Dropped += len(o.Indexes)
		o.Summary, o.Indexes = dataset.UnknownSummary, []int{}
	case !ok:
		found[ProblemNoCitations] = true
	}
	for _, p := range []string{ProblemNoCitations, ProblemNoSummary, ProblemBadCitations, ProblemIndexOutOfRange,
		ProblemDuplicateIndex, ProblemUnknownWithCitations} {
		if found[p] {
			o.Problems = append(o.Problems, p)
		}
	}
	return o
}

// cutLast splits s around the last occurrence of sep (any case). It compares s's own bytes:
// upper-casing s first would change the length of some text (invalid UTF-8, "ı") and misplace the
// cut (found by model/ete's FuzzParse).
func cutLast(s, sep string) (before, after string, ok bool) {
	for i := len(s) - len(sep); i >= 0; i-- {
		if strings.EqualFold(s[i:i+len(sep)], sep) {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

// Stats counts what ParseMarked repaired over a run.
type Stats struct {
	// Outputs is the number of outputs parsed, Repaired those with at least one problem.
	Outputs, Repaired int
	// DroppedIndices counts the index words dropped (Output.Dropped).
	DroppedIndices int
	// Problems counts the outputs with each problem.
	Problems map[string]int
}

// Add counts one parsed output.
func (s *Stats) Add(o Output) {
	if s.Problems == nil {
		s.Problems = map[string]int{}
	}
	s.Outputs++
	s.DroppedIndices += o.Dropped
	if len(o.Problems) > 0 {
		s.Repaired++
	}
	for _, p := range o.Problems {
		s.Problems[p]++
	}
}

// Clone returns a copy that does not share Problems (never nil) with s.
func (s Stats) Clone() Stats {
	c := s
	c.Problems = make(map[string]int, len(s.Problems))
	for k, v := range s.Problems {
		c.Problems[k] = v
	}
	return c
}

// String is the one-line summary infer prints.
func (s Stats) String() string {
	keys := make([]string, 0, len(s.Problems))
	for k := range s.Problems {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, s.Problems[k])
	}
	detail := ""
	if len(parts) > 0 {
		detail = " (" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprintf("%d outputs, %d repaired%s, %d index words dropped", s.Outputs, s.Repaired, detail, s.DroppedIndices)
}

// Repairs turns a run's answers into predictions with the parser's repairs, counting them (Stats).
// It is safe for concurrent use; the zero value is ready.
type Repairs struct {
	mu    sync.Mutex
	stats Stats
}

// Predictions returns one prediction per aspect of abstract pmid from outputs[i] (aspect
// aspects[i]) read by parse, and counts what parse repaired.
func (r *Repairs) Predictions(pmid string, aspects, outputs []string, parse func(string) Output) []dataset.Prediction {
	preds := make([]dataset.Prediction, len(outputs))
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, text := range outputs {
		o := parse(text)
		preds[i] = dataset.Prediction{PMID: pmid, Aspect: aspects[i], Summary: o.Summary, Indexes: o.Indexes, Problems: o.Problems}
		r.stats.Add(o)
	}
	return preds
}

// Stats returns what has been repaired so far.
func (r *Repairs) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats.Clone()
}
