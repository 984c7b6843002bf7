package summarizer

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tracksum/tracksum/internal/golden"
	"github.com/tracksum/tracksum/model/decode"
)

// stepRecord is what the network gives one source at one step of the golden walk.
type stepRecord struct {
	Probs []float32 `json:"probs"` // the copy-augmented next-token distribution
}

// goldenCases are the network variants of the golden file.
var goldenCases = []struct {
	name       string
	genIDs     []int32
	numAspects int
}{
	{name: "whole vocabulary"},
	{name: "generation vocabulary and aspect vectors", genIDs: []int32{2, 5, 9, 17, 20, 21}, numAspects: 3},
}

// goldenWalk feeds the parity sources' token walk (2·cacheBucket+3 steps: the cache grows twice
// and the position passes the table) to net with the decoding bonuses on and records each step.
func goldenWalk(net *Net) [][]stepRecord {
	h := net.H
	net.ChainBonus, net.StartBonus = 1.5, 2
	net.Suppress([]int32{h.PadID, h.SepID})
	var ids, segs [][]int32
	var aspects []int32
	for i, s := range paritySources {
		ids, segs, aspects = append(ids, s.ids), append(segs, s.seg), append(aspects, int32(i%(h.NumAspects+1)))
	}
	var states []*DecState
	for _, src := range net.EncodeAll(ids, segs, aspects) {
		states = append(states, net.NewState(src))
	}
	var out [][]stepRecord
	for step := range 2*cacheBucket + 3 {
		tokens := make([]int32, len(states))
		for i := range tokens {
			tokens[i] = h.BosID
			if step > 0 {
				src := paritySources[i].ids
				tokens[i] = src[(step+i)%len(src)] // walks the source: chains form
			}
		}
		probs := make([][]float32, len(states))
		recs := make([]stepRecord, len(states))
		for i := range probs {
			probs[i] = make([]float32, h.VocabSize)
			recs[i].Probs = probs[i]
		}
		net.Step(states, tokens, probs)
		out = append(out, recs)
	}
	return out
}

// goldenJSON reads the golden file at path into want and reports true, or with -update writes
// got there and reports false (nothing to compare).
func goldenJSON(t *testing.T, path string, got, want any) bool {
	t.Helper()
	if golden.Updating() {
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if err := json.Unmarshal(b, want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return true
}

// goldenTol is the largest difference allowed from the golden numbers, relative to max(1, |x|).
const goldenTol = 1e-5

// TestNetworkGolden checks the decoding network's copy-augmented distributions (with the decoding
// bonuses, past the cache bucket and past the trained positions) against
// testdata/network.golden.json, written from the Go network of the release before graph decoding,
// commit cda23b0 (go test -run NetworkGolden -update rewrites it). The file also holds that
// network's logits, copy scores and gate terms, which the step graph no longer returns (it
// computes the mixture itself).
func TestNetworkGolden(t *testing.T) {
	path := filepath.Join("testdata", "network.golden.json")
	got := map[string][][]stepRecord{}
	for _, c := range goldenCases {
		h := toyHyper()
		h.GenIDs, h.NumAspects = c.genIDs, c.numAspects
		got[c.name] = goldenWalk(toyNet(t, h))
	}
	var want map[string][][]stepRecord
	if !goldenJSON(t, path, got, &want) {
		return
	}
	for _, c := range goldenCases {
		worst := 0.0
		w, g := want[c.name], got[c.name]
		if len(w) != len(g) {
			t.Fatalf("%s: %d steps, golden %d", c.name, len(g), len(w))
		}
		for step := range w {
			for i := range w[step] {
				for _, v := range []struct {
					name      string
					want, got []float32
				}{
					{"probability", w[step][i].Probs, g[step][i].Probs},
				} {
					if len(v.got) != len(v.want) {
						t.Fatalf("%s, step %d, source %d: %d %ss, golden %d", c.name, step, i, len(v.got), v.name, len(v.want))
					}
					for k := range v.want {
						d := math.Abs(float64(v.got[k] - v.want[k]))
						worst = max(worst, d/max(1, math.Abs(float64(v.want[k]))))
						if d > goldenTol*max(1, math.Abs(float64(v.want[k]))) {
							t.Fatalf("%s, step %d, source %d: %s %d = %g, golden %g", c.name, step, i, v.name, k, v.got[k], v.want[k])
						}
					}
				}
			}
		}
		t.Logf("%s: largest relative difference from the golden numbers %.2g", c.name, worst)
	}
}

// decodeRecord is the output of one search over the parity sources.
type decodeRecord struct {
	Tokens   [][]int32 `json:"tokens"`
	LogProbs []float64 `json:"log_probs"`
}

// decodeSearches are the searches of the decoding golden file: greedy and beam (which clones
// states, and whose live hypotheses shrink as they finish), with the Go backend's shapes and
// with an XLA backend's (powers of two).
var decodeSearches = []struct {
	name string
	beam int
	pow2 bool
}{{"greedy", 1, false}, {"beam 3", 3, false}, {"beam 3, powers of two", 3, true}}

// TestDecodeGolden runs the shared search over the seeded toy network and checks that it writes
// the tokens of testdata/decode.golden.json (written from the Go network of the release before
// graph decoding, commit 4f9a476; go test -run DecodeGolden -update rewrites it), with
// log-probabilities within 1e-4.
func TestDecodeGolden(t *testing.T) {
	path := filepath.Join("testdata", "decode.golden.json")
	h := toyHyper()
	h.GenIDs = []int32{2, 5, 9, 17, 20, 21}
	got := map[string]decodeRecord{}
	for _, c := range decodeSearches {
		net := toyNet(t, h)
		net.graph.pow2 = c.pow2
		net.ChainBonus, net.StartBonus = 1.5, 2
		net.Suppress([]int32{h.PadID, h.SepID})
		o := decode.Options{BeamSize: c.beam, MaxLen: 2*cacheBucket + 4, MinLen: 1, LengthPenalty: 1, NoRepeatNgram: 3, BOS: h.BosID, EOS: h.EosID}
		var ids, segs [][]int32
		for _, s := range paritySources {
			ids, segs = append(ids, s.ids), append(segs, s.seg)
		}
		var states []*DecState
		for _, src := range net.EncodeAll(ids, segs, make([]int32, len(ids))) {
			states = append(states, net.NewState(src))
		}
		var rec decodeRecord
		for _, hyp := range decode.Search(net, states, o) {
			rec.Tokens, rec.LogProbs = append(rec.Tokens, hyp.Tokens), append(rec.LogProbs, hyp.LogProb)
		}
		got[c.name] = rec
	}
	var want map[string]decodeRecord
	if !goldenJSON(t, path, got, &want) {
		return
	}
	for _, c := range decodeSearches {
		w, g := want[c.name], got[c.name]
		if len(w.Tokens) != len(g.Tokens) {
			t.Fatalf("%s: %d outputs, golden %d", c.name, len(g.Tokens), len(w.Tokens))
		}
		for i := range w.Tokens {
			if !slices.Equal(g.Tokens[i], w.Tokens[i]) {
				t.Errorf("%s, source %d: %v, golden %v", c.name, i, g.Tokens[i], w.Tokens[i])
			}
			if math.Abs(g.LogProbs[i]-w.LogProbs[i]) > 1e-4 {
				t.Errorf("%s, source %d: log-probability %g, golden %g", c.name, i, g.LogProbs[i], w.LogProbs[i])
			}
		}
	}
}
