package pretrained

import (
	"math/rand/v2"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/training"
)

// Padded lengths are rounded up from these steps (model.BucketLen), so that a run compiles a few graph shapes
// rather than one per length.
const (
	seqBucket    = 16
	answerBucket = 4
)

// lossPositions lists, for an answer example, the positions t whose logits predict a label
// (labels[t+1] is not decoder.IgnoreLabel) and those labels.
func lossPositions(e Example) (pos, tgt []int32) {
	for t := 0; t+1 < len(e.Labels); t++ {
		if e.Labels[t+1] != decoder.IgnoreLabel {
			pos = append(pos, int32(t))
			tgt = append(tgt, e.Labels[t+1])
		}
	}
	return pos, tgt
}

// padTokens writes the examples' tokens right-padded with pad into [B, T] with their mask.
func padTokens(exs []Example, pad int32) (tokens *tensors.Tensor, mask *tensors.Tensor, t int) {
	for _, e := range exs {
		t = max(t, len(e.Tokens))
	}
	t = model.BucketLen(t, seqBucket)
	tok := make([]int32, len(exs)*t)
	msk := make([]float32, len(exs)*t)
	for b, e := range exs {
		for i := range t {
			if i < len(e.Tokens) {
				tok[b*t+i], msk[b*t+i] = e.Tokens[i], 1
			} else {
				tok[b*t+i] = pad
			}
		}
	}
	return tensors.FromFlatDataAndDimensions(tok, len(exs), t), tensors.FromFlatDataAndDimensions(msk, len(exs), t), t
}

// answerBatch is a batch of the answer loss: tokens, mask, pos [B, K], tgt [B, K], w [B, K]. With
// fixedK 0, K is the longest answer rounded up per answerBucket: the summarizer's answers vary, and
// the rounding keeps its graphs few. The generative tracker passes its longer answer turn's length:
// its answers are one of two turns, so K is one shape on every backend and the vocabulary's logits
// are computed at the answer's positions only (rounded up, 5 or 6 positions were 8: a third more
// work in what is most of a small model's step).
func answerBatch(exs []Example, pad int32, fixedK int) training.Batch {
	tokens, mask, _ := padTokens(exs, pad)
	k := 0
	var all [][2][]int32
	for _, e := range exs {
		p, g := lossPositions(e)
		all = append(all, [2][]int32{p, g})
		k = max(k, len(p))
	}
	if fixedK > 0 {
		k = max(k, fixedK)
	} else {
		k = model.BucketLen(k, answerBucket)
	}
	pos := make([]int32, len(exs)*k)
	tgt := make([]int32, len(exs)*k)
	w := make([]float32, len(exs)*k)
	ntok := 0
	for b, pg := range all {
		for i := range pg[0] {
			pos[b*k+i], tgt[b*k+i], w[b*k+i] = pg[0][i], pg[1][i], exs[b].Weight
		}
		ntok += len(exs[b].Tokens)
	}
	return training.Batch{
		Inputs: []any{tokens, mask, tensors.FromFlatDataAndDimensions(pos, len(exs), k),
			tensors.FromFlatDataAndDimensions(tgt, len(exs), k), tensors.FromFlatDataAndDimensions(w, len(exs), k)},
		Examples: len(exs), Tokens: ntok,
	}
}

// clsBatch is a batch of the classification loss: tokens, mask, last [B, 1], y [B], w [B].
func clsBatch(exs []Example, pad int32) training.Batch {
	tokens, mask, _ := padTokens(exs, pad)
	last := make([]int32, len(exs))
	y := make([]float32, len(exs))
	w := make([]float32, len(exs))
	ntok := 0
	for b, e := range exs {
		last[b], y[b], w[b] = int32(len(e.Tokens)-1), e.Target, e.Weight
		ntok += len(e.Tokens)
	}
	return training.Batch{
		Inputs: []any{tokens, mask, tensors.FromFlatDataAndDimensions(last, len(exs), 1),
			tensors.FromFlatDataAndDimensions(y, len(exs)), tensors.FromFlatDataAndDimensions(w, len(exs))},
		Examples: len(exs), Tokens: ntok,
	}
}

// epochBatches shuffles exs with a seed derived from (seed, epoch), deterministic so that a
// resumed run sees the same order, and cuts them into batches of size.
func epochBatches(exs []Example, size int, seed int64, epoch int, build func([]Example) training.Batch) []training.Batch {
	order := make([]int, len(exs))
	for i := range order {
		order[i] = i
	}
	r := rand.New(rand.NewPCG(uint64(seed), uint64(epoch)+1))
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	var out []training.Batch
	for i := 0; i < len(order); i += size {
		chunk := make([]Example, 0, size)
		for _, j := range order[i:min(i+size, len(order))] {
			chunk = append(chunk, exs[j])
		}
		out = append(out, build(chunk))
	}
	return out
}
