package summarizer

import (
	"math/rand/v2"
	"slices"
)

// CopyExamples builds n self-supervised copy examples from unlabeled abstracts (each a list of
// tokenized sentences): the source is an aspect-free prefix (just [SEP]) and 1 to 3 consecutive
// sentences of one abstract, the target is those sentences themselves. Mixed into the summarizer's
// training rows (summarizer.copy_examples) they cost no annotation and teach the decoder to copy
// long spans in order, which the 356 TracSum training summaries alone do not: the from-scratch
// model wrote fluent openings and then jumped between source positions. Targets are cut to
// MaxSummaryLen-1 tokens, like the summaries. The choice is deterministic for a seed.
func CopyExamples(h Hyperparams, abstracts [][][]int32, n int, seed int64) []Example {
	var docs [][][]int32
	for _, a := range abstracts {
		if len(a) > 0 {
			docs = append(docs, a)
		}
	}
	if n <= 0 || len(docs) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x636f7079)) // "copy"
	out := make([]Example, 0, n)
	for range n {
		doc := docs[rng.IntN(len(docs))]
		k := 1 + rng.IntN(min(3, len(doc)))
		start := rng.IntN(len(doc) - k + 1)
		sents := doc[start : start+k]
		var tgt []int32
		for _, s := range sents {
			tgt = append(tgt, s...)
		}
		ex := MakeExample(h, nil, sents, sents, slices.Clone(tgt), "")
		ex.Aspect = h.copyAspect()
		out = append(out, ex)
	}
	return out
}
