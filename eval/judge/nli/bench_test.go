package nli

import (
	"context"
	"fmt"
	"testing"

	"github.com/tracksum/tracksum/eval/judge"
	"github.com/tracksum/tracksum/hf/randsnap"
)

// BenchmarkBERTBasePairs: sentence pairs per second of the nli judge on a BERT-base-shaped random
// snapshot (vocab 30522, hidden 768, 12 layers, 12 heads, intermediate 3072; 440 MB of float32
// weights written to a temporary directory) with pairs of 128 tokens, all asked in one EntailsAll
// call as the evaluator does (one full pass of 16 rows, its graph build included), no cache. Run
// it alone, once:
//
//	go test -run '^$' -bench BERTBasePairs -benchtime 1x ./eval/judge/nli/
func BenchmarkBERTBasePairs(b *testing.B) {
	dir := b.TempDir()
	if err := randsnap.WriteEncoder(dir, randsnap.Encoder{Vocab: 30522, Hidden: 768, Layers: 12, Heads: 12, Intermediate: 3072,
		Prefix: "bert.", Pooler: true, Labels: []string{"entailment", "neutral", "contradiction"}, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	j, err := New(context.Background(), Options{Dir: dir, Threshold: 0.5, BatchSize: 16, Decomposer: judge.NewLexical(judge.LexicalOptions{})})
	if err != nil {
		b.Fatal(err)
	}
	// The test tokenizer has one token per character: 96 + 27 characters and 3 specials make 126
	// tokens, padded to 128.
	const n = 16
	premises := make([]string, n)
	for i := range premises {
		premises[i] = fmt.Sprintf("patients %02d were randomized to placebo or drug and the toxicity was low in both arms of the trial and more", i)[:96]
	}
	hyp := "the toxicity was low in arm"
	pairs := make([]judge.Pair, n)
	for i, p := range premises {
		pairs[i] = judge.Pair{Premise: p, Hypothesis: hyp}
	}
	b.ResetTimer()
	done := 0
	for b.Loop() {
		j.memo = map[string]float64{}
		if _, err := j.EntailsAll(context.Background(), pairs); err != nil {
			b.Fatal(err)
		}
		done += n
	}
	b.ReportMetric(float64(done)/b.Elapsed().Seconds(), "pairs/s")
	b.Logf("%s", j.Stats())
}
