package prepare

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
)

// TestSummarizerNegatives (issue 36 item 3): the summarizer shards hold positives only; the
// negatives summarizer.train_negatives adds are the end_to_end rows without citations, each
// with no cited sentence and the answer "Unknown.", so that positives + negatives are every
// instance of the split, as in the paper's D_S.
func TestSummarizerNegatives(t *testing.T) {
	out := filepath.Join(t.TempDir(), "prepared")
	run(t, testConfig(), nil, out)
	negatives := 0
	for _, split := range dataset.Splits {
		pos := readAll[dataset.SummarizerRow](t, out, dataset.TaskSummarizer, split)
		all := readAll[dataset.EndToEndRow](t, out, dataset.TaskEndToEnd, split)
		neg, err := dataset.SummarizerNegatives(out, split)
		if err != nil {
			t.Fatal(err)
		}
		negatives += len(neg)
		if len(pos)+len(neg) != len(all) {
			t.Errorf("%s: %d positives + %d negatives, want %d instances", split, len(pos), len(neg), len(all))
		}
		for _, r := range neg {
			if r.Summary != dataset.UnknownSummary || len(r.CitedIDs) != 0 || len(r.CitedSentences) != 0 || len(r.Document) == 0 {
				t.Errorf("%s: negative %s/%s: summary %q, %d cited, %d sentences", split, r.PMID, r.Aspect, r.Summary, len(r.CitedSentences), len(r.Document))
			}
		}
	}
	if negatives == 0 {
		t.Error("no negative instance read: the sample has some")
	}
}

// sharedDev is the annotated TracSum data of ../shared (never copied into the repository).
const sharedDev = "../../../shared/data/tracsum/tracsum-dev.jsonl"

// TestPaperTrainingCounts (issue 36 items 3, 4, 10): configs/paper.yaml on the shared TracSum data
// gives the paper's proportions: the instances split 80:20 (train part : test), the dev split
// (model selection) carved out of the 80% (70% train + 10% dev of all instances); the summarizer
// trains on every instance of its train split, negatives ("Unknown.") included, and the tracker
// on every sentence of those instances. docs/paper.md states the counts.
func TestPaperTrainingCounts(t *testing.T) {
	if _, err := os.Stat(sharedDev); err != nil {
		t.Skipf("the shared TracSum data is absent (%v): nothing to count", err)
	}
	cfg, err := config.Load(viper.New(), "../../configs/paper.yaml", pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tokenizer.VocabSize = 2000 // the counts do not depend on the vocabulary; a small one is faster
	out := filepath.Join(t.TempDir(), "prepared")
	run(t, cfg, []string{sharedDev}, out)
	m, err := dataset.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	total := m.Counts.Instances
	share := func(n int) float64 { return float64(n) / float64(total) }
	inst := map[string]int{}
	for _, split := range dataset.Splits {
		inst[split] = len(readAll[dataset.EndToEndRow](t, out, dataset.TaskEndToEnd, split))
	}
	if got := share(inst[dataset.SplitTrain] + inst[dataset.SplitDev]); math.Abs(got-0.8) > 0.01 {
		t.Errorf("train part (train + dev) %.3f of the instances, want the paper's 0.8", got)
	}
	if got := share(inst[dataset.SplitTest]); math.Abs(got-0.2) > 0.01 {
		t.Errorf("test %.3f of the instances, want the paper's 0.2", got)
	}
	if got := share(inst[dataset.SplitDev]); math.Abs(got-0.1) > 0.01 {
		t.Errorf("dev %.3f of the instances, want 0.1 (1/8 of the train part)", got)
	}
	pos := readAll[dataset.SummarizerRow](t, out, dataset.TaskSummarizer, dataset.SplitTrain)
	neg, err := dataset.SummarizerNegatives(out, dataset.SplitTrain)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Summarizer.TrainNegatives || len(pos)+len(neg) != inst[dataset.SplitTrain] {
		t.Errorf("summarizer: train_negatives %v, %d positives + %d negatives, want every train instance (%d)",
			cfg.Summarizer.TrainNegatives, len(pos), len(neg), inst[dataset.SplitTrain])
	}
	sentences := 0
	for _, r := range readAll[dataset.EndToEndRow](t, out, dataset.TaskEndToEnd, dataset.SplitTrain) {
		sentences += len(r.Document)
	}
	tracker := readAll[dataset.TrackerRow](t, out, dataset.TaskTracker, dataset.SplitTrain)
	if len(tracker) != sentences {
		t.Errorf("tracker: %d train rows, want one per sentence of the train instances (%d)", len(tracker), sentences)
	}
	t.Logf("%d instances: train %d (%.1f%%), dev %d, test %d; summarizer train %d (%d positives + %d negatives); tracker train %d sentences",
		total, inst[dataset.SplitTrain], 100*share(inst[dataset.SplitTrain]), inst[dataset.SplitDev], inst[dataset.SplitTest],
		len(pos)+len(neg), len(pos), len(neg), len(tracker))
}
