package tracker

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// tinyConfig loads configs/tiny.yaml, the profile CI trains with.
func tinyConfig(t testing.TB) *config.Config {
	t.Helper()
	cfg, err := config.Load(viper.New(), "../../configs/tiny.yaml", pflag.NewFlagSet("t", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// syntheticPrepared is the built-in synthetic sample prepared with the tiny profile, shared by the
// package's tests (read-only).
func syntheticPrepared(t testing.TB) string {
	t.Helper()
	return preparetest.Dir(t, tinyConfig(t))
}

func TestMain(m *testing.M) { os.Exit(preparetest.Main(m)) }

// TestTrainTinySynthetic trains the tiny transformer on the synthetic sample (learnable labels),
// then checks the quality, the checkpoint round trip and that Score on raw sentences matches the
// prepared rows.
func TestTrainTinySynthetic(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model (~10 s)")
	}
	data := syntheticPrepared(t)
	out := filepath.Join(t.TempDir(), "run")
	cfg := tinyConfig(t)
	m, rep, err := Train(context.Background(), cfg, data, out, TrainOptions{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if f1 := rep.Dev.Sentence["f1"]; f1 < 0.9 {
		t.Errorf("dev F1 %.3f, want >= 0.9 on the synthetic sample", f1)
	}
	for _, f := range []string{checkpoint.HyperparamsFile, checkpoint.TokenizerFile, checkpoint.ConfigFile, checkpoint.ReportFile, checkpoint.MetricsFile, checkpoint.PlotFile,
		filepath.Join(checkpoint.BestDir, checkpoint.BestVariables)} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("checkpoint: %v", err)
		}
	}

	// Loading the checkpoint reproduces the in-memory model bit for bit.
	loaded, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadData(data, cfg.Tracker.MaxLen-1)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.ScoreExamples(d.Dev.Examples)
	if err != nil {
		t.Fatal(err)
	}
	got, err := loaded.ScoreExamples(d.Dev.Examples)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("example %d: loaded model gives %v, in-memory %v", i, got[i], want[i])
		}
	}

	// Score on raw sentences tokenizes like prepare: same probabilities as the rows (up to float
	// rounding, since batches are composed differently).
	docs := map[[2]string][]string{}
	for row, err := range dataset.ReadShards[dataset.TrackerRow](data, dataset.TaskTracker, dataset.SplitDev) {
		if err != nil {
			t.Fatal(err)
		}
		key := [2]string{row.PMID, row.Aspect}
		doc := docs[key]
		for len(doc) < int(row.DocLength) {
			doc = append(doc, "")
		}
		doc[row.SentenceIndex] = row.Sentence
		docs[key] = doc
	}
	checked := 0
	for i, k := range d.Dev.Keys {
		probs, err := loaded.Score(docs[[2]string{k.PMID, k.Aspect}], k.Aspect)
		if err != nil {
			t.Fatal(err)
		}
		if diff := math.Abs(float64(probs[k.SentenceIndex] - want[i])); diff > 1e-4 {
			t.Fatalf("%s/%s sentence %d: Score gives %v, rows give %v", k.PMID, k.Aspect, k.SentenceIndex, probs[k.SentenceIndex], want[i])
		}
		if checked++; checked == 40 {
			break
		}
	}
	// Aspects are accepted by name too, and unknown ones are an error.
	doc := docs[[2]string{d.Dev.Keys[0].PMID, d.Dev.Keys[0].Aspect}]
	byCode, _ := loaded.Score(doc, "o")
	byName, err := loaded.Score(doc, "outcomes")
	if err != nil || !slices.Equal(byCode, byName) {
		t.Errorf("Score by name: %v %v, want %v", byName, err, byCode)
	}
	if _, err := loaded.Score(doc, "nope"); err == nil {
		t.Error("Score with an unknown aspect: no error")
	}
}

// TestResumeAfterInterrupt interrupts training, then reruns the same call: it continues from the
// saved step instead of starting over.
func TestResumeAfterInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	data := syntheticPrepared(t)
	out := filepath.Join(t.TempDir(), "run")
	cfg := tinyConfig(t)
	cfg.Tracker.Train.MaxSteps = 24
	cfg.Tracker.Train.EvalEvery = 10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, _, err := Train(ctx, cfg, data, out, TrainOptions{Log: testLog(t), AfterStep: func(step int) {
		if step == 13 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: err = %v, want context.Canceled", err)
	}
	first := 0
	_, rep, err := Train(context.Background(), cfg, data, out, TrainOptions{Log: testLog(t), AfterStep: func(step int) {
		if first == 0 {
			first = step
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if first != 14 || rep.Steps != 24 {
		t.Errorf("resumed at step %d and ended at %d, want 14 and 24", first, rep.Steps)
	}
	// A third run finds the training finished and does not train again.
	_, rep, err = Train(context.Background(), cfg, data, out, TrainOptions{Log: testLog(t), AfterStep: func(int) { t.Error("trained again") }})
	if err != nil || rep.Steps != 24 {
		t.Errorf("rerun of a finished run: steps %v err %v", rep, err)
	}
}

func TestErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("prepares the synthetic sample")
	}
	data := syntheticPrepared(t)
	cfg := tinyConfig(t)
	empty := t.TempDir()
	notCheckpoint := t.TempDir()
	os.WriteFile(filepath.Join(notCheckpoint, "x.txt"), []byte("x"), 0o644)
	other := *cfg
	other.Tracker.DModel = 48
	for _, tc := range []struct {
		desc    string
		run     func() error
		wantIs  error
		wantMsg string
	}{
		{"missing prepared dir", func() error {
			_, _, err := Train(context.Background(), cfg, filepath.Join(empty, "nope"), filepath.Join(empty, "out"), TrainOptions{Log: testLog(t)})
			return err
		}, ErrPrepared, "does not exist"},
		{"prepared dir without manifest", func() error {
			_, _, err := Train(context.Background(), cfg, empty, filepath.Join(empty, "out"), TrainOptions{Log: testLog(t)})
			return err
		}, ErrPrepared, "manifest"},
		{"output is not a checkpoint", func() error {
			_, _, err := Train(context.Background(), cfg, data, notCheckpoint, TrainOptions{Log: testLog(t)})
			return err
		}, ErrCheckpoint, "not a tracker checkpoint"},
		{"load a missing checkpoint", func() error { _, err := Load(filepath.Join(empty, "nope")); return err }, ErrCheckpoint, "not a directory"},
		{"load a non-checkpoint", func() error { _, err := Load(notCheckpoint); return err }, ErrCheckpoint, "hparams.json"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := tc.run()
			if !errors.Is(err, tc.wantIs) || !strings.Contains(err.Error(), tc.wantMsg) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line wrapping %v and containing %q", err, tc.wantIs, tc.wantMsg)
			}
		})
	}
	// Resuming into a checkpoint made with other settings is refused.
	out := filepath.Join(t.TempDir(), "run")
	c1 := *cfg
	c1.Tracker.Train.MaxSteps = 2
	if _, _, err := Train(context.Background(), &c1, data, out, TrainOptions{Log: testLog(t)}); err != nil {
		t.Fatal(err)
	}
	other.Tracker.Train.MaxSteps = 2
	if _, _, err := Train(context.Background(), &other, data, out, TrainOptions{Log: testLog(t)}); !errors.Is(err, ErrCheckpoint) {
		t.Errorf("resume with other settings: err = %v, want ErrCheckpoint", err)
	}
}

func TestBinaryMetrics(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		probs  []float32
		labels []float32
		want   map[string]float64
	}{
		{"perfect", []float32{0.9, 0.8, 0.1, 0.2}, []float32{1, 1, 0, 0},
			map[string]float64{"precision": 1, "recall": 1, "f1": 1, "accuracy": 1, "auc": 1}},
		{"one false positive", []float32{0.9, 0.6, 0.7, 0.2}, []float32{1, 0, 1, 0},
			map[string]float64{"precision": 2.0 / 3, "recall": 1, "f1": 0.8, "accuracy": 0.75, "auc": 1}},
		{"ties count half", []float32{0.5, 0.5}, []float32{1, 0},
			map[string]float64{"precision": 0.5, "recall": 1, "auc": 0.5}},
		{"no positives predicted", []float32{0.1, 0.2, 0.3}, []float32{1, 0, 0},
			map[string]float64{"precision": 0, "recall": 0, "f1": 0, "auc": 0}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := BinaryMetrics(tc.probs, tc.labels, 0.5)
			for k, v := range tc.want {
				if math.Abs(got[k]-v) > 1e-9 {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func TestPositionFeatures(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		i, n     int
		rel      float32
		first    bool
		last     bool
		bucketAt int
	}{
		{"first of ten", 0, 10, 0, true, false, 0},
		{"last of ten", 9, 10, 1, false, true, 9},
		{"middle", 4, 9, 0.5, false, false, 5},
		{"single sentence", 0, 1, 0, true, true, 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			f := PositionFeatures(tc.i, tc.n)
			if f[0] != tc.rel || (f[2] == 1) != tc.first || (f[3] == 1) != tc.last || f[4+tc.bucketAt] != 1 {
				t.Errorf("PositionFeatures(%d, %d) = %v", tc.i, tc.n, f)
			}
		})
	}
}

// testLog sends training output to the test log only when -v is given.
func testLog(t *testing.T) *os.File {
	if testing.Verbose() {
		return os.Stderr
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestWeighTraining(t *testing.T) {
	exs := []Example{{Label: 1}, {Label: 0}, {Label: 0}, {Label: 0}, {Label: 0}}
	for _, tc := range []struct {
		desc        string
		imbalance   string
		oversample  int
		posWeight   float64
		wantRows    int
		wantPosRows int
		wantPosW    float32
	}{
		{"oversample 6x", "oversample", 6, 0, 10, 6, 1},
		{"explicit positive weight", "pos_weight", 6, 3, 5, 1, 3},
		{"automatic positive weight is #neg/#pos", "pos_weight", 6, 0, 5, 1, 4},
		{"none", "none", 6, 3, 5, 1, 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg := config.DefaultTracker()
			cfg.Imbalance, cfg.Oversample, cfg.PosWeight = tc.imbalance, tc.oversample, tc.posWeight
			out := weighTraining(exs, cfg)
			pos := 0
			for _, e := range out {
				if e.Label > 0 {
					pos++
					if e.Weight != tc.wantPosW {
						t.Errorf("positive weight %v, want %v", e.Weight, tc.wantPosW)
					}
				} else if e.Weight != 1 {
					t.Errorf("negative weight %v, want 1", e.Weight)
				}
			}
			if len(out) != tc.wantRows || pos != tc.wantPosRows {
				t.Errorf("%d rows (%d positive), want %d (%d)", len(out), pos, tc.wantRows, tc.wantPosRows)
			}
		})
	}
}

func TestTrainingBatchesBucketAndCover(t *testing.T) {
	var exs []Example
	for i := range 100 {
		exs = append(exs, Example{IDs: make([]int32, 1+i%40), Weight: 1})
	}
	seen := map[int]int{}
	a := TrainingBatches(exs, 16, 63, 3407, 0)
	b := TrainingBatches(exs, 16, 63, 3407, 0)
	total := 0
	for i, bt := range a {
		ids := bt.Inputs[0].(*tensors.Tensor)
		T := ids.Shape().Dimensions[1]
		if !slices.Contains(lengthBuckets, T) {
			t.Errorf("batch %d padded to %d tokens, not a bucket length", i, T)
		}
		if got := b[i].Inputs[0].(*tensors.Tensor).Shape(); !got.Equal(ids.Shape()) {
			t.Errorf("batch %d: shapes differ between two calls with the same seed", i)
		}
		seen[T] += bt.Examples
		total += bt.Examples
	}
	if total != len(exs) {
		t.Errorf("batches hold %d examples, want %d", total, len(exs))
	}
	if seen[64] != 0 {
		t.Errorf("examples of at most 40 tokens padded beyond 48: %v", seen)
	}
}
