// Package training is the GoMLX training loop shared by tracksum's models (tracker, summarizer).
//
// A model plugs in three things: a loss graph (LossFn) over the variables it creates under the
// store's model scope (model.ModelScope), the micro-batches of each epoch (Batches, deterministic
// per epoch so that a resumed run sees the same order), and a dev evaluation (Evaluate). The loop
// provides the rest:
//
//   - AdamW (decoupled weight decay on matrices only) with linear warmup then linear or cosine decay;
//   - global gradient-norm clipping, gradient accumulation over micro-batches;
//   - seeded initialisation and dropout (Options.Seed);
//   - dev evaluation every N optimizer steps (or each epoch), best-on-dev checkpoint, early stopping;
//   - resumable runs: Ctrl-C (context cancellation) saves the full state (model, optimizer, RNG,
//     position in the epoch), and so does every evaluation; rerunning the same command continues
//     from the last one saved (after a kill, from the last evaluation) with the same result as an
//     uninterrupted run. The state directory is replaced atomically; a directory with progress but
//     no usable state is refused (ErrResume), never restarted from step 0 (see resume.go);
//   - a progress bar with loss and examples/s, metrics appended to OUT/metrics.jsonl and a plot of
//     the train/dev curves (OUT/curves.png, OUT/curves.svg) at the end.
//
// Files in Options.OutDir: best/model.safetensors (model variables of the best dev evaluation),
// best/metrics.json, state/variables.safetensors + state/state.json (resume point), metrics.jsonl,
// curves.png, curves.svg. The caller writes whatever else its checkpoint needs (hyperparameters, tokenizer,
// resolved config) into OutDir before or after Run.
//
// # Example
//
//	store := gomlxmodel.NewStore()
//	res, err := training.Run(ctx, training.Options{
//		Backend: backend,
//		Store:   store,
//		Loop:    cfg.Tracker.Train,
//		Seed:    cfg.Seed,
//		OutDir:  "checkpoints/run",
//		// inputs[0..] are the Batch.Inputs of a micro-batch, in order.
//		Loss: func(scope *gomlxmodel.Scope, inputs []*graph.Node) *graph.Node {
//			logits := MyModelGraph(scope, inputs[0])
//			return losses.BinaryCrossEntropyLogits(inputs[1], logits)
//		},
//		Batches: func(epoch int) ([]training.Batch, error) {
//			return myBatches(epoch), nil // Batch{Inputs: []any{ids, labels}, Examples: 32, Tokens: 900}
//		},
//		Evaluate: func(ctx context.Context) (training.Metrics, error) {
//			return training.Metrics{"loss": devLoss, "f1": devF1}, nil
//		},
//		Select: "f1", // higher is better; set Minimize for a loss
//	})
package training

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// LossFn builds the graph of the mean training loss of one micro-batch. inputs are the batch's
// Inputs converted to graph parameters, in order. scope is the store's model scope: create every
// trainable variable under it. Dropout and other training-only behaviour can test
// scope.IsTraining(g), which is true in the training graphs.
type LossFn func(scope *gomlxmodel.Scope, inputs []*graph.Node) *graph.Node

// Batch is one micro-batch.
type Batch struct {
	// Inputs are tensors or Go values (slices, scalars) passed to LossFn in order. Keeping their
	// shapes to a few buckets matters: each distinct shape compiles its own graph.
	Inputs []any
	// Examples and Tokens count what the batch holds, for the examples/s and tokens/s figures.
	Examples, Tokens int
	// Weight is the batch's share of the loss normaliser when it is a shard (Options.Shards): the
	// shards' losses and gradients are combined with coefficients Weight / sum of Weights. For a
	// loss that is a plain mean over examples it is the number of examples (the default when 0);
	// for a weighted mean, the sum of the weights.
	Weight float64
}

// Metrics maps metric names (loss, f1, ...) to values.
type Metrics map[string]float64

// Options configures Run.
type Options struct {
	// Backend runs the graphs (see model.Backend).
	Backend compute.Backend
	// Store holds the variables. Variables already in it (e.g. a pretrained backbone loaded with
	// model.LoadVariablesInto) keep their values; the others are initialised from Seed.
	Store *gomlxmodel.Store
	// Loss builds the training loss graph.
	Loss LossFn
	// Batches returns the micro-batches of an epoch (0-based). It must be deterministic for a given
	// epoch (shuffle with a seed derived from the epoch), so that a resumed run continues exactly.
	Batches func(epoch int) ([]Batch, error)
	// Evaluate scores the current variables on the dev split. It must not change the variables.
	Evaluate func(ctx context.Context) (Metrics, error)
	// Select is the dev metric that picks the best checkpoint and drives early stopping.
	Select string
	// Minimize makes a lower Select better (e.g. "loss"); by default higher is better.
	Minimize bool
	// Loop holds the hyperparameters (learning rate, schedule, batch size is the caller's business).
	Loop config.TrainLoop
	// Seed seeds the initialisation of new variables and the dropout RNG.
	Seed int64
	// OutDir receives best/, state/, metrics.jsonl, curves.png and curves.svg.
	OutDir string
	// Log receives the progress bar and messages; os.Stderr when nil.
	Log io.Writer
	// AfterStep, when set, is called after each optimizer step with the number of steps done (tests
	// use it to interrupt a run).
	AfterStep func(step int)
	// Trace, when set, is called after each optimizer step with the micro-batches it trained on
	// and its loss (the GPU check writes them so that a reference trains on the same batches).
	Trace func(step int, group []Batch, loss float64)
	// EvalAtStart evaluates once before the first step of a new run, so that the initial variables
	// (e.g. a warm start or a pretrained backbone) compete for the best checkpoint.
	EvalAtStart bool
	// Shards > 1 splits each micro-batch with Split into that many shards whose gradients are
	// computed concurrently (one goroutine each, data parallelism on a multi-core CPU) and combined
	// in a fixed order before one AdamW update; the result does not depend on the number of cores.
	// The loss must draw its randomness through layers.Dropout (see shard.go). 0 or 1: no sharding.
	Shards int
	// Split cuts a micro-batch into n shards (SplitRows for inputs whose axis 0 is the batch).
	// Required when Shards > 1.
	Split func(b Batch, n int) ([]Batch, error)
	// Saved, when set, picks the model variables written to best/ and to the resume point (the
	// optimizer and RNG state are always saved); the others must be in Store before Run, every
	// time (e.g. a frozen pretrained base loaded from its snapshot, gigabytes that never change).
	Saved func(varPath string) bool
}

// Result summarises a finished (or interrupted) run.
type Result struct {
	// Steps is the number of optimizer steps done, TotalSteps the number planned.
	Steps, TotalSteps int
	// BestStep is the step of the best dev evaluation, Best its metrics.
	BestStep int
	Best     Metrics
	// Stop says why training ended: "completed", "early_stopping" or "interrupted".
	Stop string
	// ExamplesPerSec and TokensPerSec are the training throughput of this invocation (graph
	// compilation included), excluding evaluation time: for a resumed run, of the steps after the
	// resume point only. (The train rows of metrics.jsonl cover whole evaluation windows.)
	ExamplesPerSec, TokensPerSec float64
	// Resumed is true when the run continued from a saved state.
	Resumed bool
}

// File and directory names inside Options.OutDir; the checkpoint layout is package checkpoint's.
const (
	BestDir        = checkpoint.BestDir
	BestVariables  = checkpoint.BestVariables
	StateDir       = checkpoint.StateDir
	MetricsFile    = checkpoint.MetricsFile
	MetricsCSVFile = checkpoint.MetricsCSVFile
	PlotFile       = checkpoint.PlotFile
	PlotSVGFile    = checkpoint.PlotSVGFile
)

// OptimizerScope holds AdamW's moments, step counter and gradient accumulators.
const OptimizerScope = "/optimizer"

// state is the resume point, written to state/state.json next to all variables. Its JSON form
// (MarshalJSON) also carries "epoch": the 1-based epoch of the last step, as the log and
// metrics.jsonl print it.
type state struct {
	Step int `json:"step"`
	// EpochIndex is the 0-based epoch the run is in (with BatchInEpoch, where it resumes). It is
	// "epoch_index" in state.json; files written before it was named carry it as "epoch".
	EpochIndex   int     `json:"epoch_index"`
	BatchInEpoch int     `json:"batch_in_epoch"`
	BestScore    float64 `json:"best_score"`
	BestStep     int     `json:"best_step"`
	HasBest      bool    `json:"has_best"`
	BadEvals     int     `json:"evals_without_improvement"`
	LastEvalStep int     `json:"last_eval_step"`
	Done         bool    `json:"done"`
	Stop         string  `json:"stop,omitempty"`
	Best         Metrics `json:"best,omitempty"`
	// The train row of the next evaluation covers all steps since the last one, across an
	// interruption: the loss sum and counts of those steps, and the training seconds they took.
	WindowLoss     float64 `json:"window_loss_sum,omitempty"`
	WindowLossN    int     `json:"window_loss_steps,omitempty"`
	WindowExamples int     `json:"window_examples,omitempty"`
	WindowSeconds  float64 `json:"window_seconds,omitempty"`
	// Fresh marks the resume point written when a run starts from step 0, before anything else
	// reaches OutDir: a run killed before its first real resume point starts over (it has only
	// state.json), instead of finding progress without a resume point.
	Fresh bool `json:"fresh,omitempty"`
}

// epoch is the 1-based epoch the last step belongs to: a step that ended an epoch counts in that
// epoch, whether or not the position has moved to the next epoch's start yet (BatchInEpoch 0).
func (st *state) epoch() int {
	if st.BatchInEpoch == 0 && st.Step > 0 {
		return st.EpochIndex // the epoch just ended; EpochIndex already counts it
	}
	return st.EpochIndex + 1
}

// stateJSON drops state's methods, so that its JSON methods can use the default encoding.
type stateJSON state

// MarshalJSON writes the state with "epoch", the 1-based epoch of the last step: a reader of
// state.json sees the epoch the log printed (issue 23 item 4), next to the resume position.
func (st state) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		stateJSON
		Epoch int `json:"epoch"`
	}{stateJSON(st), st.epoch()})
}

// UnmarshalJSON reads what MarshalJSON writes, and the state files written before the epoch was
// 1-based, whose "epoch" was the 0-based position now in "epoch_index": they still resume.
func (st *state) UnmarshalJSON(b []byte) error {
	var v struct {
		stateJSON
		EpochIndex *int `json:"epoch_index"`
		Epoch      *int `json:"epoch"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*st = state(v.stateJSON)
	switch {
	case v.EpochIndex != nil:
		st.EpochIndex = *v.EpochIndex
	case v.Epoch != nil:
		st.EpochIndex = *v.Epoch // an old file: "epoch" was the 0-based index
	}
	return nil
}

func (o *Options) check() error {
	var missing []string
	if o.Backend == nil {
		missing = append(missing, "Backend")
	}
	if o.Store == nil {
		missing = append(missing, "Store")
	}
	if o.Loss == nil {
		missing = append(missing, "Loss")
	}
	if o.Batches == nil {
		missing = append(missing, "Batches")
	}
	if o.Evaluate == nil {
		missing = append(missing, "Evaluate")
	}
	if o.Select == "" {
		missing = append(missing, "Select")
	}
	if o.OutDir == "" {
		missing = append(missing, "OutDir")
	}
	if len(missing) > 0 {
		return fmt.Errorf("training: Options missing %s", strings.Join(missing, ", "))
	}
	return o.Loop.Validate("train")
}

// Stepper runs optimizer steps without the rest of the loop (evaluation, checkpoints, logs):
// Run uses it, and so do benchmarks that time the training step alone.
type Stepper struct {
	o                 *Options
	stepExec, accExec *gomlxmodel.Exec
	sharded           *shardedStepper
}

// NewStepper compiles nothing yet: graphs are built at the first step of each input shape. Only
// Backend, Store, Loss and Loop of o are used.
func NewStepper(o Options) (*Stepper, error) {
	s := &Stepper{o: &o}
	var err error
	if o.Shards > 1 {
		if s.sharded, err = newShardedStepper(s.o); err != nil {
			return nil, err
		}
		return s, nil
	}
	if s.stepExec, err = gomlxmodel.NewExec(o.Backend, o.Store, s.o.stepGraph(true)); err != nil {
		return nil, fmt.Errorf("training: %w", err)
	}
	s.stepExec.SetMaxCache(-1)
	if o.Loop.GradAccumulation > 1 {
		if s.accExec, err = gomlxmodel.NewExec(o.Backend, o.Store, s.o.stepGraph(false)); err != nil {
			return nil, fmt.Errorf("training: %w", err)
		}
		s.accExec.SetMaxCache(-1)
	}
	return s, nil
}

// Step runs one optimizer step over the micro-batches of group (at most Loop.GradAccumulation) at
// learning rate lr, and returns the mean loss of the micro-batches.
func (s *Stepper) Step(group []Batch, lr float64) (float64, error) {
	if len(group) == 0 || len(group) > s.o.Loop.GradAccumulation {
		return 0, fmt.Errorf("training: step over %d micro-batches, want 1..%d", len(group), s.o.Loop.GradAccumulation)
	}
	if s.sharded != nil {
		return s.sharded.step(group, lr)
	}
	var lossSum float64
	for i, b := range group {
		var outs []*tensors.Tensor
		var err error
		if i < len(group)-1 {
			outs, err = s.accExec.Call(b.Inputs...)
		} else {
			args := append([]any{float32(lr), float32(len(group))}, b.Inputs...)
			outs, err = s.stepExec.Call(args...)
		}
		if err != nil {
			return 0, err
		}
		l := float64(tensors.ToScalar[float32](outs[0]))
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return 0, fmt.Errorf("loss is %v (lower the learning rate?)", l)
		}
		lossSum += l
	}
	return lossSum / float64(len(group)), nil
}

// lr is the learning rate of optimizer step `step` (0-based) out of total.
func (o *Options) lr(step, total int) float64 {
	peak := o.Loop.LearningRate
	w := o.Loop.WarmupSteps
	if step < w {
		return peak * float64(step+1) / float64(w)
	}
	if total <= w {
		return peak
	}
	progress := float64(step-w) / float64(total-w)
	switch o.Loop.Decay {
	case "linear":
		return peak * (1 - progress)
	case "cosine":
		return peak * 0.5 * (1 + math.Cos(math.Pi*progress))
	}
	return peak
}

// stepGraph returns the graph of one micro-batch. With apply, its inputs start with the learning
// rate and the number of accumulated micro-batches, and it applies AdamW; without, it only adds the
// gradients to the accumulators.
func (o *Options) stepGraph(apply bool) func(*gomlxmodel.Scope, []*graph.Node) []*graph.Node {
	return func(root *gomlxmodel.Scope, inputs []*graph.Node) []*graph.Node {
		g := inputs[0].Graph()
		store := root.Store()
		store.SetTraining(g, true)
		var lr, count *graph.Node
		if apply {
			lr, count, inputs = inputs[0], inputs[1], inputs[2:]
		}
		loss := o.Loss(store.Scope(model.ModelScope), inputs)
		if loss.Rank() != 0 {
			panic(fmt.Sprintf("training: LossFn must return a scalar, got shape %s", loss.Shape()))
		}
		var vars []*gomlxmodel.Variable
		var nodes []*graph.Node
		for v := range store.IterVariables() {
			if v.Trainable && strings.HasPrefix(v.Path(), model.ModelScope+"/") && v.InUseByGraph(g) {
				vars = append(vars, v)
				nodes = append(nodes, v.NodeValue(g))
			}
		}
		grads := graph.Gradient(graph.ConvertDType(loss, dtypes.Float32), nodes...)
		opt := root.Store().Scope(OptimizerScope)
		accumulated := func(v *gomlxmodel.Variable) *gomlxmodel.Variable {
			acc := opt.At("accum").WithInitializer(graph.Zeros).VariableWithShape(escape(v.Path()), v.Shape())
			acc.SetTrainable(false)
			return acc
		}
		if !apply {
			for i, v := range vars {
				acc := accumulated(v)
				acc.SetNodeValue(graph.Add(acc.NodeValue(g), grads[i]))
			}
			return []*graph.Node{loss}
		}
		if o.Loop.GradAccumulation > 1 {
			for i, v := range vars {
				acc := accumulated(v)
				grads[i] = graph.Div(graph.Add(acc.NodeValue(g), grads[i]), graph.ConvertDType(count, grads[i].DType()))
				acc.SetNodeValue(graph.ZerosLike(acc.NodeValue(g)))
			}
		}
		return []*graph.Node{loss, o.update(opt, g, vars, grads, lr)}
	}
}

// update clips the gradients to the global norm Loop.ClipNorm and applies AdamW; it returns the
// global norm before clipping.
func (o *Options) update(opt *gomlxmodel.Scope, g *graph.Graph, vars []*gomlxmodel.Variable, grads []*graph.Node, lr *graph.Node) *graph.Node {
	norm := globalNorm(grads)
	if o.Loop.ClipNorm > 0 {
		scale := graph.Min(graph.ScalarOne(g, dtypes.Float32),
			graph.Div(graph.Scalar(g, dtypes.Float32, o.Loop.ClipNorm), graph.AddScalar(norm, 1e-6)))
		for i := range grads {
			grads[i] = graph.Mul(grads[i], graph.ConvertDType(scale, grads[i].DType()))
		}
	}
	o.adamW(opt, g, vars, grads, lr)
	return norm
}

func globalNorm(grads []*graph.Node) *graph.Node {
	var sum *graph.Node
	for _, gr := range grads {
		s := graph.ReduceAllSum(graph.Square(graph.ConvertDType(gr, dtypes.Float32)))
		if sum == nil {
			sum = s
		} else {
			sum = graph.Add(sum, s)
		}
	}
	return graph.Sqrt(sum)
}

// adamW applies one AdamW update (Loshchilov & Hutter): decoupled weight decay on variables of rank
// >= 2 (matrices, embeddings), none on biases and normalisation gains.
func (o *Options) adamW(opt *gomlxmodel.Scope, g *graph.Graph, vars []*gomlxmodel.Variable, grads []*graph.Node, lr *graph.Node) {
	stepVar := opt.VariableWithValue("step", float32(0))
	stepVar.SetTrainable(false)
	t := graph.AddScalar(stepVar.NodeValue(g), 1)
	stepVar.SetNodeValue(t)
	b1, b2 := o.Loop.Beta1, o.Loop.Beta2
	corr1 := graph.OneMinus(graph.Pow(graph.Scalar(g, dtypes.Float32, b1), t))
	corr2 := graph.OneMinus(graph.Pow(graph.Scalar(g, dtypes.Float32, b2), t))
	// Fold both bias corrections into the step size, as in the Adam paper's efficient form.
	stepSize := graph.Div(graph.Mul(lr, graph.Sqrt(corr2)), corr1)
	// Weight decay as a multiplicative shrink w*(1 - lr*wd), and the moments folded into few
	// elementwise passes: on the Go backend the optimizer's passes over large embedding tables cost
	// as much as the model's matmuls.
	shrink := graph.OneMinus(graph.MulScalar(lr, o.Loop.WeightDecay))
	eps := graph.MulScalar(graph.Sqrt(corr2), o.Loop.Epsilon)
	for i, v := range vars {
		dt := v.DType()
		grad := graph.ConvertDType(grads[i], dt)
		name := escape(v.Path())
		m := opt.At("m").WithInitializer(graph.Zeros).VariableWithShape(name, v.Shape())
		s := opt.At("v").WithInitializer(graph.Zeros).VariableWithShape(name, v.Shape())
		m.SetTrainable(false)
		s.SetTrainable(false)
		mNew := graph.Add(graph.MulScalar(m.NodeValue(g), b1), graph.MulScalar(grad, 1-b1))
		sNew := graph.Add(graph.MulScalar(s.NodeValue(g), b2), graph.MulScalar(graph.Mul(grad, grad), 1-b2))
		m.SetNodeValue(mNew)
		s.SetNodeValue(sNew)
		w := v.NodeValue(g)
		if o.Loop.WeightDecay > 0 && v.Shape().Rank() >= 2 {
			w = graph.Mul(w, graph.ConvertDType(shrink, dt))
		}
		update := graph.Div(mNew, graph.Add(graph.Sqrt(sNew), graph.ConvertDType(eps, dt)))
		v.SetNodeValue(graph.Sub(w, graph.Mul(update, graph.ConvertDType(stepSize, dt))))
	}
}

// escape turns a variable path into one variable name of the optimizer scope.
func escape(path string) string {
	return strings.ReplaceAll(strings.TrimPrefix(path, "/"), "/", "|")
}

func (o *Options) saveBest(m Metrics) error {
	if err := o.saveVariables(filepath.Join(o.OutDir, BestDir), m); err != nil {
		return fmt.Errorf("training: best checkpoint: %w", err)
	}
	return nil
}

// saveVariables writes the model variables (those Saved picks) and their dev metrics m into dir,
// as best/ holds them.
func (o *Options) saveVariables(dir string, m Metrics) error {
	if err := model.SaveVariables(filepath.Join(dir, BestVariables), o.Store, func(p string) bool {
		return strings.HasPrefix(p, model.ModelScope+"/") && (o.Saved == nil || o.Saved(p))
	}); err != nil {
		return err
	}
	return atomicio.WriteJSON(filepath.Join(dir, checkpoint.BestMetricsFile), m)
}

// CheckpointsDir holds the evaluation checkpoints train.keep_checkpoints keeps, one
// step-NNNNNNN/ directory per evaluation (zero-padded: name order is step order), whose best/
// holds that evaluation's variables; checkpoint.Seal makes each a checkpoint of its own at the
// end of training (checkpoint.KeptDir).
const CheckpointsDir = checkpoint.KeptDir

// keepCheckpoint saves the variables of the evaluation at step into CheckpointsDir/step-N/best/
// and removes the oldest beyond train.keep_checkpoints. The kept ones are read from the directory, so that a
// resumed run goes on counting those of the run before.
func (o *Options) keepCheckpoint(step int, m Metrics) error {
	n := o.Loop.KeepCheckpoints
	if n <= 0 {
		return nil
	}
	root := filepath.Join(o.OutDir, CheckpointsDir)
	if err := o.saveVariables(filepath.Join(root, fmt.Sprintf("step-%07d", step), BestDir), m); err != nil {
		return fmt.Errorf("training: checkpoint of step %d: %w", step, err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("training: %w", err)
	}
	var kept []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "step-") {
			kept = append(kept, e.Name())
		}
	}
	for _, name := range kept[:max(0, len(kept)-n)] {
		if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
			return fmt.Errorf("training: %w", err)
		}
	}
	return nil
}

// saveState writes all variables (model, optimizer, RNG) and the loop position into a fresh
// directory that replaces state/ only when complete (atomicio.Dir: one complete version is on disk
// at every instant), so variables and position always match.
func (o *Options) saveState(st state) error {
	d, err := atomicio.NewDir(filepath.Join(o.OutDir, StateDir), true)
	if err != nil {
		return fmt.Errorf("training: save state: %w", err)
	}
	defer d.Abort()
	if !st.Fresh {
		keep := func(p string) bool {
			return o.Saved == nil || !strings.HasPrefix(p, model.ModelScope+"/") || o.Saved(p)
		}
		if err := model.SaveVariables(d.Path(stateVariables), o.Store, keep); err != nil {
			return fmt.Errorf("training: save state: %w", err)
		}
	}
	if err := atomicio.WriteJSON(d.Path(stateFile), st); err != nil {
		return fmt.Errorf("training: save state: %w", err)
	}
	if err := d.Commit(); err != nil {
		return fmt.Errorf("training: save state: %w", err)
	}
	return nil
}

// saveFresh writes the resume point of a run that starts from step 0 (see state.Fresh).
func (o *Options) saveFresh() error {
	return o.saveState(state{Fresh: true})
}

// String writes the metrics sorted by name, "f1=0.8123 loss=0.3456", as the log shows them.
func (m Metrics) String() string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(" ")
		}
		fmt.Fprintf(&sb, "%s=%.4f", k, m[k])
	}
	return sb.String()
}
