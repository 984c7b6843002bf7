package pretrained

import (
	"math/rand/v2"
	"slices"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/config"
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
	var out []training.Batch
	for _, chunk := range epochChunks(exs, size, seed, epoch) {
		out = append(out, build(chunk))
	}
	return out
}

// epochChunks are the examples of each batch of an epoch (epochBatches).
func epochChunks(exs []Example, size int, seed int64, epoch int) [][]Example {
	order := make([]int, len(exs))
	for i := range order {
		order[i] = i
	}
	r := rand.New(rand.NewPCG(uint64(seed), uint64(epoch)+1))
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	var out [][]Example
	for i := 0; i < len(order); i += size {
		chunk := make([]Example, 0, size)
		for _, j := range order[i:min(i+size, len(order))] {
			chunk = append(chunk, exs[j])
		}
		out = append(out, chunk)
	}
	return out
}

// packShape is the shape of a run's packed batches (TASK.train.packing): rows of rowLen tokens,
// rows of them, with room for answers loss positions (answer loss) and perRow examples
// (classification loss) in each. One shape for the whole run: a backend that compiles a program
// per shape (XLA) compiles the training step once.
type packShape struct{ rowLen, rows, answers, perRow int }

// packRows places the examples into rows of rowLen tokens: first fit, longest first (ties in
// batch order). Each row lists its examples in the order they sit in it.
func packRows(exs []Example, rowLen int) [][]int {
	order := make([]int, len(exs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(exs[b].Tokens) - len(exs[a].Tokens) })
	var rows [][]int
	var used []int
	for _, i := range order {
		n := len(exs[i].Tokens)
		r := slices.IndexFunc(used, func(u int) bool { return u+n <= rowLen })
		if r < 0 {
			rows, used = append(rows, nil), append(used, 0)
			r = len(rows) - 1
		}
		rows[r], used[r] = append(rows[r], i), used[r]+n
	}
	return rows
}

// planPacking returns the shape that holds every batch of the run's epochs packed: rows of
// maxSeqLen tokens (bucketed, and at least the longest example), as many as the fullest batch
// needs. Batches are epochBatches' (batch size examples each, the same as unpacked).
func planPacking(exs []Example, loop config.TrainLoop, seed int64, maxSeqLen int) packShape {
	longest := 0
	for _, e := range exs {
		longest = max(longest, len(e.Tokens))
	}
	sh := packShape{rowLen: model.BucketLen(max(maxSeqLen, longest), seqBucket)}
	for epoch := range loop.Epochs {
		for _, chunk := range epochChunks(exs, loop.BatchSize, seed, epoch) {
			sh = sh.fit(chunk)
		}
	}
	return sh
}

// fit returns sh grown to hold the batch exs.
func (sh packShape) fit(exs []Example) packShape {
	rows := packRows(exs, sh.rowLen)
	sh.rows = max(sh.rows, len(rows))
	for _, row := range rows {
		sh.perRow = max(sh.perRow, len(row))
		k := 0
		for _, i := range row {
			p, _ := lossPositions(exs[i])
			k += len(p)
		}
		sh.answers = max(sh.answers, k)
	}
	return sh
}

// packedBatch is the batch exs packed into sh's rows (grown when a batch outside the plan needs
// more room): tokens (pad after the last example of a row), segments (an example's number in its
// row from 1; 0 for padding) and positions (from 0 in each example) [R, L]; then for the answer
// loss pos, tgt, w [R, K] (answerBatch's terms at their slots in the rows), or with cls the
// classification loss's last, y, w [R, E] (clsBatch's). Empty places have weight 0.
func packedBatch(exs []Example, pad int32, sh packShape, cls bool) training.Batch {
	sh = sh.fit(exs)
	rows := packRows(exs, sh.rowLen)
	r, l := sh.rows, sh.rowLen
	tok := make([]int32, r*l)
	seg := make([]int32, r*l)
	posn := make([]int32, r*l)
	for i := range tok {
		tok[i] = pad
	}
	k := sh.answers
	if cls {
		k = sh.perRow
	}
	k = max(k, 1)
	pos := make([]int32, r*k)
	tgt := make([]int32, r*k)
	y := make([]float32, r*k)
	w := make([]float32, r*k)
	ntok := 0
	for ri, row := range rows {
		at, slot := 0, ri*k // at: the example's first slot in the row; slot: its next loss term
		for si, i := range row {
			e := exs[i]
			for t, id := range e.Tokens {
				tok[ri*l+at+t], seg[ri*l+at+t], posn[ri*l+at+t] = id, int32(si+1), int32(t)
			}
			if cls {
				pos[slot], y[slot], w[slot] = int32(at+len(e.Tokens)-1), e.Target, e.Weight
				slot++
			} else {
				p, g := lossPositions(e)
				for j := range p {
					pos[slot], tgt[slot], w[slot] = int32(at)+p[j], g[j], e.Weight
					slot++
				}
			}
			at += len(e.Tokens)
			ntok += len(e.Tokens)
		}
	}
	mk := func(v []int32, cols int) *tensors.Tensor { return tensors.FromFlatDataAndDimensions(v, r, cols) }
	in := []any{mk(tok, l), mk(seg, l), mk(posn, l), mk(pos, k)}
	if cls {
		in = append(in, tensors.FromFlatDataAndDimensions(y, r, k))
	} else {
		in = append(in, mk(tgt, k))
	}
	in = append(in, tensors.FromFlatDataAndDimensions(w, r, k))
	return training.Batch{Inputs: in, Examples: len(exs), Tokens: ntok}
}
