package cli_test

import (
	"strings"
	"testing"

	"github.com/tracksum/tracksum/train"
)

// TestPrintConfigPretrainedDefaults: tracksum-train --pretrained without a profile shows the
// paper's recipe for the pretrained model, each key with its source, and a flag still wins (issue
// 36 item 8: a first 8B LoRA run inherited the from-scratch summarizer's 1e-3 and 40 epochs).
func TestPrintConfigPretrainedDefaults(t *testing.T) {
	snap := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--task", "summarizer", "--pretrained", snap}, []string{
			"summarizer.train.learning_rate=1e-05  # pretrained default (paper C.2/C.3)",
			"summarizer.train.epochs=5  # pretrained default (paper C.2/C.3)",
			"summarizer.beam_size=1  # pretrained default (transformers: greedy)",
			"summarizer.chat_template=snapshot  # default",
		}},
		{[]string{"--task", "summarizer", "--pretrained", snap, "--learning-rate", "2e-4"}, []string{
			"summarizer.train.learning_rate=0.0002  # flag --learning-rate",
		}},
		{[]string{"--task", "summarizer"}, []string{
			"summarizer.train.learning_rate=0.001  # default",
		}},
	} {
		out, err := printConfig(t, train.Command(), tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(out, "\n") {
			lines[strings.Join(strings.Fields(l), " ")] = true
		}
		for _, w := range tc.want {
			if !lines[strings.Join(strings.Fields(w), " ")] {
				t.Errorf("%v: --print-config lacks %q", tc.args, w)
			}
		}
	}
}
