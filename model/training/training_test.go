package training

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/tensorio"
	"github.com/tracksum/tracksum/model"
)

// linearTask is a learnable toy problem: y = 1 when x0 + 2*x1 - x2 > 0.
type linearTask struct {
	x [][]float32
	y []float32
}

func newLinearTask(n int, seed uint64) linearTask {
	r := rand.New(rand.NewPCG(seed, 1))
	var t linearTask
	for range n {
		x := []float32{float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())}
		y := float32(0)
		if x[0]+2*x[1]-x[2] > 0 {
			y = 1
		}
		t.x, t.y = append(t.x, x), append(t.y, y)
	}
	return t
}

func logitsGraph(scope *gomlxmodel.Scope, x *graph.Node) *graph.Node {
	d := scope.In("dense")
	w := d.VariableWithShape("weights", shapes.Make(dtypes.Float32, 4, 1)).NodeValue(x.Graph())
	b := d.VariableWithShape("bias", shapes.Make(dtypes.Float32, 1, 1)).NodeValue(x.Graph())
	return graph.Reshape(graph.Add(graph.MatMul(x, w), b), -1)
}

func bce(logits, labels *graph.Node) *graph.Node {
	// log(1+exp(z)) - y*z, stable form.
	z := logits
	l := graph.Sub(graph.Add(graph.Max(z, graph.ZerosLike(z)), graph.Log1p(graph.Exp(graph.Neg(graph.Abs(z))))), graph.Mul(labels, z))
	return graph.ReduceAllMean(l)
}

func toyOptions(t *testing.T, dir string, loop config.TrainLoop) (Options, *gomlxmodel.Store) {
	t.Helper()
	backend, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	train, dev := newLinearTask(256, 1), newLinearTask(128, 2)
	store := gomlxmodel.NewStore()
	scoreExec := gomlxmodel.MustNewExec(backend, store, func(root *gomlxmodel.Scope, x *graph.Node) *graph.Node {
		return graph.Sigmoid(logitsGraph(root.Store().Scope(model.ModelScope), x))
	})
	return Options{
		Backend: backend,
		Store:   store,
		Loop:    loop,
		Seed:    3407,
		OutDir:  dir,
		Log:     os.Stderr,
		Loss: func(scope *gomlxmodel.Scope, in []*graph.Node) *graph.Node {
			return bce(logitsGraph(scope, in[0]), in[1])
		},
		Batches: func(epoch int) ([]Batch, error) {
			r := rand.New(rand.NewPCG(uint64(epoch), 7))
			perm := r.Perm(len(train.y))
			var out []Batch
			for i := 0; i < len(perm); i += loop.BatchSize {
				var x [][]float32
				var y []float32
				for _, j := range perm[i:min(i+loop.BatchSize, len(perm))] {
					x, y = append(x, train.x[j]), append(y, train.y[j])
				}
				out = append(out, Batch{Inputs: []any{x, y}, Examples: len(y)})
			}
			return out, nil
		},
		Evaluate: func(ctx context.Context) (Metrics, error) {
			p, err := scoreExec.Call1(dev.x)
			if err != nil {
				return nil, err
			}
			probs := tensors.MustCopyFlatData[float32](p)
			correct := 0
			for i, pr := range probs {
				if (pr >= 0.5) == (dev.y[i] == 1) {
					correct++
				}
			}
			return Metrics{"accuracy": float64(correct) / float64(len(probs))}, nil
		},
		Select: "accuracy",
	}, store
}

func toyLoop() config.TrainLoop {
	loop := config.DefaultTrainLoop()
	loop.LearningRate = 0.3
	loop.WarmupSteps = 5
	loop.Epochs = 8
	loop.BatchSize = 32
	loop.GradAccumulation = 2
	loop.Patience = 0
	return loop
}

func TestRunLearns(t *testing.T) {
	dir := t.TempDir()
	o, _ := toyOptions(t, dir, toyLoop())
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 32 || res.Stop != "completed" {
		t.Errorf("steps=%d stop=%q, want 32 completed", res.Steps, res.Stop)
	}
	if res.Best["accuracy"] < 0.9 {
		t.Errorf("best dev accuracy %.3f, want >= 0.9", res.Best["accuracy"])
	}
	for _, f := range []string{MetricsFile, PlotFile, PlotSVGFile, filepath.Join(BestDir, BestVariables), filepath.Join(StateDir, "state.json")} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestResumeMatchesUninterrupted interrupts a run after a few steps, resumes it, and checks that the
// final variables equal those of a run that was never interrupted.
func TestResumeMatchesUninterrupted(t *testing.T) {
	loop := toyLoop()
	loop.EvalEvery = 5
	full := t.TempDir()
	o, store := toyOptions(t, full, loop)
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	want := variables(t, store)

	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	o1, _ := toyOptions(t, dir, loop)
	o1.AfterStep = func(step int) {
		if step == 7 {
			cancel()
		}
	}
	if _, err := Run(ctx, o1); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: err=%v, want context.Canceled", err)
	}
	o2, store2 := toyOptions(t, dir, loop)
	var first int
	o2.AfterStep = func(step int) {
		if first == 0 {
			first = step
		}
	}
	res, err := Run(context.Background(), o2)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || first != 8 {
		t.Errorf("resumed=%v first step=%d, want true 8", res.Resumed, first)
	}
	got := variables(t, store2)
	for name, w := range want {
		g := got[name]
		if len(g) != len(w) {
			t.Fatalf("%s: %d values, want %d", name, len(g), len(w))
		}
		for i := range w {
			if g[i] != w[i] {
				t.Fatalf("%s[%d] = %v after resume, %v without interruption", name, i, g[i], w[i])
			}
		}
	}
}

func variables(t *testing.T, store *gomlxmodel.Store) map[string][]float32 {
	out := map[string][]float32{}
	for v := range store.IterVariables() {
		if v.DType() != dtypes.Float32 {
			continue
		}
		out[v.Path()] = tensors.MustCopyFlatData[float32](v.MustValue())
	}
	return out
}

// TestSavedLeavesOutVariables: Options.Saved keeps a model variable (here the bias, standing for a
// frozen pretrained base) out of best/ and of the resume point, while the optimizer state stays.
func TestSavedLeavesOutVariables(t *testing.T) {
	dir := t.TempDir()
	loop := toyLoop()
	loop.Epochs = 1
	o, _ := toyOptions(t, dir, loop)
	const left = model.ModelScope + "/dense/bias"
	o.Saved = func(p string) bool { return p != left }
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(BestDir, BestVariables), filepath.Join(StateDir, stateVariables)} {
		ts, err := tensorio.ReadTensors(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ts[left]; ok {
			t.Errorf("%s holds %s, which Saved leaves out", f, left)
		}
		if _, ok := ts[model.ModelScope+"/dense/weights"]; !ok {
			t.Errorf("%s lacks the weights", f)
		}
	}
	ts, err := tensorio.ReadTensors(filepath.Join(dir, StateDir, stateVariables))
	if err != nil {
		t.Fatal(err)
	}
	opt := 0
	for name := range ts {
		if len(name) > len(OptimizerScope) && name[:len(OptimizerScope)] == OptimizerScope {
			opt++
		}
	}
	if opt == 0 {
		t.Error("the resume point has no optimizer state")
	}
}
