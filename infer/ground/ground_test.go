package ground

import (
	"slices"
	"testing"

	"github.com/tracksum/tracksum/eval/judge"
)

// The lexical test of config eval.lexical's defaults.
var opts = judge.LexicalOptions{Threshold: 0.6, MinClauseWords: 2}

var doc = []string{
	"OBJECTIVE: To assess whether daily aspirin reduces stroke in elderly patients.",
	"METHODS: We randomised 412 patients aged over 70 years to aspirin or placebo.",
	"RESULTS: Stroke occurred in 12 of 206 patients on aspirin and 25 of 206 on placebo.",
	"Gastrointestinal bleeding was more frequent with aspirin.",
}

func TestApply(t *testing.T) {
	tests := []struct {
		desc        string
		mode        Mode
		summary     string
		indexes     []int
		wantSummary string
		wantIndexes []int
		wantChanged int
	}{
		{"every citation backs a claim", ModeRestore,
			"The study randomised 412 patients aged over 70 to aspirin or placebo.", []int{1},
			"The study randomised 412 patients aged over 70 to aspirin or placebo.", []int{1}, 0},
		{"restore appends the dropped sentence without its label", ModeRestore,
			"The study randomised 412 patients aged over 70 to aspirin or placebo", []int{1, 2},
			"The study randomised 412 patients aged over 70 to aspirin or placebo. Stroke occurred in 12 of 206 patients on aspirin and 25 of 206 on placebo.",
			[]int{1, 2}, 1},
		{"prune drops the citation and keeps the summary", ModePrune,
			"The study randomised 412 patients aged over 70 to aspirin or placebo.", []int{1, 3},
			"The study randomised 412 patients aged over 70 to aspirin or placebo.", []int{1}, 1},
		{"prune keeps the last citation", ModePrune,
			"Outcomes were measured.", []int{2},
			"Outcomes were measured.", []int{2}, 0},
		{"off leaves both", ModeOff,
			"Outcomes were measured.", []int{2},
			"Outcomes were measured.", []int{2}, 0},
		{"a negative prediction is left alone", ModeRestore,
			"Unknown.", []int{},
			"Unknown.", []int{}, 0},
		{"numbers must match: a wrong count backs nothing", ModeRestore,
			"Stroke occurred in 13 of 206 patients on aspirin.", []int{2},
			"Stroke occurred in 13 of 206 patients on aspirin. Stroke occurred in 12 of 206 patients on aspirin and 25 of 206 on placebo.",
			[]int{2}, 1},
		// Issue 35 item 22: the claim carries a p-value the sentence lacks, so the judge finds no
		// support, yet the summary holds the sentence's text: restoring it repeated it.
		{"a sentence the summary already holds is not appended", ModeRestore,
			"Gastrointestinal bleeding was more frequent with aspirin (p = 0.003)", []int{3},
			"Gastrointestinal bleeding was more frequent with aspirin (p = 0.003)", []int{3}, 0},
		{"only the sentence the summary lacks is appended", ModeRestore,
			"Gastrointestinal bleeding was MORE frequent with aspirin (p = 0.003).", []int{2, 3},
			"Gastrointestinal bleeding was MORE frequent with aspirin (p = 0.003). Stroke occurred in 12 of 206 patients on aspirin and 25 of 206 on placebo.",
			[]int{2, 3}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			g := New(tc.mode, opts)
			s, idx, n := g.Apply(doc, tc.summary, tc.indexes)
			if s != tc.wantSummary || !slices.Equal(idx, tc.wantIndexes) || n != tc.wantChanged {
				t.Errorf("Apply = %q, %v, %d\nwant %q, %v, %d", s, idx, n, tc.wantSummary, tc.wantIndexes, tc.wantChanged)
			}
		})
	}
}

func TestNilGrounderIsOff(t *testing.T) {
	var g *Grounder
	s, idx, n := g.Apply(doc, "x y z.", []int{0})
	if s != "x y z." || !slices.Equal(idx, []int{0}) || n != 0 {
		t.Errorf("nil Grounder changed the prediction: %q %v %d", s, idx, n)
	}
}
