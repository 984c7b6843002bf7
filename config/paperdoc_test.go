package config

import (
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// TestPaperDoc (issue 36 item 10) keeps docs/paper.md true: every key of its table's key column is
// a config key, and configs/paper.yaml holds the values the table states.
func TestPaperDoc(t *testing.T) {
	b, err := os.ReadFile("../docs/paper.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := Keys()
	tick := regexp.MustCompile("`([^`]+)`")
	rows := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) != 6 || strings.HasPrefix(line, "| point") {
			continue
		}
		rows++
		for _, m := range tick.FindAllStringSubmatch(cells[4], -1) {
			if !slices.Contains(keys, m[1]) {
				t.Errorf("docs/paper.md row %q: %q is no config key", cells[0], m[1])
			}
		}
	}
	if rows < 20 {
		t.Errorf("docs/paper.md: %d table rows read, want the whole recipe", rows)
	}

	cfg, err := Load(viper.New(), "../configs/paper.yaml", pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, sm, v := cfg.Tracker, cfg.Summarizer, cfg.Variants
	for _, c := range []struct {
		desc      string
		got, want any
	}{
		{"seed", cfg.Seed, int64(3407)},
		{"tracker batch", tr.Train.BatchSize, 32},
		{"tracker accumulation", tr.Train.GradAccumulation, 2},
		{"summarizer batch", sm.Train.BatchSize, 16},
		{"summarizer accumulation", sm.Train.GradAccumulation, 2},
		{"(+) f batch", v.SummarizerBatchSize(BatchTrackThenSum, true, sm.Train.BatchSize), 8},
		{"STT batch", v.SummarizerBatchSize(BatchSumThenTrack, false, sm.Train.BatchSize), 8},
		{"ETE batch", v.SummarizerBatchSize(BatchEndToEnd, false, sm.Train.BatchSize), 8},
		{"tracker optimizer", tr.Train.Optimizer, OptimizerAdamW},
		{"summarizer optimizer", sm.Train.Optimizer, OptimizerAdamW},
		{"tracker init seed", tr.LoRA.InitSeed, int64(32)},
		{"summarizer init seed", sm.LoRA.InitSeed, int64(32)},
		{"tracker select_by", tr.Train.SelectBy, SelectByEvalLoss},
		{"summarizer select_by", sm.Train.SelectBy, SelectByEvalLoss},
		{"tracker keep", tr.Train.KeepCheckpoints, 5},
		{"summarizer keep", sm.Train.KeepCheckpoints, 5},
		{"tracker patience", tr.Train.Patience, 0},
		{"summarizer patience", sm.Train.Patience, 0},
		{"train negatives", sm.TrainNegatives, true},
		{"prompt style", sm.PromptStyle, PromptStylePaper},
		{"two-shot prompt style", cfg.Infer.LLM.PromptStyle, PromptStylePaper},
		{"train + dev share", math.Round(100*(cfg.Prepare.TrainRatio+cfg.Prepare.DevRatio)) / 100, 0.8},
		{"test share", cfg.Prepare.TestRatio, 0.2},
		{"tracker epochs", tr.Train.Epochs, 5},
		{"summarizer epochs", sm.Train.Epochs, 5},
		{"eval every", sm.Train.EvalEvery, 32},
		{"tracker head", tr.Head, HeadLMCLS},
		{"grounding", cfg.Infer.Grounding, "off"},
	} {
		if c.got != c.want {
			t.Errorf("configs/paper.yaml %s: %v, docs/paper.md says %v", c.desc, c.got, c.want)
		}
	}
}
