package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gomlx/compute"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/summarizer"
)

// decodeTol bounds the next-token probabilities of the from-scratch summarizer on the backend
// against the pure-Go backend: the graphs are the same, only the kernels' summation order differs
// (float32; TF32 off).
const decodeTol = 1e-4

func decodeCommand() cli.Command {
	fs := cli.NewFlags("gpucheck decode")
	fs.Int("sources", 7, "sources decoded together (an abstract's aspects)")
	fs.Int("tokens", 48, "tokens generated per source")
	fs.Int("runs", 3, "timed beam searches")
	return cli.Command{
		Name: "gpucheck decode", Synopsis: "[--sources 7 --tokens 48 --runs 3]", Flags: fs,
		Description: "The from-scratch summarizer's graph decoding on the backend (model.DecodingBackend) against the pure-Go " +
			"backend in the same process: the default network with seeded random weights (summarizer.RandomVariables), " +
			"sources of 120 random tokens; a teacher-forced walk (largest next-token probability difference), beam search " +
			"(beam 4: the same tokens?) and its speed. One JSON line.",
		Run: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unexpected arguments %v", args)
			}
			sources, _ := fs.GetInt("sources")
			tokens, _ := fs.GetInt("tokens")
			runs, _ := fs.GetInt("runs")
			if sources < 1 || tokens < 1 || runs < 1 {
				return cli.Usagef("--sources, --tokens and --runs must be positive")
			}
			res, err := checkDecoding(sources, tokens, runs)
			return emitComparison(res, err, "decode: the backend's decoding differs from the go backend's")
		},
	}
}

// checkDecoding runs the comparison of decodeCommand and returns its result row.
func checkDecoding(sources, tokens, runs int) (map[string]any, error) {
	res := map[string]any{"step": "decode", "sources": sources, "tokens": tokens, "tolerance": decodeTol}
	dev, err := model.DecodingBackend()
	if err != nil {
		return res, err
	}
	_, name, _ := model.Backend()
	res["backend"] = name
	ref, err := compute.NewWithConfig(model.GoBackendConfig)
	if err != nil {
		return res, fmt.Errorf("go backend: %w", err)
	}
	c := config.DefaultSummarizer()
	h := summarizer.NewHyperparams(c, 8000, summarizer.SpecialIDs{Pad: 0, Bos: 1, Eos: 2, Sep: 3, Ctx: 4})
	for id := range int32(c.GenVocabSize) {
		h.GenIDs = append(h.GenIDs, id)
	}
	vars := summarizer.RandomVariables(h, 11)
	netDev, err := summarizer.NewNet(dev, h, vars)
	if err != nil {
		return res, err
	}
	netRef, err := summarizer.NewNet(ref, h, vars)
	if err != nil {
		return res, err
	}
	rng := rand.New(rand.NewPCG(5, 6))
	ids, segs := make([][]int32, sources), make([][]int32, sources)
	for i := range ids {
		ids[i], segs[i] = make([]int32, 120), make([]int32, 120)
		for j := range ids[i] {
			ids[i][j] = int32(10 + rng.IntN(h.VocabSize-10))
		}
	}
	aspects := make([]int32, sources)

	// A teacher-forced walk: both networks are fed the same tokens (each source's own, shifted),
	// the distributions compared at every step.
	start := time.Now()
	worst := 0.0
	walk := func(net *summarizer.Net) ([]*summarizer.DecState, [][]float32) {
		var states []*summarizer.DecState
		for _, src := range net.EncodeAll(ids, segs, aspects) {
			states = append(states, net.NewState(src))
		}
		probs := make([][]float32, sources)
		for i := range probs {
			probs[i] = make([]float32, h.VocabSize)
		}
		return states, probs
	}
	devStates, devProbs := walk(netDev)
	refStates, refProbs := walk(netRef)
	for step := range tokens {
		fed := make([]int32, sources)
		for i := range fed {
			fed[i] = h.BosID
			if step > 0 {
				fed[i] = ids[i][(step+i)%len(ids[i])]
			}
		}
		netDev.Step(devStates, fed, devProbs)
		netRef.Step(refStates, fed, refProbs)
		for i := range devProbs {
			for k := range devProbs[i] {
				worst = max(worst, math.Abs(float64(devProbs[i][k]-refProbs[i][k])))
			}
		}
	}
	res["walk_max_prob_diff"], res["walk_seconds"] = worst, time.Since(start).Seconds()

	// Beam search as Summarize runs it, every source to the full length.
	o := decode.Options{BeamSize: 4, MaxLen: tokens + 1, MinLen: tokens + 1, LengthPenalty: 2, NoRepeatNgram: 3, BOS: h.BosID, EOS: h.EosID}
	search := func(net *summarizer.Net) []decode.Hypothesis {
		var states []*summarizer.DecState
		for _, src := range net.EncodeAll(ids, segs, aspects) {
			states = append(states, net.NewState(src))
		}
		return decode.Search(net, states, o)
	}
	start = time.Now()
	got := search(netDev) // compiles the programs of the search's shapes
	res["first_search_seconds"] = time.Since(start).Seconds()
	want := search(netRef)
	same := 0
	for i := range want {
		if slices.Equal(got[i].Tokens, want[i].Tokens) {
			same++
		}
	}
	res["beam_identical_sources"] = same
	start = time.Now()
	for range runs {
		search(netDev)
	}
	elapsed := time.Since(start).Seconds()
	res["tokens_per_sec"] = float64(runs*sources*tokens) / elapsed
	res["ok"] = worst <= decodeTol && same == sources
	return res, nil
}
