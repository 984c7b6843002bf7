package tracker

import (
	"math/rand/v2"
	"slices"

	"github.com/gomlx/gomlx/core/tensors"
)

// Example is one (sentence, aspect) pair ready for the graph.
type Example struct {
	// IDs are the sentence's token ids (no special tokens), truncated to Hyperparams.MaxTokens.
	IDs    []int32
	Aspect int32
	Pos    [NumPosFeatures]float32
	// Label is 1 when the sentence is relevant; Weight its loss weight (training only).
	Label, Weight float32
	// Text is the sentence itself, read by the textbook baseline (word n-grams); the network
	// reads only IDs.
	Text string
}

// lengthBuckets are the padded sentence lengths: a batch is padded to the smallest bucket that
// holds its longest sentence, so that most batches are far shorter than max_len and only a few
// graph shapes get compiled.
var lengthBuckets = []int{8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512}

func bucketLen(n, maxTokens int) int {
	for _, b := range lengthBuckets {
		if n <= b {
			return min(b, maxTokens)
		}
	}
	return maxTokens
}

// batchTensors packs examples into the graph inputs (ids, aspect, pos, labels, weights), the ids
// padded to T tokens and the batch padded to rows examples (padding rows have zero weight).
func batchTensors(exs []Example, T, rows int) (ids, aspect, pos, labels, weights *tensors.Tensor, tokens int) {
	idFlat := make([]int32, rows*T)
	aspFlat := make([]int32, rows)
	posFlat := make([]float32, rows*NumPosFeatures)
	labFlat := make([]float32, rows)
	wFlat := make([]float32, rows)
	for i, e := range exs {
		n := copy(idFlat[i*T:(i+1)*T], e.IDs)
		tokens += n + 1
		aspFlat[i] = e.Aspect
		copy(posFlat[i*NumPosFeatures:], e.Pos[:])
		labFlat[i] = e.Label
		wFlat[i] = e.Weight
	}
	return tensors.FromFlatDataAndDimensions(idFlat, rows, T),
		tensors.FromFlatDataAndDimensions(aspFlat, rows),
		tensors.FromFlatDataAndDimensions(posFlat, rows, NumPosFeatures),
		tensors.FromFlatDataAndDimensions(labFlat, rows),
		tensors.FromFlatDataAndDimensions(wFlat, rows),
		tokens
}

// lengthGroups returns example indices grouped by padded length, each group sorted by index, the
// groups by length: the deterministic skeleton of both training and scoring batches.
func lengthGroups(exs []Example, maxTokens int) [][]int {
	byLen := map[int][]int{}
	for i, e := range exs {
		b := bucketLen(max(len(e.IDs), 1), maxTokens)
		byLen[b] = append(byLen[b], i)
	}
	lens := make([]int, 0, len(byLen))
	for l := range byLen {
		lens = append(lens, l)
	}
	slices.Sort(lens)
	out := make([][]int, 0, len(lens))
	for _, l := range lens {
		out = append(out, byLen[l])
	}
	return out
}

// trainingBatches shuffles examples within each length group, cuts the groups into batches of at
// most batchSize, and shuffles the batch order.
func trainingBatches(exs []Example, batchSize, maxTokens int, rng *rand.Rand) [][]int {
	var out [][]int
	for _, grp := range lengthGroups(exs, maxTokens) {
		grp = slices.Clone(grp)
		rng.Shuffle(len(grp), func(i, j int) { grp[i], grp[j] = grp[j], grp[i] })
		for i := 0; i < len(grp); i += batchSize {
			out = append(out, grp[i:min(i+batchSize, len(grp))])
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// scoreRows rounds a scoring batch up to a power of two (at least 8), so that scoring any number
// of sentences compiles few graph shapes.
func scoreRows(n int) int {
	r := 8
	for r < n {
		r *= 2
	}
	return r
}

func padTokens(exs []Example, idx []int) int {
	m := 1
	for _, i := range idx {
		m = max(m, len(exs[i].IDs))
	}
	return m
}
