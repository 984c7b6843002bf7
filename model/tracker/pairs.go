package tracker

import (
	"fmt"
	"strconv"
)

// PairRequest is one abstract (its sentences) and a summary of it about an aspect (code or
// name): SUM-THEN-TRACK scores every sentence against the summary.
type PairRequest struct {
	Doc     []string
	Aspect  string
	Summary string
}

// PairExample is the input of a tracker of (sentence, summary) pairs for sentence k (of an
// n-sentence abstract) against a summary: the sentence's tokens, [SEP], the summary's tokens, at
// most maxTokens in all; the sentence keeps at least half of them when both are long. The aspect
// is the aspect token, the sentence's position the position features. Training (model/stt) and
// ScorePairs build it the same way.
func PairExample(sentence, summary []int32, sep int32, maxTokens, aspect, k, n int) Example {
	keep := min(len(sentence), max(maxTokens/2, maxTokens-1-len(summary)))
	ids := append(append(append(make([]int32, 0, maxTokens), sentence[:keep]...), sep), summary...)
	return Example{IDs: ids[:min(len(ids), maxTokens)], Aspect: int32(aspect), Pos: PositionFeatures(k, n), Weight: 1}
}

// ScorePairs returns, for each request, the probability that each sentence of its abstract
// supports its summary (role.PairTracker), from a model trained on PairExample inputs
// (SUM-THEN-TRACK's tracker, model/stt): ScoreSplit over the pairs of every request at once, each
// request rescored as one instance when the model has a context rescorer.
func (m *Model) ScorePairs(reqs []PairRequest) ([][]float32, error) {
	sep, ok := m.tok.SpecialID("[SEP]")
	if !ok {
		return nil, fmt.Errorf("the tracker's tokenizer has no [SEP] token")
	}
	var split SplitData
	for ri, r := range reqs {
		a, ok := m.hp.AspectIndex(r.Aspect)
		if !ok {
			return nil, fmt.Errorf("unknown aspect %q (tracker knows %v)", r.Aspect, m.hp.Aspects)
		}
		summary := m.tok.Encode(r.Summary)
		for k, s := range r.Doc {
			split.Examples = append(split.Examples, PairExample(m.tok.Encode(s), summary, sep, m.hp.MaxTokens(), a, k, len(r.Doc)))
			// The key names the request, so that the context rescorer sees each as one instance.
			split.Keys = append(split.Keys, RowKey{PMID: strconv.Itoa(ri), Aspect: r.Aspect, SentenceIndex: k})
		}
	}
	probs, err := m.ScoreSplit(split)
	if err != nil {
		return nil, err
	}
	return perRequest(probs, reqs, func(r PairRequest) []string { return r.Doc }), nil
}
