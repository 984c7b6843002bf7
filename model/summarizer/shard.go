package summarizer

import (
	"fmt"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/model/training"
)

// SplitBatch cuts a training batch (padBatch) into n shards of examples for a data-parallel step
// (training.Options.Shards). The loss is a mean over target tokens, so each shard's Weight is its
// number of target tokens (TgtOut not padding): the step's Σ (W_s / W) · loss_s is then the full
// batch's mean.
func (h Hyperparams) SplitBatch(b training.Batch, n int) ([]training.Batch, error) {
	tb := b
	tb.Inputs = make([]any, len(b.Inputs))
	for i, in := range b.Inputs {
		t, err := tensors.FromAnyValue(in)
		if err != nil {
			return nil, fmt.Errorf("summarizer: split: input %d: %w", i, err)
		}
		tb.Inputs[i] = t
	}
	shards, err := training.SplitRows(tb, n, -1)
	if err != nil {
		return nil, err
	}
	for i := range shards {
		tout := tensors.MustCopyFlatData[int32](shards[i].Inputs[3].(*tensors.Tensor))
		tokens := 0
		for _, id := range tout {
			if id != h.PadID {
				tokens++
			}
		}
		shards[i].Weight = float64(tokens)
	}
	return shards, nil
}
