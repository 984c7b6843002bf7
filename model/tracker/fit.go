package tracker

import (
	"context"
	"fmt"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model/training"
)

// A Backbone is a network trained as the tracker by Fit: this package's from-scratch model
// (network), or a pretrained model under one of its tracker heads (model/pretrained: lm_cls and
// generative on a causal LM, packed or not, encoder_cls on an encoder). What the task decides is
// Fit's and Weigh's; a Backbone supplies what is its own.
type Backbone interface {
	// Training is the network's part of the training loop over its training examples (weighted
	// with Weigh): Backend, Store, Loss and Batches, plus Saved, EvalAtStart, Shards and Split
	// where the network needs them. Fit sets the rest (the loop's settings, AfterStep, Trace,
	// Evaluate and Select).
	Training() training.Options
	// DevScores returns P(relevant) of each dev pair under the current variables, in the order of
	// FitOptions.DevLabels.
	DevScores() ([]float32, error)
}

// FitOptions are what Fit needs besides the backbone: the run (training.TaskRun) and the dev
// pairs' labels.
type FitOptions struct {
	training.TaskRun
	// DevLabels are the labels of the dev pairs; Threshold (tracker.threshold) turns their
	// DevScores into the decisions whose F1 selects.
	DevLabels []float32
	Threshold float64
}

// Fit trains b with the shared training loop, each evaluation scoring the dev pairs
// (BinaryMetrics at o.Threshold) and the best checkpoint selected on their F1, then loads the
// best variables (OutDir/best) back into b's store and logs their dev F1. The caller writes what
// its backbone adds after the loop (the from-scratch calibration and report, the pretrained
// interop layouts).
func Fit(ctx context.Context, b Backbone, o FitOptions) (*training.Result, error) {
	res, err := training.RunTask(ctx, b.Training(), o.TaskRun, func(context.Context) (training.Metrics, error) {
		probs, err := b.DevScores()
		if err != nil {
			return nil, err
		}
		return BinaryMetrics(probs, o.DevLabels, o.Threshold), nil
	}, "f1")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Logger(), "%s: best dev F1 %.4f (P %.4f R %.4f) at step %d -> %s\n",
		o.Name, res.Best["f1"], res.Best["precision"], res.Best["recall"], res.BestStep, o.OutDir)
	return res, nil
}

// Weigh builds the training examples of a train split under tracker.imbalance, the one rule for
// every backbone: labels[i] says whether pair i is relevant, and example(i, w) builds its example
// with loss weight w, 1 except for a relevant pair under "pos_weight" (tracker.pos_weight, or
// #neg/#pos when 0); under "oversample" a relevant pair's example appears tracker.oversample
// times in all (the paper's "6 more times" is oversample 7). Building an example may render a
// chat template: Weigh stops with an error wrapping ctx.Err() once ctx is cancelled.
func Weigh[E any](ctx context.Context, tc config.Tracker, labels []bool, example func(i int, weight float32) (E, error)) ([]E, error) {
	pos := 0
	for _, l := range labels {
		if l {
			pos++
		}
	}
	posWeight, copies := float32(1), 1
	switch tc.Imbalance {
	case "pos_weight":
		w := tc.PosWeight
		if w == 0 && pos > 0 {
			w = float64(len(labels)-pos) / float64(pos)
		}
		posWeight = float32(max(w, 1e-3))
	case "oversample":
		copies = tc.Oversample
	}
	out := make([]E, 0, len(labels)+pos*(copies-1))
	for i, l := range labels {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("building the training examples: %w", err)
		}
		w, n := float32(1), 1
		if l {
			w, n = posWeight, copies
		}
		e, err := example(i, w)
		if err != nil {
			return nil, err
		}
		for range n {
			out = append(out, e)
		}
	}
	return out, nil
}
