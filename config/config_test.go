package config

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

func writeYAML(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "profile.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func prepareFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.Int("sample-size", 0, "")
	fs.Int64("seed", 0, "")
	fs.String("split-by", "", "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

var prepareFlagKeys = map[string]string{"sample-size": "prepare.sample_size", "seed": "seed", "split-by": "prepare.split_by"}

// TestLoadPrecedence checks flag > environment > YAML > defaults, key by key.
func TestLoadPrecedence(t *testing.T) {
	yaml := writeYAML(t, "seed: 11\nprepare:\n  sample_size: 70\n  rows_per_shard: 900\n  split_by: instance\n")
	for _, tc := range []struct {
		desc       string
		file       string
		env        map[string]string
		args       []string
		wantSize   int
		wantRows   int
		wantSeed   int64
		wantSplit  string
		wantWorker int
	}{
		{"defaults only", "", nil, nil, 500, 100000, 3407, "pmid", 0},
		{"yaml over defaults", yaml, nil, nil, 70, 900, 11, "instance", 0},
		{"env over yaml", yaml, map[string]string{"TRACKSUM_PREPARE_SAMPLE_SIZE": "80", "TRACKSUM_SEED": "12", "TRACKSUM_PREPARE_WORKERS": "3"},
			nil, 80, 900, 12, "instance", 3},
		{"flag over env", yaml, map[string]string{"TRACKSUM_PREPARE_SAMPLE_SIZE": "80", "TRACKSUM_PREPARE_SPLIT_BY": "pmid"},
			[]string{"--sample-size", "90", "--split-by", "instance"}, 90, 900, 11, "instance", 0},
		{"env for a key absent from the yaml", "", map[string]string{"TRACKSUM_PREPARE_ROWS_PER_SHARD": "5"}, nil, 500, 5, 3407, "pmid", 0},
		{"flag not passed does not override", yaml, nil, []string{}, 70, 900, 11, "instance", 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := prepareFlags(t, tc.args...)
			keys := map[string]string{}
			for name, key := range prepareFlagKeys {
				if fs.Changed(name) {
					keys[name] = key
				}
			}
			cfg, err := Load(viper.New(), tc.file, fs, keys)
			if err != nil {
				t.Fatal(err)
			}
			p := cfg.Prepare
			if p.SampleSize != tc.wantSize || p.RowsPerShard != tc.wantRows || cfg.Seed != tc.wantSeed || p.SplitBy != tc.wantSplit || p.Workers != tc.wantWorker {
				t.Errorf("got sample_size %d rows_per_shard %d seed %d split_by %s workers %d; want %d %d %d %s %d",
					p.SampleSize, p.RowsPerShard, cfg.Seed, p.SplitBy, p.Workers, tc.wantSize, tc.wantRows, tc.wantSeed, tc.wantSplit, tc.wantWorker)
			}
		})
	}
}

func TestLoadUnknownKey(t *testing.T) {
	for _, tc := range []struct {
		desc, yaml, want string
	}{
		{"unknown key in a section", "prepare:\n  shard_rows: 10\n", "shard_rows"},
		{"unknown top-level key", "sede: 1\n", "sede"},
		{"unknown tokenizer key", "tokenizer:\n  vocab: 100\n", "vocab"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := Load(viper.New(), writeYAML(t, tc.yaml), pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestLoadValidation(t *testing.T) {
	for _, tc := range []struct {
		desc, yaml, want string
	}{
		{"split_by", "prepare:\n  split_by: abstract\n", `prepare.split_by: must be "pmid" or "instance", got "abstract"`},
		{"ratios do not sum to 1", "prepare:\n  train_ratio: 0.7\n", "prepare.train_ratio + prepare.dev_ratio + prepare.test_ratio: must sum to 1, got 0.9"},
		{"negative ratio", "prepare:\n  dev_ratio: -0.1\n  test_ratio: 0.3\n", "prepare.dev_ratio: must be in [0, 1], got -0.1"},
		{"no training split", "prepare:\n  train_ratio: 0\n  dev_ratio: 0.5\n  test_ratio: 0.5\n", "prepare.train_ratio: must be > 0"},
		{"aspect set", "prepare:\n  aspect_set: pico\n", `prepare.aspect_set: must be "auto", "tracsum" or "pcoa", got "pico"`},
		{"sample size", "prepare:\n  sample_size: 0\n", "prepare.sample_size: must be > 0, got 0"},
		{"rows per shard", "prepare:\n  rows_per_shard: -1\n", "prepare.rows_per_shard: must be > 0, got -1"},
		{"row group rows", "prepare:\n  row_group_rows: 0\n", "prepare.row_group_rows: must be > 0, got 0"},
		{"workers", "prepare:\n  workers: -2\n", "prepare.workers: must be >= 0 (0 = one per CPU), got -2"},
		{"tokenizer kind", "tokenizer:\n  kind: unigram\n", `tokenizer.kind: must be "wordpiece" or "bpe", got "unigram"`},
		{"vocab size", "tokenizer:\n  vocab_size: 100\n", "tokenizer.vocab_size: must be in [300, 1048576]"},
		{"min frequency", "tokenizer:\n  min_frequency: 0\n", "tokenizer.min_frequency: must be >= 1, got 0"},
		{"max train texts", "tokenizer:\n  max_train_texts: -1\n", "tokenizer.max_train_texts: must be >= 0 (0 = all), got -1"},
		{"wrong type", "prepare:\n  sample_size: many\n", "sample_size"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := Load(viper.New(), writeYAML(t, tc.yaml), pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant one containing %q", err, tc.want)
			}
		})
	}
}

// TestProfiles loads every shipped profile and checks the paper's settings for the sections this
// file covers (split and seed).
func TestProfiles(t *testing.T) {
	for _, name := range []string{"default", "tiny", "paper"} {
		t.Run(name, func(t *testing.T) {
			cfg, err := Load(viper.New(), filepath.Join("..", "configs", name+".yaml"), pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
			if err != nil {
				t.Fatal(err)
			}
			if name == "paper" {
				p := cfg.Prepare
				// 8:2 train:test as in the paper, with the dev split (needed for model selection) taken
				// from the training share.
				if cfg.Seed != 3407 || p.SplitBy != "instance" || math.Abs(p.TrainRatio+p.DevRatio-0.8) > 1e-9 || p.DevRatio <= 0 || p.TestRatio != 0.2 {
					t.Errorf("paper profile: seed %d, %s split %g/%g/%g; want 3407, instance (train+dev 0.8, dev > 0)/0.2", cfg.Seed, p.SplitBy, p.TrainRatio, p.DevRatio, p.TestRatio)
				}
			}
		})
	}
}

// TestWriteFileRoundTrip checks that the resolved config written next to outputs loads back equal.
func TestWriteFileRoundTrip(t *testing.T) {
	cfg := Default()
	cfg.Prepare.SampleSize = 123
	cfg.Tokenizer.Kind = "wordpiece"
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := cfg.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Prepare != cfg.Prepare || back.Tokenizer != cfg.Tokenizer || back.Seed != cfg.Seed {
		t.Errorf("round trip: %+v %+v", back.Prepare, back.Tokenizer)
	}
}

// TestPaperTraining pins the TracSum paper's fine-tuning settings (§6.1, C.2, C.3) in the paper
// profile: lr 1e-5, weight decay 0.01, warmup 200, 5 epochs, batch 32 (tracker) / 16 (summarizer),
// gradient accumulation 2.
func TestPaperTraining(t *testing.T) {
	cfg, err := Load(viper.New(), filepath.Join("..", "configs", "paper.yaml"), pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc  string
		loop  TrainLoop
		batch int
	}{
		{desc: "tracker", loop: cfg.Tracker.Train, batch: 32},
		{desc: "summarizer", loop: cfg.Summarizer.Train, batch: 16},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			l := tc.loop
			if l.LearningRate != 1e-5 || l.WeightDecay != 0.01 || l.WarmupSteps != 200 || l.Epochs != 5 ||
				l.BatchSize != tc.batch || l.GradAccumulation != 2 {
				t.Errorf("paper %s training: lr %g wd %g warmup %d epochs %d batch %d accumulation %d; want 1e-05 0.01 200 5 %d 2",
					tc.desc, l.LearningRate, l.WeightDecay, l.WarmupSteps, l.Epochs, l.BatchSize, l.GradAccumulation, tc.batch)
			}
		})
	}
	// The recipe repeats each positive row 6 more times: 7 copies in all (oversample counts copies).
	if cfg.Tracker.Imbalance != "oversample" || cfg.Tracker.Oversample != 7 {
		t.Errorf("paper tracker imbalance: %s x%d; want oversample x7 (6 more copies)", cfg.Tracker.Imbalance, cfg.Tracker.Oversample)
	}
	// The released scripts evaluate (and keep a checkpoint) every 32 optimizer steps.
	if cfg.Tracker.Train.EvalEvery != 32 || cfg.Summarizer.Train.EvalEvery != 32 {
		t.Errorf("paper eval_every: tracker %d, summarizer %d; want 32 and 32", cfg.Tracker.Train.EvalEvery, cfg.Summarizer.Train.EvalEvery)
	}
	// The paper's recipe has neither of the project's additions over the tracker's scores.
	if cfg.Tracker.LexicalCalibrationFolds != 0 || cfg.Tracker.ContextRescoring || cfg.Tracker.Calibrate {
		t.Errorf("paper tracker: lexical_calibration_folds %d, context_rescoring %v, calibrate %v; want 0, false, false",
			cfg.Tracker.LexicalCalibrationFolds, cfg.Tracker.ContextRescoring, cfg.Tracker.Calibrate)
	}
}

// TestDefaultTrackerRescoring pins the default tracker recipe that docs/tracker.md's
// cross-validation figures describe: per-aspect calibration by 5 inner folds and context
// rescoring (configs/default.yaml agrees: TestDefaultsInTwoPlaces), and that turning the
// calibration off alone is refused while rescoring is on.
func TestDefaultTrackerRescoring(t *testing.T) {
	d := DefaultTracker()
	if d.LexicalCalibrationFolds != 5 || !d.ContextRescoring {
		t.Errorf("default tracker: lexical_calibration_folds %d, context_rescoring %v; want 5, true", d.LexicalCalibrationFolds, d.ContextRescoring)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("default tracker: %v", err)
	}
	if d.Architecture != TrackerLexicalContext {
		t.Errorf("default tracker architecture %q, want %q (the best of the cross-validation, issue 24)", d.Architecture, TrackerLexicalContext)
	}
	d.Architecture = "transformer"
	d.LexicalCalibrationFolds = 0
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "tracker.context_rescoring") {
		t.Errorf("calibration off, rescoring on: %v", err)
	}
	d.ContextRescoring = false
	if err := d.Validate(); err != nil {
		t.Errorf("both off (the plain TF-IDF + LR recipe): %v", err)
	}
}

// TestTrackerArchitecture checks tracker.architecture's values and what lexical-context needs:
// its inner folds (lexical_calibration_folds >= 2) whatever context_rescoring says.
func TestTrackerArchitecture(t *testing.T) {
	for _, tc := range []struct {
		desc, arch string
		folds      int
		rescoring  bool
		err        string
	}{
		{"default", TrackerLexicalContext, 5, true, ""},
		{"lexical-context, rescoring key off (unused)", TrackerLexicalContext, 5, false, ""},
		{"lexical-context, 2 inner folds", TrackerLexicalContext, 2, false, ""},
		{"lexical-context without inner folds", TrackerLexicalContext, 0, false,
			"tracker.lexical_calibration_folds: must be >= 2 with architecture lexical-context (its context rescorer is fitted on the out-of-fold logits of these inner folds), got 0"},
		{"lexical-context without inner folds, rescoring on: one error", TrackerLexicalContext, 0, true,
			"tracker.lexical_calibration_folds: must be >= 2 with architecture lexical-context (its context rescorer is fitted on the out-of-fold logits of these inner folds), got 0"},
		{"transformer", "transformer", 5, true, ""},
		{"ngram", "ngram", 0, false, ""},
		{"unknown", "lexical", 5, true, `tracker.architecture: must be one of [lexical-context transformer ngram], got "lexical"`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := DefaultTracker()
			c.Architecture, c.LexicalCalibrationFolds, c.ContextRescoring = tc.arch, tc.folds, tc.rescoring
			err := c.Validate()
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Errorf("Validate: %v, want %q", err, tc.err)
			}
		})
	}
}

func TestResolvePrecision(t *testing.T) {
	tests := []struct {
		desc, precision, backend, want string
	}{
		{"auto on the go backend", PrecisionAuto, "go", PrecisionF32},
		{"auto on xla:cpu", PrecisionAuto, "xla:cpu", PrecisionF32},
		{"auto on xla:cuda", PrecisionAuto, "xla:cuda", PrecisionBF16},
		{"auto on a CUDA plugin path", PrecisionAuto, "xla:/opt/jax_plugins/xla_cuda13/xla_cuda_plugin.so", PrecisionBF16},
		{"f32 on CUDA", PrecisionF32, "xla:cuda", PrecisionF32},
		{"bf16 on the go backend", PrecisionBF16, "go", PrecisionBF16},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := ResolvePrecision(tc.precision, tc.backend); got != tc.want {
				t.Errorf("ResolvePrecision(%q, %q) = %q, want %q", tc.precision, tc.backend, got, tc.want)
			}
		})
	}
	loop := DefaultTrainLoop()
	loop.Precision = "fp16"
	if err := loop.Validate("tracker.train"); err == nil || !strings.Contains(err.Error(), `tracker.train.precision: must be one of [auto f32 bf16], got "fp16"`) {
		t.Errorf("precision fp16: error %v", err)
	}
}

func TestInferPrecision(t *testing.T) {
	for _, tc := range []struct {
		desc, precision, err string
	}{
		{"empty: the checkpoint's", "", ""},
		{"bf16", "bf16", ""},
		{"auto", "auto", ""},
		{"unknown", "half", `infer.precision: must be empty (the checkpoint's) or one of [auto f32 bf16], got "half"`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := DefaultInfer()
			c.Precision = tc.precision
			err := c.Validate()
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}
