package summarizer

import (
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/tracksum/tracksum/model/decode"
)

// paritySources are sources of different lengths (one batch, one length bucket) with tracked
// sentences for the start bonus and repeated tokens for the follow and chain bonuses.
var paritySources = []struct{ ids, seg []int32 }{
	{ids: []int32{5, 9, 3, 17, 17, 22, 3, 6, 4, 30, 31, 9, 5}, seg: []int32{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}},
	{ids: []int32{7, 3, 9, 17, 22, 33, 3, 21, 20, 5}, seg: make([]int32, 10)},
	{ids: []int32{8, 3, 25, 26, 27, 28, 29, 9, 17, 22, 5, 9, 17, 22, 3, 11, 12, 13, 14, 15, 16, 4, 9}, seg: make([]int32, 23)},
}

// TestBatchedLikeAlone decodes the parity sources one at a time and all together (one step graph
// call per step for all their hypotheses: rows grouped by source, caches of different lengths
// once hypotheses finish) and checks that they get the same tokens, greedy and beam, with the
// Go backend's shapes and with an XLA backend's (powers of two: padded rows and sources).
func TestBatchedLikeAlone(t *testing.T) {
	h := toyHyper()
	h.GenIDs = []int32{2, 5, 9, 17, 20, 21}
	net := toyNet(t, h)
	net.ChainBonus, net.StartBonus = 1.5, 2
	net.Suppress([]int32{h.PadID, h.SepID})
	for _, c := range []struct {
		beam int
		pow2 bool
	}{{1, false}, {3, false}, {3, true}} {
		net.graph.pow2 = c.pow2
		o := decode.Options{BeamSize: c.beam, MaxLen: 2*cacheBucket + 4, MinLen: 1, LengthPenalty: 1, NoRepeatNgram: 3, BOS: h.BosID, EOS: h.EosID}
		run := func(sources []int) []decode.Hypothesis {
			var ids, segs [][]int32
			for _, i := range sources {
				ids, segs = append(ids, paritySources[i].ids), append(segs, paritySources[i].seg)
			}
			var states []*DecState
			for _, src := range net.EncodeAll(ids, segs, make([]int32, len(ids))) {
				states = append(states, net.NewState(src))
			}
			return decode.Search(net, states, o)
		}
		together := run([]int{0, 1, 2})
		for i := range paritySources {
			alone := run([]int{i})[0]
			if !slices.Equal(alone.Tokens, together[i].Tokens) {
				t.Errorf("beam %d (powers of two: %v), source %d: alone %v, batched %v", c.beam, c.pow2, i, alone.Tokens, together[i].Tokens)
			}
			if math.Abs(alone.LogProb-together[i].LogProb) > 1e-4 {
				t.Errorf("beam %d (powers of two: %v), source %d: log-probability %g alone, %g batched", c.beam, c.pow2, i, alone.LogProb, together[i].LogProb)
			}
		}
	}
}

// TestConcurrentDecoding decodes the parity sources from several goroutines at once (infer's
// workers share one Net) and checks that each gets the tokens of a decoding alone; run with -race
// it checks the sharing too.
func TestConcurrentDecoding(t *testing.T) {
	h := toyHyper()
	h.GenIDs = []int32{2, 5, 9, 17, 20, 21}
	net := toyNet(t, h)
	o := decode.Options{BeamSize: 3, MaxLen: 2*cacheBucket + 4, MinLen: 1, LengthPenalty: 1, NoRepeatNgram: 3, BOS: h.BosID, EOS: h.EosID}
	run := func(i int) []int32 {
		src := net.Encode(paritySources[i].ids, paritySources[i].seg, 0)
		return decode.Search(net, []*DecState{net.NewState(src)}, o)[0].Tokens
	}
	want := make([][]int32, len(paritySources))
	for i := range want {
		want[i] = run(i)
	}
	var wg sync.WaitGroup
	got := make([][]int32, 4*len(paritySources))
	for k := range got {
		wg.Go(func() { got[k] = run(k % len(paritySources)) })
	}
	wg.Wait()
	for k, g := range got {
		if !slices.Equal(g, want[k%len(paritySources)]) {
			t.Errorf("goroutine %d: %v, alone %v", k, g, want[k%len(paritySources)])
		}
	}
}
