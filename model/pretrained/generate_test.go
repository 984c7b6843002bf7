package pretrained

import (
	"math"
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
)

// genPrompts are prompts of different lengths, so that batching left-pads all but the longest.
var genPrompts = [][]int32{{1, 5, 9, 13, 17}, {1, 6}, {1, 8, 3, 4, 40, 41, 42, 43, 44, 45, 46, 47, 48, 20, 21, 22, 23, 24}, {1}}

// TestGenerateBatched: the prompts decoded together (left-padded, one batched step per token) give
// exactly what each gives decoded alone, greedy, with beam search and sampling.
func TestGenerateBatched(t *testing.T) {
	m := tinyLM(t)
	g, err := newGenerator(m, []int32{2})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []GenOptions{
		{BeamSize: 1, MaxNewTokens: 12},
		{BeamSize: 4, MaxNewTokens: 10, LengthPenalty: 1},
		{BeamSize: 3, MaxNewTokens: 9, NoRepeatNgram: 2},
		{Temperature: 0.9, TopP: 0.9, MaxNewTokens: 12, Seed: 5},
	} {
		together, err := g.Generate(genPrompts, o)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range genPrompts {
			alone, err := g.Generate([][]int32{p}, o)
			if err != nil {
				t.Fatal(err)
			}
			// Sampling draws prompt i from stream i: alone, the prompt is stream 0.
			if o.Temperature > 0 && i > 0 {
				continue
			}
			if !slices.Equal(together[i], alone[0]) {
				t.Errorf("%+v prompt %d: together %v, alone %v", o, i, together[i], alone[0])
			}
			if len(together[i]) == 0 {
				t.Errorf("%+v prompt %d: nothing generated", o, i)
			}
		}
	}
}

// TestGenerateGreedyMatchesFullForward: each greedy token is the argmax of the full forward pass
// (no cache, no padding) over the prompt and the tokens generated before it.
func TestGenerateGreedyMatchesFullForward(t *testing.T) {
	m := tinyLM(t)
	g, err := newGenerator(m, []int32{2})
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Generate(genPrompts, GenOptions{BeamSize: 1, MaxNewTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	full, err := gomlxmodel.NewExec(m.backend, m.store, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
		hidden := m.dec.Hidden(scope, in[0], OnesLike(maskOf(in[0])))
		return []*Node{m.dec.Logits(scope, hidden)}
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range genPrompts {
		seq := slices.Clone(p)
		for k, want := range out[i] {
			res, err := full.Call(tensors.FromFlatDataAndDimensions(seq, 1, len(seq)))
			if err != nil {
				t.Fatal(err)
			}
			var best int32
			tensors.ConstFlatData(res[0], func(flat []float32) {
				last := flat[(len(seq)-1)*g.vocab : len(seq)*g.vocab]
				bestP := float32(math.Inf(-1))
				for id, v := range last {
					if v > bestP {
						best, bestP = int32(id), v
					}
				}
			})
			if best != want {
				t.Fatalf("prompt %d token %d: generated %d, full forward's argmax %d", i, k, want, best)
			}
			seq = append(seq, want)
		}
	}
}

// TestGenerateBatchedProbabilities: the distributions behind TestGenerateBatched, after the
// prompt and after each fed token, agree to 1e-5 between each prompt alone and the prompts
// left-padded in one batch (argmax checks alone would miss a small shift of positions).
func TestGenerateBatchedProbabilities(t *testing.T) {
	m := tinyLM(t)
	g, err := newGenerator(m, []int32{2})
	if err != nil {
		t.Fatal(err)
	}
	together, err := g.start(genPrompts, 8)
	if err != nil {
		t.Fatal(err)
	}
	alone := make([]*genState, len(genPrompts))
	for i, p := range genPrompts {
		st, err := g.start([][]int32{p}, 8)
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = st[0]
	}
	pa, pb := make([][]float32, len(genPrompts)), make([][]float32, len(genPrompts))
	for i := range genPrompts {
		pa[i], pb[i] = alone[i].first, together[i].first
	}
	for step, tok := range []int32{7, 30, 11, -1} {
		for i := range genPrompts {
			for k := range pa[i] {
				if d := math.Abs(float64(pa[i][k] - pb[i][k])); d > 1e-5 {
					t.Fatalf("prompt %d after %d fed tokens: token %d probability %g alone, %g batched", i, step, k, pa[i][k], pb[i][k])
				}
			}
		}
		if tok < 0 {
			break
		}
		toks := slices.Repeat([]int32{tok}, len(genPrompts))
		if pb, err = g.advance(together, toks); err != nil {
			t.Fatal(err)
		}
		for i := range genPrompts {
			p, err := g.advance(alone[i:i+1], toks[:1])
			if err != nil {
				t.Fatal(err)
			}
			pa[i] = p[0]
		}
	}
}
