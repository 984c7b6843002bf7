package config

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPrintConfigGroups: --print-config groups the keys by section, the sections given first (the
// task's, then the command's), the rest in config order; =changed prints only non-defaults. It
// printed every key in alphabetical order, starting with eval.agreement.*.
func TestPrintConfigGroups(t *testing.T) {
	c := Default()
	c.Summarizer.Train.LearningRate = 1e-4
	c.Seed = 7
	src := map[string]Source{}
	for _, k := range Keys() {
		src[k] = Source{Layer: "default"}
	}
	for _, tc := range []struct {
		desc    string
		opts    PrintOptions
		heads   []string
		lines   int // key lines; 0: every key
		absent  []string
		present []string
	}{
		{desc: "task summarizer, command train", opts: PrintOptions{First: []string{"summarizer", "train", ""}},
			heads:   []string{"summarizer", "train", "top level", "prepare", "tokenizer", "tracker", "variants", "infer", "eval", "serve", "export"},
			present: []string{"summarizer.train.learning_rate=0.0001", "tracker.train.learning_rate="}},
		{desc: "no task, command eval", opts: PrintOptions{First: []string{"eval"}},
			heads: []string{"eval", "top level", "prepare", "tokenizer", "tracker", "summarizer", "variants", "infer", "serve", "export", "train"}},
		{desc: "changed only", opts: PrintOptions{First: []string{"tracker"}, Changed: true},
			heads: []string{"top level", "summarizer"}, lines: 2,
			present: []string{"seed=7", "summarizer.train.learning_rate=0.0001"}, absent: []string{"tracker."}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteResolvedIn(&b, &c, src, tc.opts); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			var heads []string
			for _, m := range regexp.MustCompile(`(?m)^# (.+)$`).FindAllStringSubmatch(out, -1) {
				heads = append(heads, m[1])
			}
			if !slices.Equal(heads, tc.heads) {
				t.Errorf("sections %q, want %q", heads, tc.heads)
			}
			want := tc.lines
			if want == 0 {
				want = len(Keys())
			}
			if n := strings.Count(out, "# default") + strings.Count(out, "# set"); n != want {
				t.Errorf("%d key lines, want %d:\n%s", n, want, out)
			}
			for _, s := range tc.present {
				if !strings.Contains(out, s) {
					t.Errorf("lacks %q", s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(out, s) {
					t.Errorf("has %q:\n%s", s, out)
				}
			}
		})
	}
}
