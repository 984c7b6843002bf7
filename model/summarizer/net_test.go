package summarizer

import (
	"math"
	"slices"
	"testing"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified.
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	tsmodel "github.com/tracksum/tracksum/model"
)

// toyHyper is a network small enough to build and run in a test in a second.
func toyHyper() Hyperparams {
	return Hyperparams{VocabSize: 40, DModel: 16, Heads: 2, FFNDim: 32, EncoderLayers: 2, DecoderLayers: 2,
		MaxSourceLen: 24, MaxSummaryLen: 12, PadID: 0, BosID: 1, EosID: 2, SepID: 3, CtxID: 4}
}

// toyNet is the decoding network of hyperparameters h over seeded weights (RandomVariables), on
// the backend Load decodes on.
func toyNet(t testing.TB, h Hyperparams) *Net {
	t.Helper()
	net, err := NewNet(decodingBackend(t), h, RandomVariables(h, 11))
	if err != nil {
		t.Fatal(err)
	}
	return net
}

// TestDecodingMatchesTraining checks that the training graph and the decoding network (the step
// graph with its KV cache and the copy mixture, the generation vocabulary) give the same
// probability to every target token.
func TestDecodingMatchesTraining(t *testing.T) {
	backend, _, err := tsmodel.Backend()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc       string
		genIDs     []int32
		numAspects int
	}{
		{desc: "whole vocabulary", genIDs: nil},
		// 33 is outside the generation vocabulary: only copying can produce it (it is not in the
		// source either, so its probability is ~0); 17 and 9 are both generated and copied.
		{desc: "generation vocabulary", genIDs: []int32{2, 5, 9, 17, 20, 21}},
		{desc: "aspect vectors", genIDs: []int32{2, 5, 9, 17, 20, 21}, numAspects: 3},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := toyHyper()
			h.GenIDs = tc.genIDs
			h.NumAspects = tc.numAspects
			const aspect = 2
			src := []int32{5, 9, 3, 17, 17, 22, 4, 30, 31, 9, 5}
			seg := []int32{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}
			tgtIn := []int32{h.BosID, 17, 9, 33, 5, 22}
			tgtOut := []int32{17, 9, 33, 5, 22, h.EosID}
			genIndex := h.genIndex()
			tgtGen, inGen := make([]int32, len(tgtOut)), make([]float32, len(tgtOut))
			for i, id := range tgtOut {
				if gi, ok := genIndex[id]; ok {
					tgtGen[i], inGen[i] = gi, 1
				}
			}

			// The training graph reads the decoding network's seeded weights.
			store := gomlxmodel.NewStore()
			for name, v := range RandomVariables(h, 11) {
				if _, err := store.CreateVariable(tsmodel.ModelScope+"/"+name, v); err != nil {
					t.Fatal(err)
				}
			}
			scope := store.Scope(tsmodel.ModelScope)
			exec, err := gomlxmodel.NewExec(backend, store, func(_ *gomlxmodel.Scope, inputs []*Node) *Node {
				return TargetProbGraph(scope, h, BatchFromInputs(inputs))
			})
			if err != nil {
				t.Fatal(err)
			}
			inputs := []any{[][]int32{src}, [][]int32{seg}, [][]int32{tgtIn}, [][]int32{tgtOut}, [][]int32{tgtGen}, [][]float32{inGen}}
			if h.NumAspects > 0 {
				inputs = append(inputs, []int32{aspect})
			}
			out, err := exec.Call(inputs...)
			if err != nil {
				t.Fatal(err)
			}
			var want []float32
			tensors.MustConstFlatData(out[0], func(flat []float32) { want = append(want, flat...) })

			net := toyNet(t, h)
			st := net.NewState(net.Encode(src, seg, aspect))
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
					t.Errorf("step %d: p(%d) = %g decoding, %g in training", i, tgtOut[i], got, want[i])
				}
			}
		})
	}
}

// TestDecodePastTrainingCap: with summarizer.max_decode_len above max_summary_len the decoder
// feeds positions beyond the trained ones (and beyond the position table) by reusing the last
// trained row, so positions MaxSummaryLen-1 and later give the same embedding input; the sentence
// starts are found for the start bonus (none after [CTX]).
func TestDecodePastTrainingCap(t *testing.T) {
	h := toyHyper()
	if got, want := h.lastTrainedTgtPos(), h.MaxSummaryLen-1; got != want {
		t.Fatalf("lastTrainedTgtPos = %d, want %d", got, want)
	}
	src := []int32{5, 9, 3, 17, 17, 22, 3, 6, 4, 30, 3, 31}
	seg := make([]int32, len(src))
	net := toyNet(t, h)
	enc := net.Encode(src, seg, 0)
	if want := []int{3, 7}; !slices.Equal(enc.starts, want) {
		t.Errorf("sentence starts %v, want %v (none after [CTX])", enc.starts, want)
	}
	net.StartBonus = 2
	st := net.NewState(enc)
	probs := [][]float32{make([]float32, h.VocabSize)}
	n := h.maxPositions() + 5 // past the position table itself
	for i := range n {
		net.Step([]*DecState{st}, []int32{9}, probs)
		var sum float64
		for _, p := range probs[0] {
			sum += float64(p)
		}
		if math.Abs(sum-1) > 1e-4 {
			t.Fatalf("step %d: probabilities sum to %g, want 1", i, sum)
		}
	}
	if st.Len() != n {
		t.Errorf("fed %d tokens, Len() = %d", n, st.Len())
	}
}

// decodingBackend is the backend Load decodes on (tsmodel.DecodingBackend).
func decodingBackend(t testing.TB) compute.Backend {
	t.Helper()
	b, err := tsmodel.DecodingBackend()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
