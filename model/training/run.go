package training

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/progress"
	"github.com/tracksum/tracksum/model"
)

// Run trains until the planned steps are done, early stopping triggers, or ctx is cancelled (then it
// saves a resume point and returns an error wrapping ctx.Err()). If OutDir holds a resume point, it
// continues from it.
//
// It runs in named steps, each a method of trainRun below: setup (options and output directory),
// resume (a saved state, or a fresh start), plan (batches, step counts, stepper, metrics file),
// loop (optimizer steps, with evaluate at every evaluation point) and save (the final evaluation,
// resume point, plot and summary).
func Run(ctx context.Context, o Options) (*Result, error) {
	r, err := setup(ctx, o)
	if err != nil {
		return nil, err
	}
	if finished, err := r.resume(); err != nil || finished != nil {
		return finished, err
	}
	if err := r.plan(); err != nil {
		return nil, err
	}
	defer r.metricsOut.Close()
	// A step or an evaluation that fails ends the bar too, so that its heartbeat stops with the
	// run (Finish is idempotent: save finishes it first on success).
	defer r.bar.Finish()
	stop, err := r.loop()
	if err != nil {
		return nil, err
	}
	return r.save(stop)
}

// trainRun is one call of Run: the options, the resume point it advances (st), and the counters of
// the current evaluation window and of the whole call.
type trainRun struct {
	ctx context.Context
	o   Options
	log io.Writer

	st  state   // the resume point, advanced step by step and saved at each evaluation
	res *Result // filled as the run goes

	// Planned by plan.
	epoch0     []Batch // the batches of epoch 0 (also the count that defines an epoch)
	accum      int     // micro-batches per optimizer step
	total      int     // optimizer steps of the whole run
	evalEvery  int     // optimizer steps between evaluations
	stepper    *Stepper
	metricsOut *os.File
	bar        *progress.Bar
	resumedAt  int // the step this call started from

	// The evaluation window (steps since the last evaluation, across an interruption): training
	// loss sum and count, examples, and when it started.
	trainLoss     float64
	trainLossN    int
	windowExample int
	windowStart   time.Time
	// Totals of this call, for the reported speed.
	examples, tokens int
	trainTime        time.Duration
}

// setup checks the options and creates the output directory.
func setup(ctx context.Context, o Options) (*trainRun, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	// Every model's loop runs on one device; the pretrained tasks refuse earlier, naming their key.
	if err := CheckDevices("train.devices", o.Loop.Devices, o.Backend, ""); err != nil {
		return nil, fmt.Errorf("training: %w", err)
	}
	log := o.Log
	if log == nil {
		log = os.Stderr
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("training: %w", err)
	}
	if o.Loop.SelectBy == config.SelectByEvalLoss {
		// Every model's Evaluate reports its dev loss as "loss".
		o.Select, o.Minimize = "loss", true
	}
	return &trainRun{ctx: ctx, o: o, log: log, res: &Result{}}, nil
}

// resume continues from the resume point in OutDir (variables, optimizer and RNG state, position),
// or starts a fresh run: whatever a run killed before its first resume point left is removed, a
// fresh resume point is written and the RNG is seeded. A finished run returns its result at once
// (finished non-nil): there is nothing left to do.
func (r *trainRun) resume() (finished *Result, err error) {
	o := &r.o
	saved, err := readState(o.OutDir)
	if err != nil {
		return nil, err
	}
	if saved != nil && !saved.Fresh {
		r.st = *saved
		st := &r.st
		if err := model.LoadVariablesInto(o.Store, filepath.Join(o.OutDir, StateDir, stateVariables), nil); err != nil {
			return nil, fmt.Errorf("training: resume point: %w", err)
		}
		r.res.Resumed = true
		if st.Done {
			fmt.Fprintf(r.log, "training: %s already finished at step %d (%s); best step %d\n", o.OutDir, st.Step, st.Stop, st.BestStep)
			return &Result{Steps: st.Step, TotalSteps: st.Step, BestStep: st.BestStep, Best: st.Best, Stop: st.Stop, Resumed: true}, nil
		}
		// Rows written after this resume point was saved (by the killed run) come again.
		if err := truncateMetrics(o.OutDir, st.Step); err != nil {
			return nil, err
		}
		fmt.Fprintf(r.log, "training: resuming %s at step %d (epoch %d, batch %d)\n", o.OutDir, st.Step, st.EpochIndex+1, st.BatchInEpoch)
		return nil, nil
	}
	// A new run, or one killed before its first resume point: whatever it left is redone.
	for _, p := range []string{filepath.Join(o.OutDir, MetricsFile), filepath.Join(o.OutDir, BestDir)} {
		if err := os.RemoveAll(p); err != nil {
			return nil, fmt.Errorf("training: %w", err)
		}
	}
	if err := o.saveFresh(); err != nil {
		return nil, err
	}
	if err := o.Store.SetRNGStateFromSeed(o.Seed); err != nil {
		return nil, fmt.Errorf("training: seed: %w", err)
	}
	return nil, nil
}

// plan computes the run's length from epoch 0's batches (steps per epoch times epochs, capped by
// MaxSteps) and the evaluation period, creates the stepper, opens metrics.jsonl for appending and
// restores the evaluation window saved in the resume point.
func (r *trainRun) plan() error {
	o := &r.o
	epoch0, err := o.Batches(0)
	if err != nil {
		return fmt.Errorf("training: batches: %w", err)
	}
	if len(epoch0) == 0 {
		return errors.New("training: no training batches")
	}
	r.epoch0 = epoch0
	r.accum = o.Loop.GradAccumulation
	stepsPerEpoch := (len(epoch0) + r.accum - 1) / r.accum
	r.total = stepsPerEpoch * o.Loop.Epochs
	if o.Loop.MaxSteps > 0 {
		r.total = min(r.total, o.Loop.MaxSteps)
	}
	r.res.TotalSteps = r.total
	r.evalEvery = o.Loop.EvalEvery
	if r.evalEvery <= 0 {
		r.evalEvery = stepsPerEpoch
	}

	if r.stepper, err = NewStepper(*o); err != nil {
		return err
	}

	r.metricsOut, err = os.OpenFile(filepath.Join(o.OutDir, MetricsFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("training: %w", err)
	}

	r.resumedAt = r.st.Step
	r.bar = progress.NewTo(r.log, "train", int64(r.total), "steps")
	r.bar.Set(int64(r.st.Step))
	r.trainLoss, r.trainLossN = r.st.WindowLoss, r.st.WindowLossN
	r.windowStart = time.Now().Add(-time.Duration(r.st.WindowSeconds * float64(time.Second)))
	r.windowExample = r.st.WindowExamples
	return nil
}

// loop runs the optimizer steps, epoch after epoch from the resume position, evaluating every
// evalEvery steps and at the last one (and once before the first step with EvalAtStart). It
// returns why it stopped: "" (all steps done), "early_stopping" or "interrupted" (ctx cancelled).
func (r *trainRun) loop() (stop string, err error) {
	o, st := &r.o, &r.st
	if o.EvalAtStart && st.Step == 0 && !st.HasBest {
		if err := r.evaluate(); err != nil {
			return "", err
		}
	}
	for st.Step < r.total && stop == "" {
		batches := r.epoch0
		if st.EpochIndex > 0 {
			if batches, err = o.Batches(st.EpochIndex); err != nil {
				return "", fmt.Errorf("training: batches of epoch %d: %w", st.EpochIndex+1, err)
			}
		}
		for st.BatchInEpoch < len(batches) && st.Step < r.total {
			if r.ctx.Err() != nil {
				stop = "interrupted"
				break
			}
			if st.Step == r.resumedAt {
				// The first step compiles the training graph (seconds to minutes on a CPU).
				r.bar.Stage("compiling the graph and first step")
			}
			t0 := time.Now()
			group := batches[st.BatchInEpoch:min(st.BatchInEpoch+r.accum, len(batches))]
			lr := o.lr(st.Step, r.total)
			loss, err := r.stepper.Step(group, lr)
			if err != nil {
				return "", fmt.Errorf("training: step %d: %w", st.Step+1, err)
			}
			for _, b := range group {
				r.examples += b.Examples
				r.windowExample += b.Examples
				r.tokens += b.Tokens
			}
			r.trainTime += time.Since(t0)
			st.BatchInEpoch += len(group)
			st.Step++
			r.trainLoss += loss
			r.trainLossN++
			r.bar.Stage("")
			r.bar.Set(int64(st.Step))
			r.bar.Status("loss %.4f lr %.2e %s ex/s", loss, lr, formatRate(float64(r.examples)/max(r.trainTime.Seconds(), 1e-9)))
			if o.Trace != nil {
				o.Trace(st.Step, group, loss)
			}
			if o.AfterStep != nil {
				o.AfterStep(st.Step)
			}
			evalNow := st.Step%r.evalEvery == 0 || st.Step == r.total
			if every := o.Loop.LogEvery; every > 0 && st.Step%every == 0 && !evalNow {
				if err := r.logTrain(); err != nil {
					return "", fmt.Errorf("training: %s: %w", MetricsFile, err)
				}
			}
			if evalNow {
				if err := r.evaluate(); err != nil {
					return "", err
				}
				if o.Loop.Patience > 0 && st.BadEvals >= o.Loop.Patience {
					stop = "early_stopping"
					break
				}
			}
		}
		if stop == "" && st.BatchInEpoch >= len(batches) {
			st.EpochIndex++
			st.BatchInEpoch = 0
		}
	}
	return stop, nil
}

// evaluate runs the dev evaluation at the current step: it appends the train row (the window's
// mean loss and speed) and the dev row to metrics.jsonl, starts a new window, keeps the model as
// best when the selection metric improved (else counts a bad evaluation for early stopping), and
// saves the resume point.
func (r *trainRun) evaluate() error {
	o, st := &r.o, &r.st
	t0 := time.Now()
	r.bar.Stage(fmt.Sprintf("evaluating on dev at step %d", st.Step))
	m, err := o.Evaluate(r.ctx)
	r.bar.Stage("")
	if err != nil {
		return fmt.Errorf("training: evaluate at step %d: %w", st.Step, err)
	}
	score, ok := m[o.Select]
	if !ok {
		return fmt.Errorf("training: evaluate did not return the selection metric %q", o.Select)
	}
	improved := !st.HasBest || (o.Minimize && score < st.BestScore) || (!o.Minimize && score > st.BestScore)
	devRow := map[string]any{"split": "dev", "step": st.Step, "epoch": r.epochOf(), "eval_seconds": time.Since(t0).Seconds()}
	for k, v := range m {
		devRow[k] = v
	}
	if err := errors.Join(r.logTrain(), r.writeRow(devRow)); err != nil {
		return fmt.Errorf("training: %s: %w", MetricsFile, err)
	}
	st.LastEvalStep = st.Step
	if improved {
		st.HasBest, st.BestScore, st.BestStep, st.BadEvals, st.Best = true, score, st.Step, 0, m
		if err := o.saveBest(m); err != nil {
			return err
		}
	} else {
		st.BadEvals++
	}
	if err := o.keepCheckpoint(st.Step, m); err != nil {
		return err
	}
	fmt.Fprintf(r.log, "\nstep %d epoch %d: dev %s   best %s=%.4f at step %d\n", st.Step, r.epochOf(), m, o.Select, st.BestScore, st.BestStep)
	return o.saveState(*st)
}

// logTrain appends the train row of the window since the last one (mean loss, learning rate,
// speed) to metrics.jsonl and starts a new window: every train.log_every steps and at each
// evaluation.
func (r *trainRun) logTrain() error {
	o, st := &r.o, &r.st
	row := map[string]any{"split": "train", "step": st.Step, "epoch": r.epochOf(),
		"lr": o.lr(st.Step, r.total), "examples_per_sec": float64(r.windowExample) / max(time.Since(r.windowStart).Seconds(), 1e-9)}
	if r.trainLossN > 0 {
		row["loss"] = r.trainLoss / float64(r.trainLossN)
	}
	r.trainLoss, r.trainLossN = 0, 0
	r.windowStart, r.windowExample = time.Now(), 0
	st.WindowLoss, st.WindowLossN, st.WindowExamples, st.WindowSeconds = 0, 0, 0, 0
	return r.writeRow(row)
}

// epochOf is the 1-based epoch the last step belongs to (state.epoch): the log, metrics.jsonl
// and state.json's "epoch" agree.
func (r *trainRun) epochOf() int { return r.st.epoch() }

// writeRow appends one JSON row to metrics.jsonl.
func (r *trainRun) writeRow(row map[string]any) error {
	b, err := json.Marshal(row)
	if err != nil {
		return err
	}
	_, err = r.metricsOut.Write(append(b, '\n'))
	return err
}

// save ends the run. An interrupted run saves its resume point, with the evaluation window so far,
// and returns an error wrapping ctx.Err(). Otherwise the last step is evaluated if it was not,
// the resume point is marked done, the curves are plotted and the result is returned.
func (r *trainRun) save(stop string) (*Result, error) {
	o, st, res := &r.o, &r.st, r.res
	r.bar.Finish()
	res.ExamplesPerSec = float64(r.examples) / max(r.trainTime.Seconds(), 1e-9)
	res.TokensPerSec = float64(r.tokens) / max(r.trainTime.Seconds(), 1e-9)
	if stop == "interrupted" {
		st.WindowLoss, st.WindowLossN, st.WindowExamples = r.trainLoss, r.trainLossN, r.windowExample
		st.WindowSeconds = time.Since(r.windowStart).Seconds()
		if err := o.saveState(*st); err != nil {
			return nil, err
		}
		fmt.Fprintf(r.log, "training: interrupted at step %d; state saved in %s, rerun the same command to continue\n", st.Step, filepath.Join(o.OutDir, StateDir))
		return nil, fmt.Errorf("training stopped at step %d: %w", st.Step, r.ctx.Err())
	}
	if st.LastEvalStep != st.Step {
		if err := r.evaluate(); err != nil {
			return nil, err
		}
	}
	if stop == "" {
		stop = "completed"
	}
	st.Done, st.Stop = true, stop
	if err := o.saveState(*st); err != nil {
		return nil, err
	}
	if err := WritePlot(filepath.Join(o.OutDir, MetricsFile), filepath.Join(o.OutDir, PlotFile), filepath.Join(o.OutDir, PlotSVGFile), o.Select, st.BestStep); err != nil {
		fmt.Fprintf(r.log, "training: plot: %v\n", err)
	}
	if err := WriteCSV(filepath.Join(o.OutDir, MetricsFile), filepath.Join(o.OutDir, MetricsCSVFile)); err != nil {
		fmt.Fprintf(r.log, "training: %s: %v\n", MetricsCSVFile, err)
	}
	res.Steps, res.BestStep, res.Best, res.Stop = st.Step, st.BestStep, st.Best, stop
	scope := ""
	if res.Resumed {
		scope = fmt.Sprintf(" (steps %d-%d of this resumed run)", r.resumedAt+1, st.Step)
	}
	fmt.Fprintf(r.log, "training: %s after %d steps; best dev %s=%.4f at step %d; %.1f examples/s, %.0f tokens/s%s\n",
		stop, st.Step, o.Select, st.BestScore, st.BestStep, res.ExamplesPerSec, res.TokensPerSec, scope)
	return res, nil
}

// formatRate writes a speed with the digits that matter: 1.4 ex/s, not "1" or "0".
func formatRate(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}
