package ete

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
	"github.com/tracksum/tracksum/model/checkpoint"
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
	return cfg
}

func TestMain(m *testing.M) { os.Exit(preparetest.Main(m)) }

func testLog() io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return io.Discard
}

// TestTrainPredict trains END-TO-END for a few steps on the synthetic sample, checks the
// checkpoint's layout, and that its predictions are valid records whatever the model writes.
func TestTrainPredict(t *testing.T) {
	cfg := tinyConfig(t)
	data := preparetest.Dir(t, cfg)
	out := filepath.Join(t.TempDir(), "ete")
	m, rep, err := Train(context.Background(), cfg, data, out, TrainOptions{Log: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Steps != 4 {
		t.Errorf("trained %d steps, want 4", rep.Steps)
	}
	for _, f := range []string{checkpoint.VariantFile, checkpoint.SummarizerFile, checkpoint.TokenizerFile, checkpoint.ConfigFile,
		filepath.Join(checkpoint.BestDir, checkpoint.BestVariables)} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("checkpoint lacks %s: %v", f, err)
		}
	}
	if h := m.S.Meta.Hyperparams; h.MaxSourceLen != cfg.Variants.MaxSourceLen || h.MaxSummaryLen != cfg.Variants.MaxOutputLen || h.FullContext {
		t.Errorf("hyperparameters %+v: want the variants section's lengths, no full context", h)
	}
	instances, _, err := dataset.ReadInput(data, dataset.SplitTest)
	if err != nil {
		t.Fatal(err)
	}
	in := instances[0]
	preds, err := m.Predict(in.PMID, in.Document, []string{in.Aspect, "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(preds) != 2 {
		t.Fatalf("%d predictions for 2 aspects", len(preds))
	}
	for _, p := range preds {
		if p.PMID != in.PMID || p.Indexes == nil {
			t.Errorf("prediction %+v", p)
		}
		for _, k := range p.Indexes {
			if k < 0 || k >= len(in.Document) {
				t.Errorf("index %d outside the abstract (%d sentences)", k, len(in.Document))
			}
		}
	}
	if st := m.Stats(); st.Outputs != 2 {
		t.Errorf("stats %+v, want 2 outputs", st)
	}
	// A track-then-sum summarizer, or a directory of the other variant, is refused.
	if err := variant.Write(out, variant.Meta{Variant: variant.SumThenTrack}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(out); !errors.Is(err, checkpoint.ErrCheckpoint) {
		t.Errorf("Load of a sum_then_track marker: %v, want ErrCheckpoint", err)
	}
	if _, _, err := Train(context.Background(), cfg, data, out, TrainOptions{Log: testLog()}); !errors.Is(err, variant.ErrCheckpoint) {
		t.Errorf("Train into a sum_then_track checkpoint: %v, want ErrCheckpoint", err)
	}
	os.Remove(filepath.Join(out, checkpoint.VariantFile))
	if _, err := Load(out); !errors.Is(err, checkpoint.ErrCheckpoint) {
		t.Errorf("Load without variant.json: %v, want ErrCheckpoint", err)
	}
}

// TestReadDataAssign checks the cross-validation entry: abstracts go where Assign puts them,
// from every prepared split, and the source and target are what Predict and Parse expect.
func TestReadDataAssign(t *testing.T) {
	cfg := tinyConfig(t)
	data := preparetest.Dir(t, cfg)
	all, err := ReadData(data, func(string) string { return dataset.SplitTrain })
	if err != nil {
		t.Fatal(err)
	}
	split, err := ReadData(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Train) <= len(split.Train)+len(split.Dev) || len(all.Dev) != 0 {
		t.Errorf("assign-all: %d train, %d dev; prepared splits: %d train, %d dev", len(all.Train), len(all.Dev), len(split.Train), len(split.Dev))
	}
	first := all.Train[0].PMID
	some, err := ReadData(data, func(pmid string) string {
		if pmid == first {
			return dataset.SplitDev
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(some.Train) != 0 || len(some.Dev) == 0 {
		t.Errorf("one abstract in dev: %d train, %d dev rows", len(some.Train), len(some.Dev))
	}
	for _, r := range some.Dev {
		o := Parse(r.Summary, len(r.Document))
		if o.Problems != nil || len(r.CitedSentences) != len(r.Document) || r.CitedSentences[0][:3] != "0: " {
			t.Errorf("row %s/%s: target %q parsed as %+v, source %q", r.PMID, r.Aspect, r.Summary, o, r.CitedSentences)
		}
	}
	if _, err := ReadData(data, func(string) string { return "test" }); err == nil {
		t.Error("an assignment to the test split was accepted")
	}
}

// TestConfigBatchSize (issue 36 item 6): END-TO-END trains with variants.end_to_end_batch_size
// (the paper's 8, C.6.2), and with the summarizer's batch when it is 0.
func TestConfigBatchSize(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		set, want int
	}{{"set", 8, 8}, {"unset", 0, 16}} {
		cfg := config.Default()
		cfg.Summarizer.Train.BatchSize, cfg.Variants.EndToEndBatchSize = 16, tc.set
		c, err := Config(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		if c.Summarizer.Train.BatchSize != tc.want {
			t.Errorf("%s: batch %d, want %d", tc.desc, c.Summarizer.Train.BatchSize, tc.want)
		}
	}
}
