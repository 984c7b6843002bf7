package training

import (
	"context"
	"io"
	"os"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// TaskRun is what a task's loop (tracker.Fit, summarizer.Fit) takes besides its backbone and its
// own evaluation: the loop's settings, where it writes and the hooks.
type TaskRun struct {
	// Name prefixes the task's closing log line ("tracker", "pretrained end-to-end summarizer").
	Name string
	// Loop is the loop's settings (TASK.train), Seed the run's seed.
	Loop config.TrainLoop
	Seed int64
	// OutDir receives the loop's files (best/, state/, metrics.jsonl).
	OutDir string
	// Log receives progress; os.Stderr when nil.
	Log io.Writer
	// AfterStep and Trace are passed to the training loop (tests, the GPU check).
	AfterStep func(step int)
	Trace     func(step int, group []Batch, loss float64)
}

// Logger returns r.Log, or os.Stderr when it is nil.
func (r TaskRun) Logger() io.Writer {
	if r.Log == nil {
		return os.Stderr
	}
	return r.Log
}

// RunTask runs the training loop of a task: opts are its backbone's part (Backend, Store, Loss,
// Batches and the network's extras), evaluate and sel the task's dev evaluation and the metric
// that selects; r the rest. It then loads the best variables (r.OutDir/best) back into opts.Store,
// so that the task reports and saves exactly what Load will see.
func RunTask(ctx context.Context, opts Options, r TaskRun, evaluate func(context.Context) (Metrics, error), sel string) (*Result, error) {
	opts.Loop, opts.Seed, opts.OutDir, opts.Log, opts.AfterStep, opts.Trace = r.Loop, r.Seed, r.OutDir, r.Logger(), r.AfterStep, r.Trace
	opts.Evaluate, opts.Select = evaluate, sel
	res, err := Run(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := model.LoadVariablesInto(opts.Store, checkpoint.BestWeights(r.OutDir), nil); err != nil {
		return nil, err
	}
	return res, nil
}
