package facet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	goldenfile "github.com/tracksum/tracksum/internal/golden"
	"github.com/tracksum/tracksum/llm"
)

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), []byte(got))
}

func TestPromptsGolden(t *testing.T) {
	golden(t, "extract.golden", ExtractPrompt("  Drug X was given to 40 adults. Pain fell by 30%.  "))
	golden(t, "grade_background.golden", GradePrompt(Background, "Pain is common.", "Chronic pain is frequent."))
	golden(t, "grade_result.golden", GradePrompt(Result, "Pain fell by 30%.", "Pain decreased."))
}

func TestParseSegments(t *testing.T) {
	tests := []struct {
		desc   string
		answer string
		want   Segments
		ok     bool
	}{
		{desc: "plain JSON", answer: `{"background":"B.","method":"M.","result":"R.","conclusion":""}`,
			want: Segments{"B.", "M.", "R.", ""}, ok: true},
		{desc: "code block, capitalised plural keys, list and null values",
			answer: "Here you go:\n```json\n{\"Background\": null, \"Methods\": [\"M1.\", \"M2.\"], \"Results\": \"R.\"}\n```",
			want:   Segments{"", "M1. M2.", "R.", ""}, ok: true},
		{desc: "labelled lines", answer: "**Background:** B.\nMethod: M.\n- Result: none\nConclusion: C.",
			want: Segments{"B.", "M.", "", "C."}, ok: true},
		{desc: "JSON without facet keys falls back to lines, none found", answer: `{"summary": "x"}`, ok: false},
		{desc: "a number where a string is expected", answer: `{"background": 3}`, ok: false},
		{desc: "truncated JSON and no labels", answer: `{"background": "B.", "meth`, ok: false},
		{desc: "prose", answer: "Patients received drug X for 8 weeks.", ok: false},
		{desc: "empty", answer: "", ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, ok := ParseSegments(tc.answer)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Errorf("ParseSegments(%q) = %q, %v; want %q, %v", tc.answer, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseGrade(t *testing.T) {
	tests := []struct {
		answer string
		scale  int
		want   int
		ok     bool
	}{
		{"3", 3, 3, true}, {"Grade: 4", 4, 4, true}, {"**2**\n", 4, 2, true}, {"1.", 3, 1, true},
		{"4", 3, 0, false}, {"0", 4, 0, false}, {"three", 3, 0, false}, {"", 3, 0, false},
		{"2.5", 4, 0, false}, {"12", 4, 0, false}, {"The grade is 3 because 4 is too high", 4, 3, true},
	}
	for _, tc := range tests {
		got, ok := ParseGrade(tc.answer, tc.scale)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseGrade(%q, %d) = %d, %v; want %d, %v", tc.answer, tc.scale, got, ok, tc.want, tc.ok)
		}
	}
}

// script answers by the first rule whose key the prompt contains, and records the prompts.
type script struct {
	mu      sync.Mutex
	rules   [][2]string
	prompts []string
	err     error
}

func (s *script) Chat(_ context.Context, req llm.Request, _ func(string) bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := req.Messages[len(req.Messages)-1].Content
	s.prompts = append(s.prompts, p)
	if s.err != nil {
		return "", s.err
	}
	for _, r := range s.rules {
		if strings.Contains(p, r[0]) {
			return r[1], nil
		}
	}
	return "no rule", nil
}

const (
	refText  = "REF-TEXT"
	candText = "CAND-TEXT"
)

func extractRule(text, answer string) [2]string { return [2]string{"Input:\n" + text, answer} }

// gradeRule answers the grading prompt of facet f: the paper's prompt does not name the facet,
// so the rule matches the reference segment the tests give each facet ("rb", "rm", "rr", "rc").
func gradeRule(f Facet, answer string) [2]string {
	return [2]string{fmt.Sprintf("Input1: r%c\n", f.String()[0]), answer}
}

func TestScore(t *testing.T) {
	full := `{"background":"rb","method":"rm","result":"rr","conclusion":"rc"}`
	tests := []struct {
		desc      string
		ref, cand string
		rules     [][2]string
		weights   *[NumFacets]float64
		overall   float64
		defined   bool
		scores    [NumFacets]int
		malformed []string
		requests  int
	}{
		{desc: "all facets graded; a facet missing in the candidate scores 1 without a request",
			ref: refText, cand: candText,
			rules: [][2]string{extractRule(refText, full), extractRule(candText, `{"background":"cb","method":"cm","result":"cr","conclusion":""}`),
				gradeRule(Background, "3"), gradeRule(Method, "4"), gradeRule(Result, "Grade: 3")},
			// (0.1*(3-1)/2 + 0.3*(4-1)/3 + 0.3*(3-1)/3 + 0.3*(1-1)/2) / 1
			overall: 0.1 + 0.3 + 0.2 + 0, defined: true, scores: [NumFacets]int{3, 4, 3, 1}, requests: 5},
		{desc: "a facet absent from the reference is omitted and the weights renormalised",
			ref: refText, cand: candText,
			rules: [][2]string{extractRule(refText, `{"background":"","method":"rm","result":"rr","conclusion":"rc"}`),
				extractRule(candText, full), gradeRule(Method, "2"), gradeRule(Result, "4"), gradeRule(Conclusion, "3")},
			overall: (0.3*1/3 + 0.3*3/3 + 0.3*2/2) / 0.9, defined: true, scores: [NumFacets]int{0, 2, 4, 3}, requests: 5},
		{desc: "custom weights", ref: refText, cand: candText, weights: &[NumFacets]float64{1, 0, 0, 0},
			rules:   [][2]string{extractRule(refText, full), extractRule(candText, full), gradeRule(Background, "2"), gradeRule(Method, "4"), gradeRule(Result, "4"), gradeRule(Conclusion, "3")},
			overall: 1.0 / 2, defined: true, scores: [NumFacets]int{2, 4, 4, 3}, requests: 6},
		{desc: "negative candidate: every reference facet gets the lowest grade, FM 0, one request",
			ref: refText, cand: "Unknown.", rules: [][2]string{extractRule(refText, full)},
			overall: 0, defined: true, scores: [NumFacets]int{1, 1, 1, 1}, requests: 1},
		{desc: "negative candidate, reference with one facet: still 0",
			ref: refText, cand: "Unknown.", rules: [][2]string{extractRule(refText, `{"background":"rb","method":"","result":"","conclusion":""}`)},
			overall: 0, defined: true, scores: [NumFacets]int{1, 0, 0, 0}, requests: 1},
		{desc: "false positive: negative reference, positive candidate scores 0, no request",
			ref: "Unknown.", cand: candText, overall: 0, defined: true, requests: 0},
		{desc: "both negative: 1, no request", ref: "Unknown.", cand: "unknown", overall: 1, defined: true, requests: 0},
		{desc: "malformed reference extraction: undefined, counted",
			ref: refText, cand: candText, rules: [][2]string{extractRule(refText, "I think the study is about pain.")},
			malformed: []string{"extract reference"}, requests: 1},
		{desc: "a malformed grade leaves its facet out",
			ref: refText, cand: candText,
			rules: [][2]string{extractRule(refText, full), extractRule(candText, full),
				gradeRule(Background, "very good"), gradeRule(Method, "4"), gradeRule(Result, "4"), gradeRule(Conclusion, "3")},
			overall: (0.3 + 0.3 + 0.3*2/2) / 0.9, defined: true, scores: [NumFacets]int{0, 4, 4, 3},
			malformed: []string{"grade background"}, requests: 6},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			sc := &script{rules: tc.rules}
			o := DefaultOptions()
			if tc.weights != nil {
				o.Weights = *tc.weights
			}
			got, err := New(sc, o).Score(context.Background(), tc.ref, tc.cand)
			if err != nil {
				t.Fatal(err)
			}
			if got.Defined != tc.defined || math.Abs(got.Overall-tc.overall) > 1e-12 {
				t.Errorf("overall = %v (defined %v), want %v (%v)", got.Overall, got.Defined, tc.overall, tc.defined)
			}
			if tc.defined && tc.scores != [NumFacets]int{} {
				for f := range NumFacets {
					if got.Facets[f].Score != tc.scores[f] {
						t.Errorf("%s score = %d, want %d", f, got.Facets[f].Score, tc.scores[f])
					}
				}
			}
			if strings.Join(got.Malformed, ",") != strings.Join(tc.malformed, ",") {
				t.Errorf("malformed = %v, want %v", got.Malformed, tc.malformed)
			}
			for _, step := range got.Malformed {
				if strings.HasPrefix(step, "extract") && got.Unparsed[step] == "" {
					t.Errorf("malformed %s: answer not kept", step)
				}
			}
			if len(sc.prompts) != tc.requests {
				t.Errorf("%d requests, want %d", len(sc.prompts), tc.requests)
			}
		})
	}
}

func TestEndpointErrorIsFatal(t *testing.T) {
	sc := &script{err: fmt.Errorf("llm: http://x: %w", llm.ErrUnreachable)}
	_, err := New(sc, DefaultOptions()).Score(context.Background(), refText, candText)
	if !errors.Is(err, llm.ErrUnreachable) {
		t.Errorf("error = %v, want one wrapping ErrUnreachable", err)
	}
}
