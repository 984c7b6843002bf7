package tracker

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/training"
)

// benchSteps is the number of optimizer steps timed per benchmark iteration.
const benchSteps = 40

// benchData prepares the real TracSum rows (../shared) when present, else the synthetic sample.
func benchData(b *testing.B, cfg *config.Config) (*Data, string) {
	b.Helper()
	var dir string
	source := "synthetic sample"
	if real := "../../../shared/data/tracsum/tracsum-dev.jsonl"; fileExists(real) {
		dir, source = preparetest.DirFrom(b, cfg, []string{real}), "TracSum rows (../shared)"
	} else {
		dir = preparetest.Dir(b, cfg)
	}
	d, err := ReadData(dir, cfg.Tracker.MaxLen-1)
	if err != nil {
		b.Fatal(err)
	}
	return d, source
}

// cpuSeconds is the user+system CPU time of this process: under a shared, loaded machine it shows
// what the step costs independently of how much CPU the scheduler granted.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// BenchmarkTrainStep times optimizer steps of the default tracker config's transformer (configs/default.yaml,
// TRACKSUM_* overrides apply, e.g. TRACKSUM_TRACKER_ARCHITECTURE=ngram) on the training rows,
// after one warm-up pass that compiles every batch shape. It reports examples/s, tokens/s (real
// tokens, aspect token included), the model's achieved GFLOPS and, for comparison, the backend's
// GFLOPS on one large matmul.
//
//	go test ./model/tracker -run '^$' -bench TrainStep -benchtime 1x
func BenchmarkTrainStep(b *testing.B) {
	cfg, err := config.Load(viper.New(), "../../configs/default.yaml", pflag.NewFlagSet("b", pflag.ContinueOnError), nil)
	if err != nil {
		b.Fatal(err)
	}
	// The default, lexical-context, has no network and no training step: time the transformer (the
	// model PyTorch's anchor runs) unless TRACKSUM_TRACKER_ARCHITECTURE names another network.
	if cfg.Tracker.Architecture == config.TrackerLexicalContext {
		cfg.Tracker.Architecture = ArchTransformer
	}
	backend, backendName, err := model.Backend()
	if err != nil {
		b.Fatal(err)
	}
	data, source := benchData(b, cfg)
	hp := NewHyperparams(cfg.Tracker, data.Tokenizer.VocabSize(), data.Manifest.AspectSet, make([]string, len(data.Aspects)), make([]string, len(data.Aspects)))
	train := weighTraining(data.Train.Examples, cfg.Tracker)
	batches := TrainingBatches(train, cfg.Tracker.Train.BatchSize, hp.MaxTokens(), cfg.Seed, 0)
	store := gomlxmodel.NewStore()
	if err := store.SetRNGStateFromSeed(cfg.Seed); err != nil {
		b.Fatal(err)
	}
	loop := cfg.Tracker.Train
	loop.GradAccumulation = 1
	shards := TrainShards(backend)
	if v := os.Getenv("TRACKSUM_BENCH_SHARDS"); v != "" {
		if shards, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	stepper, err := training.NewStepper(training.Options{Backend: backend, Store: store, Loop: loop,
		Shards: shards, Split: SplitBatch, Seed: cfg.Seed,
		Loss: func(scope *gomlxmodel.Scope, in []*graph.Node) *graph.Node {
			return LossGraph(scope, hp, cfg.Tracker.LexicalL2, in)
		}})
	if err != nil {
		b.Fatal(err)
	}
	// Warm-up: compile each distinct batch shape once.
	seen := map[[2]int]bool{}
	for _, bt := range batches {
		key := [2]int{bt.Examples, bt.Inputs[0].(*tensors.Tensor).Shape().Dimensions[1]}
		if !seen[key] {
			seen[key] = true
			if _, err := stepper.Step([]training.Batch{bt}, 1e-4); err != nil {
				b.Fatal(err)
			}
		}
	}
	var examples, tokens int
	var flops float64
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuSeconds()
	for i := range b.N {
		for s := range benchSteps {
			bt := batches[(i*benchSteps+s)%len(batches)]
			if _, err := stepper.Step([]training.Batch{bt}, 1e-4); err != nil {
				b.Fatal(err)
			}
			examples += bt.Examples
			tokens += bt.Tokens
			flops += TrainFLOPs(hp, bt.Examples, bt.Inputs[0].(*tensors.Tensor).Shape().Dimensions[1])
		}
	}
	elapsed := time.Since(start).Seconds()
	cpu := cpuSeconds() - cpu0
	b.StopTimer()
	matmul := MatmulGFLOPS(backend)
	b.ReportMetric(float64(examples)/elapsed, "examples/s")
	b.ReportMetric(float64(tokens)/elapsed, "tokens/s")
	b.ReportMetric(flops/elapsed/1e9, "model-GFLOPS")
	b.ReportMetric(matmul, "matmul-GFLOPS")
	b.ReportMetric(float64(examples)/cpu, "examples/cpu-s")
	fmt.Printf("BenchmarkTrainStep: backend %s, %d shard(s), GOMAXPROCS %d, %s, %s d=%d layers=%d heads=%d ffn=%d batch=%d (%d shapes): "+
		"%.1f examples/s, %.0f tokens/s, model %.2f GFLOPS, backend matmul %.2f GFLOPS; "+
		"process CPU %.1fs for %.1fs wall (%.1f examples per CPU-second, %.2f model GFLOP per CPU-second)\n",
		backendName, shards, runtime.GOMAXPROCS(0), source, hp.Architecture, hp.DModel, hp.NumLayers, hp.NumHeads, hp.FFNDim, loop.BatchSize, len(seen),
		float64(examples)/elapsed, float64(tokens)/elapsed, flops/elapsed/1e9, matmul,
		cpu, elapsed, float64(examples)/cpu, flops/cpu/1e9)
}

// TrainFLOPs estimates the floating-point operations of one training step (forward + backward,
// counted as 3x the forward matmul FLOPs) on a batch of rows sentences padded to T tokens.
func TrainFLOPs(hp *Hyperparams, rows, T int) float64 {
	d, f := float64(hp.DModel), float64(hp.FFNDim)
	var fwd float64
	switch hp.Architecture {
	case ArchNgram:
		S := float64(T)
		fwd = S * (2*d*d + 4*d) // attention keys projection and pooling
		fwd += 2 * (2*d + NumPosFeatures) * d
	default:
		S := float64(T + 1)
		perLayer := S*(8*d*d+4*d*f) + 4*S*S*d
		fwd = float64(hp.NumLayers)*perLayer + 2*(d+NumPosFeatures)*d
	}
	return 3 * fwd * float64(rows)
}

// MatmulGFLOPS measures the backend on a [4096,128]x[128,512] float32 matmul (the shape of an FFN
// layer on a 32x128-token batch).
func MatmulGFLOPS(backend interface{ Name() string }) float64 {
	be, _, err := model.Backend()
	if err != nil {
		return 0
	}
	const m, k, n = 4096, 128, 512
	exec := graph.MustNewExec(be, func(a, b *graph.Node) *graph.Node { return graph.MatMul(a, b) })
	a := tensors.FromShape(shapes.Make(dtypes.Float32, m, k))
	bb := tensors.FromShape(shapes.Make(dtypes.Float32, k, n))
	exec.MustExec(a, bb) // compile
	const reps = 20
	start := time.Now()
	for range reps {
		exec.MustExec(a, bb)
	}
	return 2 * m * k * n * reps / time.Since(start).Seconds() / 1e9
}
