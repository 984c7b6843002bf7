package pretrained

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/variant"
)

var updatePaperPrompts = flag.Bool("update-paper-prompts", false, "rewrite testdata/paper-prompts.golden")

// TestPaperPrompts (issue 36 item 6) renders summarizer.prompt_style paper's prompts for synthetic
// inputs and compares them with testdata/paper-prompts.golden, checked by eye against the
// paper's Tables 16-19 (headings alone on their line, '[...]' lists, the aspect's description in
// aims' place, END-TO-END's "Citations:" field and "Null." negative). Regenerate with
// go test ./model/pretrained -run TestPaperPrompts -update-paper-prompts.
func TestPaperPrompts(t *testing.T) {
	sents := []string{"First sentence.", `A "quoted" <b> one.`}
	doc := append([]string{"Background sentence."}, sents...)
	var b strings.Builder
	for _, tc := range []struct {
		title, aspect, v string
		sentences, doc   []string
	}{
		{"Table 16: Track-then-Sum, aims", "a", "", sents, nil},
		{"Table 16: Track-then-Sum, side effects", "s", "", sents, nil},
		{"Table 17: Track-then-Sum (+) f, aims", "a", "", sents, doc},
		{"Table 18: SUM-THEN-TRACK, aims", "a", variant.SumThenTrack, doc, nil},
		{"Table 19: END-TO-END, outcomes", "o", variant.EndToEnd, doc, nil},
	} {
		msgs := PaperMessages(dataset.AspectSetTracSum, tc.aspect, tc.v, tc.sentences, tc.doc)
		b.WriteString("=== " + tc.title + "\n")
		for _, m := range msgs {
			b.WriteString("--- " + m.Role + "\n" + m.Content + "\n")
		}
	}
	b.WriteString("=== END-TO-END answers (Table 15's fields)\n")
	b.WriteString(PaperEndToEndAnswer("The study measured X.", []int32{0, 2}) + "\n")
	b.WriteString(PaperEndToEndAnswer(dataset.UnknownSummary, nil) + "\n")
	path := filepath.Join("testdata", "paper-prompts.golden")
	if *updatePaperPrompts {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("paper prompts differ from %s:\n%s", path, b.String())
	}
}

// TestPaperEndToEndParse: the paper-style END-TO-END answers read back with their citations, and a
// negative's "Null." as none.
func TestPaperEndToEndParse(t *testing.T) {
	for _, tc := range []struct {
		desc, answer string
		want         []int
	}{
		{"cited", PaperEndToEndAnswer("The study measured X.", []int32{0, 2}), []int{0, 2}},
		{"negative", PaperEndToEndAnswer(dataset.UnknownSummary, nil), nil},
	} {
		out := ParseEndToEnd(tc.answer, 3, nil)
		if len(out.Indexes) != len(tc.want) || out.Dropped != 0 || out.Summary == "" {
			t.Errorf("%s: %q read as %+v, want citations %v", tc.desc, tc.answer, out, tc.want)
			continue
		}
		for i, c := range tc.want {
			if out.Indexes[i] != c {
				t.Errorf("%s: %q read as %+v, want citations %v", tc.desc, tc.answer, out, tc.want)
			}
		}
	}
}

// TestPaperPrompter: a prompter of a summarizer.prompt_style paper checkpoint renders
// PaperMessages and the paper's END-TO-END answer; without it, the tracksum layout.
func TestPaperPrompter(t *testing.T) {
	sents := []string{"One.", "Two."}
	for _, v := range []string{"", variant.SumThenTrack, variant.EndToEnd} {
		p := &summaryPrompter{set: dataset.AspectSetTracSum, variant: v, paper: true}
		got, want := p.messages("a", sents, nil), PaperMessages(dataset.AspectSetTracSum, "a", v, sents, nil)
		if len(got) != 2 || got[1].Content != want[1].Content {
			t.Errorf("variant %q: paper prompter rendered %+v", v, got)
		}
		p.paper = false
		if got := p.messages("a", sents, nil); got[1].Content == want[1].Content {
			t.Errorf("variant %q: tracksum prompter rendered the paper's layout", v)
		}
	}
	p := &summaryPrompter{variant: variant.EndToEnd, paper: true}
	if got := p.answer(dataset.UnknownSummary, nil); got != "Summary: Unknown.\n\nCitations: Null." {
		t.Errorf("paper END-TO-END negative answer %q", got)
	}
}
