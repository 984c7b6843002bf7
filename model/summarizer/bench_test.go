package summarizer

import (
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified.
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	tsmodel "github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/training"
)

// defaultHyper is the default config's network with an 8000-token vocabulary and a generation
// vocabulary of the default size.
func defaultHyper() Hyper {
	c := config.DefaultSummarizer()
	h := HyperFromConfig(c, 8000, SpecialIDs{Pad: 0, Bos: 1, Eos: 2, Sep: 3, Ctx: 4})
	for id := range int32(c.GenVocabSize) {
		h.GenIDs = append(h.GenIDs, id)
	}
	return h
}

// randomExamples makes n examples with sources of srcLen and summaries of tgtLen random tokens.
func randomExamples(h Hyper, n, srcLen, tgtLen int) []Example {
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

// BenchmarkTrainStep times one optimizer step of the default network on a batch of 16 examples
// (source 150 tokens, summary 45): go test ./model/summarizer -run '^$' -bench TrainStep -benchtime 5x
func BenchmarkTrainStep(b *testing.B) {
	backend, _, err := tsmodel.Backend()
	if err != nil {
		b.Fatal(err)
	}
	h := defaultHyper()
	loop := config.DefaultSummarizer().Train
	st, err := training.NewStepper(training.Options{Backend: backend, Store: gomlxmodel.NewStore(), Loop: loop,
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
	for range b.N {
		if _, err := st.Step([]training.Batch{batch}, 1e-4); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(16*b.N)/b.Elapsed().Seconds(), "examples/s")
}
