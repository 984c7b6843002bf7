package training

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/tracksum/tracksum/config"
)

// A Task is a model that tracksum-train can train (--task Name). Each model package registers its
// task in an init function and cmd/train links it in with a blank import, so that adding a model
// needs no edit to the command (package train).
type Task struct {
	// Name is the --task value, e.g. "tracker".
	Name string
	// Section is the config section of the model's settings: the command binds --epochs,
	// --max-steps, --batch-size, --learning-rate and --eval-every to Section.train.*.
	Section string
	// Description is one line for --help.
	Description string
	// Flags are the task's own string flags, each bound to a config key when the task is trained.
	Flags []TaskFlag
	// Train trains the model on the prepared directory req.Data into the checkpoint req.Out.
	Train func(ctx context.Context, cfg *config.Config, req Request) error
}

// TaskFlag is a flag of one task, bound to the config key Key (e.g. "architecture" ->
// "tracker.architecture"). Its value is a string; the config loader converts it to the key's type.
type TaskFlag struct {
	Name, Key, Usage string
}

// Request is what tracksum-train asks of a task or of a cross-validation besides the config.
type Request struct {
	// Data is the prepared directory, Out the checkpoint (or cross-validation) directory.
	Data, Out string
	// AllowChangedConfig: see TaskOptions.AllowChangedConfig.
	AllowChangedConfig bool
	// Log receives progress and messages.
	Log io.Writer
	// Folds, Model and DevShare configure a cross-validation (--folds K, --cv-model, --dev-share);
	// unused by Task.Train.
	Folds    int
	Model    string
	DevShare float64
	// FoldsFrom is the cross-validation directory of a final training (--final --folds-from CV);
	// unused by Task.Train.
	FoldsFrom string
	// Trace: see Options.Trace (the pretrained tasks pass it on).
	Trace func(step int, group []Batch, loss float64)
}

// TaskOptions are the parts of a task's training run that are not configuration, one shape for
// every task (tracker.TrainOptions, summarizer.TrainOptions, variant.Options). D is what a
// cross-validation fold gives the task instead of its prepared splits (Data).
type TaskOptions[D any] struct {
	// Log receives progress and messages; os.Stderr when nil.
	Log io.Writer
	// AfterStep, when set, is called after each optimizer step of a from-scratch training loop
	// (tests interrupt runs with it); the pretrained fine-tuning does not call it.
	AfterStep func(step int)
	// AllowChangedConfig lets a rerun into a checkpoint with training progress continue although
	// seed or the task's settings differ from those it was trained with (see CheckConfig); by
	// default that is refused.
	AllowChangedConfig bool
	// Part marks a model trained as a part of another checkpoint (model/stt's two models,
	// model/ete's summarizer): Train then leaves checkpoint.json to the caller, which writes it
	// once its own files are in place, so that the directory is never sealed as another kind.
	// The variants, never a part, ignore it.
	Part bool
	// Trace, when set, is called after each optimizer step with its micro-batches and loss (the
	// GPU check's per-step figures; see Options.Trace).
	Trace func(step int, group []Batch, loss float64)
	// Data, when set, is what the task trains and selects on instead of the prepared train and
	// dev splits of its data directory, which still supplies the tokenizer: the tracker's and the
	// summarizer's rows (read with that tokenizer), or the variants' assignment of abstracts to
	// splits (variant.Assign).
	Data D
}

// OptionsOf returns the options of a task's run that tracksum-train's request r carries (its
// log, --allow-changed-config and trace), every task's Train taking the same shape:
// Train(ctx, cfg, r.Data, r.Out, OptionsOf[D](r)).
func OptionsOf[D any](r Request) TaskOptions[D] {
	return TaskOptions[D]{Log: r.Log, AllowChangedConfig: r.AllowChangedConfig, Trace: r.Trace}
}

// CrossValidation is K-fold cross-validation of a task on the folds of a prepared directory
// (tracksum-train --folds K); package experiment/cv registers the tracker's.
type CrossValidation struct {
	// Task is the name of the task cross-validated.
	Task string
	// Models are the accepted --cv-model values, DefaultModel the one used when none is given.
	Models       []string
	DefaultModel string
	// ModelsUsage says what each model is, for --help.
	ModelsUsage string
	// DefaultDevShare is the --dev-share default: the share of the training folds used as dev.
	DefaultDevShare float64
	// Run cross-validates into req.Out.
	Run func(ctx context.Context, cfg *config.Config, req Request) error
	// Final, when set, trains the final model into req.Out on every abstract of req.Data for the
	// step count the cross-validation req.FoldsFrom chose (tracksum-train --final --folds-from CV).
	Final func(ctx context.Context, cfg *config.Config, req Request) error
	// FinalUsage says, for --help, what Final trains on and how it picks the step count.
	FinalUsage string
}

// A Backbone trains a registered task on another model when the config asks for it: tracksum-train
// --task tracker --pretrained DIR fine-tunes a pretrained model (package model/pretrained) where
// the same command without it trains model/tracker's model from scratch. The task keeps its name,
// section and loop flags; the backbone's Flags are added to the task's, and its Train runs instead
// of the task's whenever Applies(cfg).
type Backbone struct {
	// Task is the name of the registered task.
	Task string
	// Flags are added to the task's flags (e.g. --pretrained bound to tracker.pretrained).
	Flags []TaskFlag
	// Description is appended to the task's in --help (e.g. "with --pretrained DIR: ...").
	Description string
	// Applies reports whether the resolved config selects the backbone.
	Applies func(cfg *config.Config) bool
	// Train trains the task on the backbone, as Task.Train.
	Train func(ctx context.Context, cfg *config.Config, req Request) error
	// Plan, when set, writes the backbone's memory plan to req.Log without training and without
	// reading weights (tracksum-train --plan); req.Data and req.Out are unused.
	Plan func(ctx context.Context, cfg *config.Config, req Request) error
}

var registry struct {
	sync.Mutex
	tasks     map[string]Task
	cvs       map[string]CrossValidation
	backbones map[string][]Backbone
}

// RegisterBackbone adds a backbone of a task (registered before or after it). It panics when a
// field is missing.
func RegisterBackbone(v Backbone) {
	registry.Lock()
	defer registry.Unlock()
	if v.Task == "" || v.Applies == nil || v.Train == nil {
		panic(fmt.Sprintf("training.RegisterBackbone: backbone of %q needs a task, Applies and Train", v.Task))
	}
	if registry.backbones == nil {
		registry.backbones = map[string][]Backbone{}
	}
	registry.backbones[v.Task] = append(registry.backbones[v.Task], v)
}

// ActiveBackbone returns the backbone of task that cfg selects, if any.
func ActiveBackbone(task string, cfg *config.Config) (Backbone, bool) {
	registry.Lock()
	vs := slices.Clone(registry.backbones[task])
	registry.Unlock()
	for _, v := range vs {
		if v.Applies(cfg) {
			return v, true
		}
	}
	return Backbone{}, false
}

// BackboneOnly returns, for each flag that only the backbones of task add (not the task itself),
// the description of the first backbone adding it: a flag such as --head means nothing unless its
// backbone applies (tracksum-train refuses it then).
func BackboneOnly(task string) map[string]string {
	registry.Lock()
	defer registry.Unlock()
	own := registry.tasks[task].Flags
	out := map[string]string{}
	for _, v := range registry.backbones[task] {
		for _, f := range v.Flags {
			_, seen := out[f.Name]
			if !seen && !slices.ContainsFunc(own, func(g TaskFlag) bool { return g.Name == f.Name }) {
				out[f.Name] = v.Description
			}
		}
	}
	return out
}

// withBackbones returns t with its backbones' flags, and a Train that runs the backbone cfg selects
// (else t's own). The registry's lock is held.
func withBackbones(t Task) Task {
	vs := registry.backbones[t.Name]
	if len(vs) == 0 {
		return t
	}
	t.Flags = slices.Clone(t.Flags)
	for _, v := range vs {
		if v.Description != "" {
			t.Description += "; " + v.Description
		}
		for _, f := range v.Flags {
			if !slices.ContainsFunc(t.Flags, func(g TaskFlag) bool { return g.Name == f.Name }) {
				t.Flags = append(t.Flags, f)
			}
		}
	}
	own := t.Train
	t.Train = func(ctx context.Context, cfg *config.Config, req Request) error {
		if v, ok := ActiveBackbone(t.Name, cfg); ok {
			return v.Train(ctx, cfg, req)
		}
		return own(ctx, cfg, req)
	}
	return t
}

// Register adds a task to the registry. It panics on an empty or duplicate name or a missing
// Train function, programming errors found as soon as the binary starts (as database/sql.Register).
func Register(t Task) {
	registry.Lock()
	defer registry.Unlock()
	if t.Name == "" || t.Section == "" || t.Train == nil {
		panic(fmt.Sprintf("training.Register: task %q needs a name, a config section and a Train function", t.Name))
	}
	if _, dup := registry.tasks[t.Name]; dup {
		panic(fmt.Sprintf("training.Register: task %q registered twice", t.Name))
	}
	if registry.tasks == nil {
		registry.tasks = map[string]Task{}
	}
	registry.tasks[t.Name] = t
}

// RegisterCrossValidation adds the cross-validation of a task. It panics on a second one for the
// same task or a missing Run function.
func RegisterCrossValidation(cv CrossValidation) {
	registry.Lock()
	defer registry.Unlock()
	if cv.Task == "" || cv.Run == nil || !slices.Contains(cv.Models, cv.DefaultModel) {
		panic(fmt.Sprintf("training.RegisterCrossValidation: %q needs a task, a Run function and a default among its models", cv.Task))
	}
	if _, dup := registry.cvs[cv.Task]; dup {
		panic(fmt.Sprintf("training.RegisterCrossValidation: task %q registered twice", cv.Task))
	}
	if registry.cvs == nil {
		registry.cvs = map[string]CrossValidation{}
	}
	registry.cvs[cv.Task] = cv
}

// Tasks returns the registered tasks sorted by name.
func Tasks() []Task {
	registry.Lock()
	defer registry.Unlock()
	out := make([]Task, 0, len(registry.tasks))
	for _, t := range registry.tasks {
		out = append(out, withBackbones(t))
	}
	slices.SortFunc(out, func(a, b Task) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// LookupTask returns the registered task called name.
func LookupTask(name string) (Task, bool) {
	registry.Lock()
	defer registry.Unlock()
	t, ok := registry.tasks[name]
	if !ok {
		return t, false
	}
	return withBackbones(t), true
}

// CrossValidations returns the registered cross-validations sorted by task name.
func CrossValidations() []CrossValidation {
	registry.Lock()
	defer registry.Unlock()
	out := make([]CrossValidation, 0, len(registry.cvs))
	for _, cv := range registry.cvs {
		out = append(out, cv)
	}
	slices.SortFunc(out, func(a, b CrossValidation) int { return strings.Compare(a.Task, b.Task) })
	return out
}
