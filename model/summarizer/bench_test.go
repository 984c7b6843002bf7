package summarizer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified.
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	tsmodel "github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/training"
)

// defaultHyper is the default config's network with an 8000-token vocabulary and a generation
// vocabulary of the default size.
func defaultHyper() Hyperparams {
	c := config.DefaultSummarizer()
	h := NewHyperparams(c, 8000, SpecialIDs{Pad: 0, Bos: 1, Eos: 2, Sep: 3, Ctx: 4})
	for id := range int32(c.GenVocabSize) {
		h.GenIDs = append(h.GenIDs, id)
	}
	return h
}

// randomExamples makes n examples with sources of srcLen and summaries of tgtLen random tokens.
func randomExamples(h Hyperparams, n, srcLen, tgtLen int) []Example {
	rng := rand.New(rand.NewPCG(3, 4))
	out := make([]Example, n)
	for i := range out {
		src, tgt := make([]int32, srcLen), make([]int32, tgtLen)
		for j := range src {
			src[j] = int32(10 + rng.IntN(h.VocabSize-10))
		}
		for j := range tgt {
			tgt[j] = int32(10 + rng.IntN(h.VocabSize-10))
		}
		out[i] = Example{Src: src, Seg: make([]int32, srcLen), Tgt: tgt}
	}
	return out
}

// cpuSeconds is the user+system CPU time of this process: on a shared, loaded machine it shows
// what a step costs independently of how much CPU the scheduler granted.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkTrainStep times one optimizer step of the default network on a batch of 16 examples
// (source 150 tokens, summary 45: padded to the length buckets 160 and 48), with the default
// generation vocabulary (2000 ids) and with the whole 8000-id vocabulary in the output softmax,
// data-parallel as training runs it (training.DataParallelShards: 2 shards on the Go backend;
// TRACKSUM_BENCH_SHARDS overrides). tools/bench/torch_summarizer_anchor.py is the PyTorch CPU
// reference of the same step:
//
//	GOEXPERIMENT=simd go test ./model/summarizer -run '^$' -bench TrainStep -benchtime 3x
func BenchmarkTrainStep(b *testing.B) {
	backend, _, err := tsmodel.Backend()
	if err != nil {
		b.Fatal(err)
	}
	shards := training.DataParallelShards(backend)
	if v := os.Getenv("TRACKSUM_BENCH_SHARDS"); v != "" {
		if shards, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	for _, full := range []bool{false, true} {
		name := "gen=2000"
		h := defaultHyper()
		if full {
			name, h.GenIDs = "gen=all", nil
		}
		b.Run(name, func(b *testing.B) {
			loop := config.DefaultSummarizer().Train
			st, err := training.NewStepper(training.Options{Backend: backend, Store: gomlxmodel.NewStore(), Loop: loop,
				Seed: 1, Shards: shards, Split: h.SplitBatch,
				Loss: func(scope *gomlxmodel.Scope, inputs []*Node) *Node {
					return LossGraph(scope, h, BatchFromInputs(inputs))
				}})
			if err != nil {
				b.Fatal(err)
			}
			exs := randomExamples(h, 16, 150, 45)
			idx := make([]int, len(exs))
			for i := range idx {
				idx[i] = i
			}
			batch := padBatch(h, h.genIndex(), exs, idx)
			if _, err := st.Step([]training.Batch{batch}, 1e-4); err != nil { // compile outside the timing
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu0 := cpuSeconds()
			for range b.N {
				if _, err := st.Step([]training.Batch{batch}, 1e-4); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuSeconds() - cpu0
			b.ReportMetric(float64(16*b.N)/b.Elapsed().Seconds(), "examples/s")
			b.ReportMetric(float64(16*b.N)/cpu, "examples/cpu-s")
			b.ReportMetric(float64(shards), "shards")
		})
	}
}

// BenchmarkDecode generates n tokens for 7 sources at once (the 7 aspects of an abstract, sources
// of 120 tokens; "-1src": one source alone), one hypothesis each, encoding included, through the
// decoding graphs on the process's backend; it reports generated tokens per second and per
// CPU-second. With the KV cache the time per token stays flat as n grows; re-running the decoder
// over the whole prefix at each step ("recompute", what decoding without a cache costs) grows
// linearly with n:
//
//	GOEXPERIMENT=simd go test ./model/summarizer -run '^$' -bench Decode -benchtime 3x
func BenchmarkDecode(b *testing.B) {
	net := toyNet(b, defaultHyper())
	h := net.H
	ids, segs, aspects := benchSources(h)
	probs := make([][]float32, len(ids))
	for i := range probs {
		probs[i] = make([]float32, h.VocabSize)
	}
	tokens := make([]int32, len(ids))
	decodeN := func(n, sources int) {
		var states []*DecState
		for _, src := range net.EncodeAll(ids[:sources], segs[:sources], aspects[:sources]) {
			states = append(states, net.NewState(src))
		}
		for t := range n {
			for i := range tokens {
				tokens[i] = int32(10 + t)
			}
			net.Step(states, tokens[:sources], probs[:sources])
		}
	}
	// report gives the figures of perIter generated tokens per iteration.
	report := func(b *testing.B, perIter int, cpu float64) {
		generated := float64(b.N * perIter)
		b.ReportMetric(generated/b.Elapsed().Seconds(), "tokens/s")
		b.ReportMetric(generated/cpu, "tokens/cpu-s")
		b.ReportMetric(float64(b.Elapsed().Microseconds())/generated, "µs/token")
	}
	for _, n := range []int{16, 32, 63} {
		for _, sources := range []int{len(ids), 1} {
			name := fmt.Sprintf("cached/tokens=%d", n)
			if sources == 1 {
				name = fmt.Sprintf("cached-1src/tokens=%d", n)
			}
			b.Run(name, func(b *testing.B) {
				decodeN(n, sources) // the programs compile outside the timing
				b.ResetTimer()
				cpu0 := cpuSeconds()
				for range b.N {
					decodeN(n, sources)
				}
				report(b, n*sources, cpuSeconds()-cpu0)
			})
		}
		b.Run(fmt.Sprintf("recompute/tokens=%d", n), func(b *testing.B) {
			srcs := net.EncodeAll(ids, segs, aspects)
			cpu0 := cpuSeconds()
			for range b.N {
				for t := range n {
					states := make([]*DecState, len(srcs))
					for i, s := range srcs {
						states[i] = net.NewState(s)
					}
					for p := 0; p <= t; p++ {
						for i := range tokens {
							tokens[i] = int32(10 + p)
						}
						net.Step(states, tokens, probs)
					}
				}
			}
			report(b, n*len(ids), cpuSeconds()-cpu0)
		})
	}
}

// BenchmarkSearch decodes as Summarize does: beam search (the default beam of 4, "beam=1" greedy)
// over 7 sources at once (an abstract's aspects) and over one source alone, n tokens each (the
// minimum length is the maximum, so that random weights decode the whole length), encoding
// included; it reports generated tokens (of the returned hypotheses) per second and per
// CPU-second:
//
//	GOEXPERIMENT=simd go test ./model/summarizer -run '^$' -bench Search -benchtime 3x
func BenchmarkSearch(b *testing.B) {
	net := toyNet(b, defaultHyper())
	h := net.H
	ids, segs, aspects := benchSources(h)
	const n = 48
	search := func(sources, beam int) {
		var states []*DecState
		for _, src := range net.EncodeAll(ids[:sources], segs[:sources], aspects[:sources]) {
			states = append(states, net.NewState(src))
		}
		o := decode.Options{BeamSize: beam, MaxLen: n + 1, MinLen: n + 1, LengthPenalty: 2, NoRepeatNgram: 3, BOS: h.BosID, EOS: h.EosID}
		decode.Search(net, states, o)
	}
	for _, beam := range []int{4, 1} {
		for _, sources := range []int{len(ids), 1} {
			b.Run(fmt.Sprintf("beam=%d/sources=%d", beam, sources), func(b *testing.B) {
				search(sources, beam) // the programs compile outside the timing
				b.ResetTimer()
				cpu0 := cpuSeconds()
				for range b.N {
					search(sources, beam)
				}
				generated := float64(b.N * sources * n)
				b.ReportMetric(generated/b.Elapsed().Seconds(), "tokens/s")
				b.ReportMetric(generated/(cpuSeconds()-cpu0), "tokens/cpu-s")
			})
		}
	}
}

// benchSources are the decoding benchmarks' sources: 7 (an abstract's aspects) of 120 random
// tokens, with their segment ids and aspects.
func benchSources(h Hyperparams) (ids, segs [][]int32, aspects []int32) {
	for _, ex := range randomExamples(h, 7, 120, 1) {
		ids, segs = append(ids, ex.Src), append(segs, ex.Seg)
	}
	return ids, segs, make([]int32, len(ids))
}
