package serve

import (
	"slices"
	"testing"

	"github.com/tracksum/tracksum/dataset"
)

func TestParseTask(t *testing.T) {
	tests := []struct {
		desc   string
		text   string
		labels []int
		sents  []string
		lists  [][]string
		aspect string
	}{
		{desc: "bracket markers and an Aspect line",
			text:   "Aspect: Outcomes\nDocument:\n[0] We studied X.\n[1] Pain fell by 30%.\n",
			labels: []int{0, 1}, sents: []string{"We studied X.", "Pain fell by 30%."}, aspect: "o"},
		{desc: "colon markers numbered from 1, aspect by code",
			text:   "aspect: d\n1: Patients were treated for 8 weeks.\n2: Pain fell.",
			labels: []int{1, 2}, sents: []string{"Patients were treated for 8 weeks.", "Pain fell."}, aspect: "d"},
		{desc: "TracSum's JSON list layout, aspect named in the instructions",
			text:   "Please summarize the research questions or aims of this study.\nDocument\n'[\"0: First sentence.\", \"1: Second sentence.\" \"2: Third one.\"]'\nSummary:",
			labels: []int{0, 1, 2}, sents: []string{"First sentence.", "Second sentence.", "Third one."}, aspect: "a"},
		{desc: "few-shot: the last run is the question, the last Aspect line wins",
			text:   "Aspect: Aims\n[0] Demo one.\n[1] Demo two.\nSummary: demo\nCitations: [1]\n\nAspect: Side Effects\n[0] Real one.\n[1] Real two.\n[2] Real three.\n",
			labels: []int{0, 1, 2}, sents: []string{"Real one.", "Real two.", "Real three."}, aspect: "s"},
		{desc: "numbered list with dots and parentheses markers",
			text:   "Which medicines were used?\n1. Drug A 20 mg.\n2) Drug B.\n",
			labels: []int{1, 2}, sents: []string{"Drug A 20 mg.", "Drug B."}, aspect: "m"},
		{desc: "a break in the numbering starts a new run",
			text:   "[0] a b.\n[1] c d.\n[5] e f.\n[6] g h.\n",
			labels: []int{5, 6}, sents: []string{"e f.", "g h."}, aspect: ""},
		{desc: "plain text: no sentences, aspect words inside the text count",
			text:   "Summarize this: the trial lasted 12 weeks. Participants were 40 adults.",
			aspect: "p"},
		{desc: "an unknown Aspect line falls back to names in the text",
			text:   "Aspect: colour\nWhat was the intervention?",
			aspect: "i"},
		{desc: "sentence lists without numbers: lists, aspect from the instructions",
			text:  "Summarize the Outcomes of the study.\nSentences:\n[\"Pain fell.\", \"Sleep improved.\"]\n\nFull abstract:\n[\"We studied X.\",\"Pain fell.\",\"Sleep improved.\"]\n",
			lists: [][]string{{"Pain fell.", "Sleep improved."}, {"We studied X.", "Pain fell.", "Sleep improved."}}, aspect: "o"},
		{desc: "empty", text: ""},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got := ParseTask(tc.text, dataset.AspectSetTracSum)
			if len(got.Lists) != len(tc.lists) {
				t.Errorf("Lists = %q, want %q", got.Lists, tc.lists)
			}
			for i := range min(len(got.Lists), len(tc.lists)) {
				if !slices.Equal(got.Lists[i], tc.lists[i]) {
					t.Errorf("Lists[%d] = %q, want %q", i, got.Lists[i], tc.lists[i])
				}
			}
			if !slices.Equal(got.Labels, tc.labels) || !slices.Equal(got.Sentences, tc.sents) || got.Aspect != tc.aspect {
				t.Errorf("ParseTask = labels %v sentences %q aspect %q, want %v %q %q", got.Labels, got.Sentences, got.Aspect, tc.labels, tc.sents, tc.aspect)
			}
			if got.Numbered() != (len(tc.sents) > 0) {
				t.Errorf("Numbered() = %v", got.Numbered())
			}
		})
	}
}

func TestSplitWordsRoundTrip(t *testing.T) {
	for _, s := range []string{"", "a", "Summary: x y\nCitations: [1, 2]", "  lead and trail  "} {
		var joined string
		for _, p := range splitWords(s) {
			joined += p
		}
		if joined != s {
			t.Errorf("splitWords(%q) joins to %q", s, joined)
		}
	}
}

func TestApplyStop(t *testing.T) {
	tests := []struct {
		in   string
		stop []string
		want string
		cut  bool
	}{
		{"Summary: a\nCitations: [1]", []string{"\nCitations"}, "Summary: a", true},
		{"abc", []string{"x", ""}, "abc", false},
		{"a.b.c", []string{"c", "."}, "a", true},
	}
	for _, tc := range tests {
		got, cut := applyStop(tc.in, tc.stop)
		if got != tc.want || cut != tc.cut {
			t.Errorf("applyStop(%q, %q) = %q, %v; want %q, %v", tc.in, tc.stop, got, cut, tc.want, tc.cut)
		}
	}
}
