package summarizer

import (
	"math"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified.
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	tsmodel "github.com/tracksum/tracksum/model"
)

// toyHyper is a network small enough to build and run in a test in a second.
func toyHyper() Hyper {
	return Hyper{VocabSize: 40, DModel: 16, Heads: 2, FFNDim: 32, EncoderLayers: 2, DecoderLayers: 2,
		MaxSourceLen: 24, MaxSummaryLen: 12, PadID: 0, BosID: 1, EosID: 2, SepID: 3, CtxID: 4}
}

// netFromStore copies a store's model variables into a Go Net.
func netFromStore(t *testing.T, h Hyper, store *gomlxmodel.Store) *Net {
	t.Helper()
	vars := map[string]*tensors.Tensor{}
	for v := range store.IterVariables() {
		name, ok := strings.CutPrefix(v.Path(), tsmodel.ModelScope+"/")
		if !ok {
			continue
		}
		vars[name] = v.MustValue()
	}
	n, err := NewNet(h, vars)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGraphMatchesForward checks that the training graph and the Go inference code (KV cache,
// copy mixture) give the same probability to every target token.
func TestGraphMatchesForward(t *testing.T) {
	backend, _, err := tsmodel.Backend()
	if err != nil {
		t.Fatal(err)
	}
	h := toyHyper()
	src := []int32{5, 9, 3, 17, 17, 22, 4, 30, 31, 9, 5}
	seg := []int32{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}
	tgtIn := []int32{h.BosID, 17, 9, 33, 5}
	tgtOut := []int32{17, 9, 33, 5, h.EosID}

	store := gomlxmodel.NewStore()
	scope := store.Scope(tsmodel.ModelScope)
	exec, err := gomlxmodel.NewExec(backend, store, func(_ *gomlxmodel.Scope, inputs []*Node) *Node {
		return TargetProbGraph(scope, h, Batch{Src: inputs[0], Seg: inputs[1], TgtIn: inputs[2], TgtOut: inputs[3]})
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Call([][]int32{src}, [][]int32{seg}, [][]int32{tgtIn}, [][]int32{tgtOut})
	if err != nil {
		t.Fatal(err)
	}
	var want []float32
	tensors.MustConstFlatData(out[0], func(flat []float32) { want = append(want, flat...) })

	net := netFromStore(t, h, store)
	st := net.NewState(net.Encode(src, seg))
	probs := [][]float32{make([]float32, h.VocabSize)}
	for i, tok := range tgtIn {
		net.Step([]*DecState{st}, []int32{tok}, probs)
		var sum float64
		for _, p := range probs[0] {
			sum += float64(p)
		}
		if math.Abs(sum-1) > 1e-4 {
			t.Errorf("step %d: probabilities sum to %g, want 1", i, sum)
		}
		got := probs[0][tgtOut[i]]
		if math.Abs(float64(got-want[i])) > 1e-4*max(1, math.Abs(float64(want[i]))) {
			t.Errorf("step %d: p(%d) = %g in Go, %g in the graph", i, tgtOut[i], got, want[i])
		}
	}
}
