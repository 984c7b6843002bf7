package summarizer

import (
	"math"
	"slices"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified.
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	tsmodel "github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/decode"
)

// parityTol is how far the graph network's outputs may be from the Go network's: the two sum in
// different orders (float32), nothing else differs.
const parityTol = 1e-5

// toyNets returns the Go and the graph network over the same randomly initialised weights.
func toyNets(t testing.TB, h Hyperparams) (host, graph *Net) {
	t.Helper()
	backend, _, err := tsmodel.Backend()
	if err != nil {
		t.Fatal(err)
	}
	// One call of the training graph creates every variable with its initial (random) value.
	store := gomlxmodel.NewStore()
	scope := store.Scope(tsmodel.ModelScope)
	exec, err := gomlxmodel.NewExec(backend, store, func(_ *gomlxmodel.Scope, inputs []*Node) *Node {
		return TargetProbGraph(scope, h, BatchFromInputs(inputs))
	})
	if err != nil {
		t.Fatal(err)
	}
	one := [][]int32{{5}}
	args := []any{one, [][]int32{{0}}, one, one, [][]int32{{0}}, [][]float32{{0}}}
	if h.NumAspects > 0 {
		args = append(args, []int32{0})
	}
	if _, err := exec.Call(args...); err != nil {
		t.Fatal(err)
	}
	vars := map[string]*tensors.Tensor{}
	for v := range store.IterVariables() {
		if name, ok := strings.CutPrefix(v.Path(), tsmodel.ModelScope+"/"); ok {
			vars[name] = v.MustValue()
		}
	}
	if host, err = NewNet(h, vars); err != nil {
		t.Fatal(err)
	}
	if graph, err = NewGraphNet(backend, h, vars); err != nil {
		t.Fatal(err)
	}
	return host, graph
}

// paritySources are sources of different lengths (one batch, one length bucket) with tracked
// sentences for the start bonus and repeated tokens for the follow and chain bonuses.
var paritySources = []struct{ ids, seg []int32 }{
	{ids: []int32{5, 9, 3, 17, 17, 22, 3, 6, 4, 30, 31, 9, 5}, seg: []int32{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}},
	{ids: []int32{7, 3, 9, 17, 22, 33, 3, 21, 20, 5}, seg: make([]int32, 10)},
	{ids: []int32{8, 3, 25, 26, 27, 28, 29, 9, 17, 22, 5, 9, 17, 22, 3, 11, 12, 13, 14, 15, 16, 4, 9}, seg: make([]int32, 23)},
}

// TestGraphNetMatchesNet feeds the same tokens to the Go network (forward.go) and to the graph
// network (graphnet.go) and checks that the network's outputs (logits, copy scores, gate terms;
// relative to their size) and every next-token distribution agree to parityTol, with
// the decoding bonuses on, past the cache bucket and past the trained positions, on the network
// variants of TestGraphMatchesForward.
func TestGraphNetMatchesNet(t *testing.T) {
	tests := []struct {
		desc       string
		genIDs     []int32
		numAspects int
		pow2       bool
	}{
		{desc: "whole vocabulary"},
		{desc: "generation vocabulary", genIDs: []int32{2, 5, 9, 17, 20, 21}},
		{desc: "aspect vectors", genIDs: []int32{2, 5, 9, 17, 20, 21}, numAspects: 3},
		// The shapes of an XLA backend on the go one: 3 sources run as 4 rows (one repeated and
		// dropped), caches of 16, 32, 64 slots.
		{desc: "powers of two", genIDs: []int32{2, 5, 9, 17, 20, 21}, numAspects: 3, pow2: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := toyHyper()
			h.GenIDs, h.NumAspects = tc.genIDs, tc.numAspects
			host, graph := toyNets(t, h)
			graph.graph.pow2 = tc.pow2
			for _, n := range []*Net{host, graph} {
				n.ChainBonus, n.StartBonus = 1.5, 2
				n.Suppress([]int32{h.PadID, h.SepID})
			}
			var ids, segs [][]int32
			var aspects []int32
			for i, s := range paritySources {
				ids, segs, aspects = append(ids, s.ids), append(segs, s.seg), append(aspects, int32(i%(h.NumAspects+1)))
			}
			var hs, gs []*DecState
			for _, src := range host.EncodeAll(ids, segs, aspects) {
				hs = append(hs, host.NewState(src))
			}
			for _, src := range graph.EncodeAll(ids, segs, aspects) {
				gs = append(gs, graph.NewState(src))
			}
			hp, gp := make([][]float32, len(hs)), make([][]float32, len(gs))
			for i := range hp {
				hp[i], gp[i] = make([]float32, h.VocabSize), make([]float32, h.VocabSize)
			}
			worst, worstLogit := 0.0, 0.0
			// 2·cacheBucket+3 tokens: the cache grows twice; the position passes maxPositions.
			for step := range 2*cacheBucket + 3 {
				tokens := make([]int32, len(hs))
				for i := range tokens {
					tokens[i] = h.BosID
					if step > 0 {
						src := paritySources[i].ids
						tokens[i] = src[(step+i)%len(src)] // walks the source: chains form
					}
				}
				ho, gro := host.network(hs, tokens), graph.network(gs, tokens)
				for i := range ho {
					src := paritySources[i].ids
					for _, v := range []struct {
						name      string
						want, got []float32
					}{
						{"logit", ho[i].logits, gro[i].logits},
						{"copy score", ho[i].copyScores, gro[i].copyScores[:len(src)]},
						{"gate term", []float32{ho[i].gateS, ho[i].gateX}, []float32{gro[i].gateS, gro[i].gateX}},
					} {
						if len(v.got) != len(v.want) {
							t.Fatalf("step %d, source %d: %d %ss through the graph, %d in Go", step, i, len(v.got), v.name, len(v.want))
						}
						for k := range v.want {
							d := math.Abs(float64(v.got[k] - v.want[k]))
							worstLogit = max(worstLogit, d)
							if d > parityTol*max(1, math.Abs(float64(v.want[k]))) {
								t.Fatalf("step %d, source %d: %s %d = %g in Go, %g through the graph", step, i, v.name, k, v.want[k], v.got[k])
							}
						}
					}
					host.mix(hs[i], tokens[i], ho[i], hp[i])
					graph.mix(gs[i], tokens[i], gro[i], gp[i])
				}
				for i := range hp {
					for id := range hp[i] {
						d := math.Abs(float64(hp[i][id] - gp[i][id]))
						worst = max(worst, d)
						if d > parityTol {
							t.Fatalf("step %d, source %d: p(%d) = %g in Go, %g through the graph", step, i, id, hp[i][id], gp[i][id])
						}
					}
				}
			}
			t.Logf("largest difference: %.2g in a logit, copy score or gate term, %.2g in a probability", worstLogit, worst)
		})
	}
}

// TestGraphNetDecodesLikeNet runs the shared search (greedy and beam, which clones states and
// whose live hypotheses shrink) over both networks and checks that they write the same tokens,
// with the go backend's shapes and with an XLA backend's (powers of two).
func TestGraphNetDecodesLikeNet(t *testing.T) {
	h := toyHyper()
	h.GenIDs = []int32{2, 5, 9, 17, 20, 21}
	host, graph := toyNets(t, h)
	for _, n := range []*Net{host, graph} {
		n.ChainBonus, n.StartBonus = 1.5, 2
		n.Suppress([]int32{h.PadID, h.SepID})
	}
	for _, c := range []struct {
		beam int
		pow2 bool
	}{{1, false}, {3, false}, {3, true}} {
		beam := c.beam
		graph.graph.pow2 = c.pow2
		o := decode.Options{BeamSize: beam, MaxLen: 2*cacheBucket + 4, MinLen: 1, LengthPenalty: 1, NoRepeatNgram: 3, BOS: h.BosID, EOS: h.EosID}
		run := func(n *Net) []decode.Hypothesis {
			var ids, segs [][]int32
			for _, s := range paritySources {
				ids, segs = append(ids, s.ids), append(segs, s.seg)
			}
			var states []*DecState
			for _, src := range n.EncodeAll(ids, segs, make([]int32, len(ids))) {
				states = append(states, n.NewState(src))
			}
			return decode.Search(n, states, o)
		}
		want, got := run(host), run(graph)
		for i := range want {
			if !slices.Equal(got[i].Tokens, want[i].Tokens) {
				t.Errorf("beam %d (powers of two: %v), source %d: graph %v, Go %v", beam, c.pow2, i, got[i].Tokens, want[i].Tokens)
			}
			if math.Abs(got[i].LogProb-want[i].LogProb) > 1e-3 {
				t.Errorf("beam %d (powers of two: %v), source %d: log-probability %g through the graph, %g in Go", beam, c.pow2, i, got[i].LogProb, want[i].LogProb)
			}
		}
	}
}
