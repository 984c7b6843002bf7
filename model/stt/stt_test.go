package stt

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/checkpoint/checkpointtest"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/variant"
)

// tinyConfig is configs/tiny.yaml with a few training steps: the test checks the plumbing, not
// the quality.
func tinyConfig(t testing.TB) *config.Config {
	t.Helper()
	cfg, err := config.Load(viper.New(), "../../configs/tiny.yaml", pflag.NewFlagSet("t", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prepare.SampleSize = 40
	cfg.Summarizer.Train.MaxSteps = 4
	cfg.Summarizer.Train.EvalEvery = 2
	cfg.Summarizer.DevDecodeLimit = 4
	cfg.Tracker.Train.MaxSteps = 4
	return cfg
}

func TestMain(m *testing.M) { os.Exit(preparetest.Main(m)) }

func testLog() io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return io.Discard
}

// TestTrainPredict trains SUM-THEN-TRACK for a few steps on the synthetic sample, checks the
// checkpoint's layout and its predictions, and that its parts cannot be mixed up.
func TestTrainPredict(t *testing.T) {
	cfg := tinyConfig(t)
	data := preparetest.Dir(t, cfg)
	out := filepath.Join(t.TempDir(), "stt")
	m, rep, err := Train(context.Background(), cfg, data, out, TrainOptions{Log: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summarizer.Steps != 4 || rep.Tracker.Steps != 4 {
		t.Errorf("trained %d summarizer and %d tracker steps, want 4 and 4", rep.Summarizer.Steps, rep.Tracker.Steps)
	}
	for _, f := range []string{checkpoint.VariantFile, checkpoint.ReportFile,
		filepath.Join(checkpoint.VariantSummarizerDir, checkpoint.SummarizerFile), filepath.Join(checkpoint.VariantSummarizerDir, checkpoint.VariantFile),
		filepath.Join(checkpoint.VariantTrackerDir, checkpoint.HyperparamsFile), filepath.Join(checkpoint.VariantTrackerDir, checkpoint.VariantFile)} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("checkpoint lacks %s: %v", f, err)
		}
	}
	if h := m.Summarizer.Meta.Hyperparams; h.MaxSourceLen != cfg.Variants.MaxSourceLen || m.Summarizer.Meta.MinLenRatio != 0 {
		t.Errorf("summarizer %+v (min_len_ratio %g): want the variants section's source length and no minimum", h, m.Summarizer.Meta.MinLenRatio)
	}
	if hp := m.Tracker.Hyperparams(); hp.MaxLen != cfg.Variants.PairMaxLen {
		t.Errorf("tracker max_len %d, want variants.pair_max_len %d", hp.MaxLen, cfg.Variants.PairMaxLen)
	}
	instances, _, err := dataset.ReadInput(data, dataset.SplitTest)
	if err != nil {
		t.Fatal(err)
	}
	in := instances[0]
	// With threshold 0 every sentence of a positive summary is cited: the tracker ran on all.
	m.Threshold = 0
	preds, err := m.Predict(in.PMID, in.Document, []string{in.Aspect, "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range preds {
		switch {
		case p.PMID != in.PMID || p.Indexes == nil:
			t.Errorf("prediction %+v", p)
		case dataset.IsUnknownSummary(p.Summary):
			if len(p.Indexes) > 0 || p.Summary != dataset.UnknownSummary {
				t.Errorf("negative prediction %+v", p)
			}
		case len(p.Scores) != len(in.Document) || len(p.Indexes) != len(in.Document):
			t.Errorf("positive prediction at threshold 0: %d scores, %d indexes for %d sentences", len(p.Scores), len(p.Indexes), len(in.Document))
		}
	}
	// Parts of another variant, or swapped parts, are refused.
	sdir, tdir := filepath.Join(out, checkpoint.VariantSummarizerDir), filepath.Join(out, checkpoint.VariantTrackerDir)
	if _, err := LoadParts(tdir, sdir); !errors.Is(err, checkpoint.ErrCheckpoint) {
		t.Errorf("swapped parts: %v, want ErrCheckpoint", err)
	}
	if _, err := LoadParts(sdir, tdir); err != nil {
		t.Errorf("LoadParts: %v", err)
	}
	testLoadsWhatOpenVerified(t, out)
	if err := variant.Write(out, variant.Meta{Variant: variant.EndToEnd}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(out); !errors.Is(err, checkpoint.ErrCheckpoint) {
		t.Errorf("Load of an end_to_end marker: %v, want ErrCheckpoint", err)
	}
	if _, _, err := Train(context.Background(), cfg, data, out, TrainOptions{Log: testLog()}); !errors.Is(err, variant.ErrCheckpoint) {
		t.Errorf("Train into an end_to_end checkpoint: %v, want ErrCheckpoint", err)
	}
}

// TestPairExample checks the tracker input: the sentence first, at least half of the budget when
// both parts are long, [SEP], the summary.
func TestPairExample(t *testing.T) {
	seq := func(from, n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(from + i)
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		sent, summary []int32
		max           int
		want          []int32
	}{
		{"both fit", seq(10, 3), seq(50, 2), 16, append(append(seq(10, 3), 4), seq(50, 2)...)},
		{"long summary cut", seq(10, 3), seq(50, 20), 8, append(append(seq(10, 3), 4), seq(50, 4)...)},
		{"long sentence keeps half", seq(10, 20), seq(50, 20), 8, append(append(seq(10, 4), 4), seq(50, 3)...)},
		{"long sentence, short summary", seq(10, 20), seq(50, 2), 8, append(append(seq(10, 5), 4), seq(50, 2)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := tracker.PairExample(tc.sent, tc.summary, 4, tc.max, 2, 1, 5)
			if !slices.Equal(ex.IDs, tc.want) || ex.Aspect != 2 || ex.Weight != 1 {
				t.Errorf("PairExample = %v (aspect %d), want %v", ex.IDs, ex.Aspect, tc.want)
			}
		})
	}
}

// TestReadTrackerDataAssign checks that pairs follow the assignment and carry the abstract's
// length in their position features.
func TestReadTrackerDataAssign(t *testing.T) {
	cfg := tinyConfig(t)
	data := preparetest.Dir(t, cfg)
	split, err := ReadTrackerData(data, 47, nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := ReadTrackerData(data, 47, func(string) string { return dataset.SplitDev })
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Train.Examples) != 0 || len(all.Dev.Examples) <= len(split.Train.Examples)+len(split.Dev.Examples) {
		t.Errorf("assign-all-dev: %d train, %d dev; prepared splits %d train, %d dev", len(all.Train.Examples), len(all.Dev.Examples),
			len(split.Train.Examples), len(split.Dev.Examples))
	}
	pos := 0
	for _, e := range split.Train.Examples {
		if len(e.IDs) > 47 {
			t.Fatalf("pair of %d tokens, max 47", len(e.IDs))
		}
		if e.Label > 0 {
			pos++
		}
	}
	if pos == 0 {
		t.Error("no cited sentence among the training pairs")
	}
}

// TestConfigPairTrackerArchitecture checks that the pair tracker is a network: the default
// tracker, lexical-context, reads one sentence's text and cannot score (sentence, summary) pairs.
func TestConfigPairTrackerArchitecture(t *testing.T) {
	for _, tc := range []struct{ desc, arch, want string }{
		{"default lexical-context: transformer", config.TrackerLexicalContext, "transformer"},
		{"transformer kept", "transformer", "transformer"},
		{"ngram kept", "ngram", "ngram"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg := config.Default()
			cfg.Tracker.Architecture = tc.arch
			c, err := Config(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			if c.Tracker.Architecture != tc.want || cfg.Tracker.Architecture != tc.arch {
				t.Errorf("pair tracker %q (caller's config now %q), want %q", c.Tracker.Architecture, cfg.Tracker.Architecture, tc.want)
			}
		})
	}
}

// TestConfigBatchSize (issue 36 item 6): SUM-THEN-TRACK's summarizer trains with
// variants.sum_then_track_batch_size (the paper's 8, C.5.2); its pair tracker keeps the tracker's.
func TestConfigBatchSize(t *testing.T) {
	cfg := config.Default()
	cfg.Summarizer.Train.BatchSize, cfg.Tracker.Train.BatchSize, cfg.Variants.SumThenTrackBatchSize = 16, 32, 8
	c, err := Config(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Summarizer.Train.BatchSize != 8 || c.Tracker.Train.BatchSize != 32 || cfg.Summarizer.Train.BatchSize != 16 {
		t.Errorf("summarizer batch %d, tracker %d (caller's summarizer now %d), want 8, 32 (16)",
			c.Summarizer.Train.BatchSize, c.Tracker.Train.BatchSize, cfg.Summarizer.Train.BatchSize)
	}
}

// testLoadsWhatOpenVerified checks that the opener loads both parts from the bytes Open verified
// (the parent's member manifests): metadata and tokenizers changed on disk after Open are not
// read again.
func testLoadsWhatOpenVerified(t *testing.T, out string) {
	t.Helper()
	ctx := context.Background()
	m, err := checkpoint.Open(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	defer checkpointtest.BreakFiles(t, out,
		filepath.Join(checkpoint.VariantSummarizerDir, checkpoint.SummarizerFile), filepath.Join(checkpoint.VariantSummarizerDir, checkpoint.TokenizerFile),
		filepath.Join(checkpoint.VariantTrackerDir, checkpoint.HyperparamsFile), filepath.Join(checkpoint.VariantTrackerDir, checkpoint.TokenizerFile))()
	c, err := open.Load(ctx, m, open.Options{})
	if err != nil {
		t.Fatalf("loading the opened checkpoint read its files again: %v", err)
	}
	if _, ok := c.Model.(*Model); !ok {
		t.Fatalf("opened a %T, want *Model", c.Model)
	}
}
