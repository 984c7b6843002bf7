package pretrained_test

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/pretrained"
)

// trainLosses returns the training losses of a checkpoint's metrics.jsonl (one row per evaluation:
// the mean loss of the steps since the previous one).
func trainLosses(t *testing.T, ck string) []float64 {
	t.Helper()
	f, err := os.Open(filepath.Join(ck, checkpoint.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		if l, ok := row["loss"].(float64); ok && row["split"] == "train" {
			out = append(out, l)
		}
	}
	return out
}

// TestBF16TrackerTracksF32: a LoRA run of the generative tracker in bf16 with gradient
// checkpointing (tracksum-train --precision bf16 --gradient-checkpointing) records its precision
// in the checkpoint, which inference follows unless overridden, and its training loss (the mean of
// the 3 steps') stays within 2% of the f32 run's on the tiny random snapshot.
func TestBF16TrackerTracksF32(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two models (~10 s)")
	}
	losses := map[string][]float64{}
	for _, prec := range []string{config.PrecisionF32, config.PrecisionBF16} {
		cfg, data, llm := setup(t)
		cfg.Tracker.Pretrained, cfg.Tracker.Head = llm, config.HeadGenerative
		cfg.Tracker.LoRA.Rank, cfg.Tracker.LoRA.Alpha = 4, 8
		cfg.Tracker.LoRA.TargetModules = []string{"q_proj", "v_proj", "down_proj"}
		loop(&cfg.Tracker.Train)
		cfg.Tracker.Train.Precision = prec
		cfg.Tracker.Train.GradientCheckpointing = prec == config.PrecisionBF16
		ck := filepath.Join(t.TempDir(), "tracker-"+prec)
		trainTask(t, "tracker", cfg, data, ck)
		meta, err := pretrained.ReadMeta(ck)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{config.PrecisionF32: "", config.PrecisionBF16: "bf16"}[prec]; meta.Precision != want {
			t.Errorf("%s: checkpoint records precision %q, want %q", prec, meta.Precision, want)
		}
		losses[prec] = trainLosses(t, ck)
		// Inference follows the checkpoint's precision unless told otherwise (infer --precision).
		for _, c := range []struct{ override, want string }{{"", meta.Precision}, {config.PrecisionF32, ""}, {config.PrecisionBF16, "bf16"}} {
			tr, err := pretrained.LoadTracker(context.Background(), ck, pretrained.LoadOptions{Precision: c.override})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Meta.Precision != c.want {
				t.Errorf("%s checkpoint loaded with precision %q: computes in %q, want %q", prec, c.override, tr.Meta.Precision, c.want)
			}
		}
	}
	f32, bf16 := losses[config.PrecisionF32], losses[config.PrecisionBF16]
	if len(f32) == 0 || len(bf16) != len(f32) {
		t.Fatalf("%d f32 and %d bf16 training losses, want the same number > 0", len(f32), len(bf16))
	}
	for i := range f32 {
		t.Logf("evaluation %d: training loss f32 %.6f, bf16 %.6f", i+1, f32[i], bf16[i])
		if math.Abs(bf16[i]-f32[i]) > 0.02*math.Abs(f32[i]) {
			t.Errorf("evaluation %d: bf16 training loss %.5f, f32 %.5f: more than 2%% apart", i+1, bf16[i], f32[i])
		}
		if bf16[i] == f32[i] {
			t.Errorf("evaluation %d: bf16 and f32 training losses are identical (%.7f): bf16 was not applied", i+1, f32[i])
		}
	}
}

// TestNF4TrackerTrains: a QLoRA run (tracksum-train --quantize nf4: the frozen base's projections
// as NF4 codes) trains the generative tracker, records the quantization in the checkpoint, which
// inference loads again with it, and its training loss (the mean of the 3 steps') follows the
// run on the unquantized base within 2% (issue 32's stated tolerance), without equalling it.
func TestNF4TrackerTrains(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two models (~10 s)")
	}
	losses := map[string][]float64{}
	for _, q := range []string{config.QuantizationNone, config.QuantizationNF4} {
		cfg, data, llm := setup(t)
		cfg.Tracker.Pretrained, cfg.Tracker.Head = llm, config.HeadGenerative
		cfg.Tracker.LoRA.Rank, cfg.Tracker.LoRA.Alpha = 4, 8
		cfg.Tracker.LoRA.TargetModules = []string{"q_proj", "v_proj", "down_proj"}
		loop(&cfg.Tracker.Train)
		cfg.Tracker.Train.Quantization = q
		ck := filepath.Join(t.TempDir(), "tracker-"+q)
		trainTask(t, "tracker", cfg, data, ck)
		meta, err := pretrained.ReadMeta(ck)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{config.QuantizationNone: "", config.QuantizationNF4: config.QuantizationNF4}[q]
		if meta.Quantization != want {
			t.Errorf("checkpoint records quantization %q, want %q", meta.Quantization, want)
		}
		losses[q] = trainLosses(t, ck)
		tr, err := pretrained.LoadTracker(context.Background(), ck)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Meta.Quantization != want {
			t.Errorf("loaded tracker's quantization %q, want %q", tr.Meta.Quantization, want)
		}
	}
	plain, nf4 := losses[config.QuantizationNone], losses[config.QuantizationNF4]
	if len(plain) == 0 || len(nf4) != len(plain) {
		t.Fatalf("%d unquantized and %d nf4 training losses, want the same number > 0", len(plain), len(nf4))
	}
	for i := range plain {
		t.Logf("evaluation %d: training loss unquantized %.6f, nf4 %.6f", i+1, plain[i], nf4[i])
		if math.IsNaN(nf4[i]) || math.Abs(nf4[i]-plain[i]) > 0.02*math.Abs(plain[i]) {
			t.Errorf("evaluation %d: nf4 training loss %.5f, unquantized %.5f: more than 2%% apart", i+1, nf4[i], plain[i])
		}
		if nf4[i] == plain[i] {
			t.Errorf("evaluation %d: nf4 and unquantized training losses are identical (%.7f): the base was not quantized", i+1, plain[i])
		}
	}
}
