package summarizer

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified.
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	tsmodel "github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/training"
)

// shardSteps runs three optimizer steps of a small summarizer (dropout on) with the given number
// of data-parallel shards and returns the step losses and the model variables afterwards.
func shardSteps(t *testing.T, shards int) ([]float64, map[string][]float32) {
	t.Helper()
	backend, _, err := tsmodel.Backend()
	if err != nil {
		t.Fatal(err)
	}
	h := Hyperparams{VocabSize: 200, DModel: 32, Heads: 2, FFNDim: 64, EncoderLayers: 1, DecoderLayers: 1, Dropout: 0.2,
		MaxSourceLen: 64, MaxSummaryLen: 24, PadID: 0, BosID: 1, EosID: 2, SepID: 3, CtxID: 4, NumAspects: 3}
	for id := range int32(60) {
		h.GenIDs = append(h.GenIDs, id)
	}
	// Summaries of very different lengths, so that the shards hold different numbers of target
	// tokens: the combination must weigh them by tokens, not by examples.
	rng := rand.New(rand.NewPCG(5, 6))
	exs := make([]Example, 7)
	for i := range exs {
		src, tgt := make([]int32, 10+rng.IntN(30)), make([]int32, 1+(i%4)*5)
		for j := range src {
			src[j] = int32(10 + rng.IntN(190))
		}
		for j := range tgt {
			tgt[j] = int32(10 + rng.IntN(190))
		}
		exs[i] = Example{Src: src, Seg: make([]int32, len(src)), Tgt: tgt, Aspect: int32(i % 4)}
	}
	store := gomlxmodel.NewStore()
	if err := store.SetRNGStateFromSeed(9); err != nil {
		t.Fatal(err)
	}
	loop := config.DefaultSummarizer().Train
	st, err := training.NewStepper(training.Options{Backend: backend, Store: store, Loop: loop, Seed: 9,
		Shards: shards, Split: h.SplitBatch,
		Loss: func(scope *gomlxmodel.Scope, inputs []*Node) *Node {
			return LossGraph(scope, h, BatchFromInputs(inputs))
		}})
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for _, b := range makeBatches(h, exs, len(exs), nil)[:1] {
		for range 3 {
			loss, err := st.Step([]training.Batch{b}, 1e-3)
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, loss)
		}
	}
	vars := map[string][]float32{}
	for v := range store.IterVariables() {
		if strings.HasPrefix(v.Path(), "/"+tsmodel.ModelScope+"/") {
			val, err := v.Value()
			if err != nil {
				t.Fatal(err)
			}
			vars[v.Path()] = tensors.MustCopyFlatData[float32](val)
		}
	}
	return losses, vars
}

// TestShardedStep checks that data-parallel steps (2 and 3 shards, dropout drawn as the full
// batch draws it) give the unsharded step's losses and variables up to float rounding.
func TestShardedStep(t *testing.T) {
	wantLoss, wantVars := shardSteps(t, 1)
	for _, shards := range []int{2, 3} {
		loss, vars := shardSteps(t, shards)
		for i := range wantLoss {
			if d := math.Abs(loss[i] - wantLoss[i]); d > 1e-5*(1+math.Abs(wantLoss[i])) {
				t.Errorf("%d shards: step %d loss %.7f, want %.7f", shards, i+1, loss[i], wantLoss[i])
			}
		}
		if len(vars) != len(wantVars) {
			t.Fatalf("%d shards: %d variables, want %d", shards, len(vars), len(wantVars))
		}
		for name, want := range wantVars {
			got := vars[name]
			for j := range want {
				if d := math.Abs(float64(got[j] - want[j])); d > 1e-5*(1+math.Abs(float64(want[j]))) {
					t.Fatalf("%d shards: %s[%d] = %g, want %g", shards, name, j, got[j], want[j])
				}
			}
		}
	}
}
