package summarizer

import (
	"context"
	"fmt"
	"maps"

	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/textmetrics/rouge"
)

// Backbone is a summarizer network as the one summarizer training loop (Fit) trains it: the
// from-scratch copy transformer (TrainExamples) and model/pretrained's causal LM with adapters
// implement it. The network brings its graphs and batches; Fit brings the task: the dev
// evaluation, the selection by ROUGE-L and the best variables.
type Backbone interface {
	// Training is the network's part of the training loop: Backend, Store, Loss and Batches,
	// plus Saved, Shards and Split where the network needs them. Fit sets the rest (the loop's
	// settings, Evaluate and Select).
	Training() training.Options
	// DevLoss is the mean loss per summary token over the dev split.
	DevLoss(ctx context.Context) (float64, error)
	// DevSummaries decodes the first n dev instances greedily and returns their summaries, in
	// order, with any metrics the network reads from the same answers (END-TO-END's citation_f1;
	// nil for none).
	DevSummaries(ctx context.Context, n int) ([]string, training.Metrics, error)
}

// FitOptions are what Fit needs besides the backbone: the run (training.TaskRun) and the dev
// references.
type FitOptions struct {
	training.TaskRun
	// Refs are the reference summaries of the backbone's dev instances, in its order. With none,
	// every evaluation scores 0 and the last step is kept as best.
	Refs []string
	// DevDecodeLimit caps the dev instances decoded for ROUGE at each evaluation; 0 = all.
	DevDecodeLimit int
	// ROUGE12 also reports the ROUGE-1 and ROUGE-2 F of the dev summaries (rouge1, rouge2), as
	// the from-scratch network's reports always have.
	ROUGE12 bool
}

// Fit trains b with the shared training loop, evaluating on dev the mean loss ("loss") and the
// ROUGE-L F (stemmed) of the greedy summaries of the first o.DevDecodeLimit instances ("rougeL"),
// which selects the best checkpoint (OutDir/best/model.safetensors). It leaves the best
// variables in b's store.
func Fit(ctx context.Context, b Backbone, o FitOptions) (*training.Result, error) {
	decoded := len(o.Refs)
	if o.DevDecodeLimit > 0 {
		decoded = min(decoded, o.DevDecodeLimit)
	}
	scorer := rouge.New(rouge.Options{Stem: true})
	evaluate := func(ctx context.Context) (training.Metrics, error) {
		if decoded == 0 {
			return training.Metrics{"loss": 0, "rougeL": 0}, nil // both selections (train.select_by) read a value
		}
		loss, err := b.DevLoss(ctx)
		if err != nil {
			return nil, err
		}
		summaries, extra, err := b.DevSummaries(ctx, decoded)
		if err != nil {
			return nil, err
		}
		if len(summaries) != decoded {
			return nil, fmt.Errorf("summarizer: %d dev summaries for %d instances", len(summaries), decoded)
		}
		var r1, r2, rl float64
		for i, ref := range o.Refs[:decoded] {
			s := scorer.Score(ref, summaries[i])
			r1, r2, rl = r1+s.R1.F, r2+s.R2.F, rl+s.RL.F
		}
		n := float64(decoded)
		m := training.Metrics{"loss": loss, "rougeL": rl / n}
		if o.ROUGE12 {
			m["rouge1"], m["rouge2"] = r1/n, r2/n
		}
		maps.Copy(m, extra)
		return m, nil
	}
	res, err := training.RunTask(ctx, b.Training(), o.TaskRun, evaluate, "rougeL")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Logger(), "%s: best dev at step %d: %s (%d instances decoded); %s after %d/%d steps, %.1f examples/s -> %s\n",
		o.Name, res.BestStep, res.Best, decoded, res.Stop, res.Steps, res.TotalSteps, res.ExamplesPerSec, o.OutDir)
	return res, nil
}
