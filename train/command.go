// Package train is the tracksum-train stage: its Command trains any task of the registry of
// package model/training (training.Register), or cross-validates one (training.RegisterCrossValidation).
// The model packages register themselves when linked in, so the command names none of them:
//
//	import (
//		_ "github.com/tracksum/tracksum/experiment/cv"         // --folds K for the tracker
//		_ "github.com/tracksum/tracksum/model/summarizer" // --task summarizer
//		_ "github.com/tracksum/tracksum/model/tracker"    // --task tracker
//	)
//
//	func main() { cli.Main(train.Command()) }
package train

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/training"
)

// DefaultTask is the --task default when it is registered (else the first registered task).
const DefaultTask = "tracker"

// loopFlags are the training-loop flags, bound to TASK.train.<key> for the chosen task.
var loopFlags = map[string]string{
	"epochs":        "epochs",
	"max-steps":     "max_steps",
	"batch-size":    "batch_size",
	"learning-rate": "learning_rate",
	"eval-every":    "eval_every",
	"plan-memory":   "device_memory",
	// Pretrained models only (refused in Run when no backbone applies).
	"precision":              "precision",
	"gradient-checkpointing": "gradient_checkpointing",
	"quantize":               "quantization",
}

// Command returns tracksum-train over the tasks registered so far (call it from main, after the
// model packages' init functions ran).
func Command() cli.Command {
	c := &command{tasks: training.Tasks(), cvs: training.CrossValidations()}
	c.names, c.def = taskNames(c.tasks)
	c.fs = c.flags()
	synopsis, desc := c.usage()
	return cli.Command{
		Name:        "tracksum-train",
		Synopsis:    synopsis,
		Description: desc,
		Flags:       c.fs,
		Run:         c.run,
	}
}

// command is tracksum-train over the registered tasks and cross-validations.
type command struct {
	tasks []training.Task
	cvs   []training.CrossValidation
	// names are the task names, the default (def) first.
	names []string
	def   string
	// cvTasks are the tasks a cross-validation is registered for.
	cvTasks []string
	fs      *pflag.FlagSet
}

// taskNames returns the names of tasks with the default task (DefaultTask when registered, else
// the first) first, as --help lists them, and that default.
func taskNames(tasks []training.Task) (names []string, def string) {
	names = make([]string, len(tasks))
	for i, t := range tasks {
		names[i] = t.Name
	}
	if len(names) > 0 {
		def = names[0]
	}
	if i := slices.Index(names, DefaultTask); i >= 0 {
		def = DefaultTask
		names = append(append([]string{DefaultTask}, names[:i]...), names[i+1:]...)
	}
	return names, def
}

// flags defines tracksum-train's flags: its own, the loop flags, every task's flags, and the
// cross-validation flags when one is registered.
func (c *command) flags() *pflag.FlagSet {
	def := c.def
	fs := cli.NewFlags("tracksum-train")
	fs.String("task", def, "model to train: "+orList(c.names))
	fs.String("data", "", "prepared directory (output of tracksum-prepare)")
	fs.String("out", "", "checkpoint directory, e.g. checkpoints/"+def)
	fs.Int64("seed", 3407, "random seed (initialisation, shuffling, dropout)")
	fs.Int("epochs", 0, "TASK.train.epochs")
	fs.Int("max-steps", 0, "TASK.train.max_steps (0: epochs decide)")
	fs.Int("batch-size", 0, "TASK.train.batch_size")
	fs.Float64("learning-rate", 0, "TASK.train.learning_rate")
	fs.Int("eval-every", 0, "TASK.train.eval_every (0: each epoch)")
	fs.String("precision", "", "TASK.train.precision with --pretrained: f32, bf16 (mixed: base weights and activations bf16, adapters and optimizer f32) or auto (bf16 on a CUDA backend, else f32)")
	fs.String("quantize", "", "TASK.train.quantization with --pretrained: none or nf4 (QLoRA: the frozen base's projections held as 4-bit NF4 codes, dequantized in each product; needs a LoRA rank > 0)")
	fs.Bool("gradient-checkpointing", false, "TASK.train.gradient_checkpointing with --pretrained: recompute each layer's activations in the backward pass (less memory, same gradients)")
	for _, t := range c.tasks {
		for _, f := range t.Flags {
			if fs.Lookup(f.Name) == nil {
				defineTyped(fs, f.Name, config.KeyKind(f.Key), f.Usage)
			}
		}
	}
	c.cvFlags(fs)
	fs.Bool("plan", false, "print the memory plan of a --pretrained recipe (parameters, weights, adapters, gradients, optimizer state, activations, total per device) and exit; needs only the snapshot's config.json and tokenizer files")
	fs.String("plan-memory", "", "TASK.train.device_memory: with --plan, the device's memory (80GiB, 80GB): says whether the recipe fits and what to change if not")
	fs.Bool("overwrite", false, "start fresh: replace a previous training run in --out instead of resuming it (kept until the new one has finished); a directory holding anything else is never replaced")
	fs.Bool("allow-changed-config", false, "resume a checkpoint although seed or TASK settings differ from its config.yaml (refused by default)")
	fs.Bool("migrate", false, "train nothing: write the manifest ("+checkpoint.ManifestFile+") of each checkpoint or cross-validation DIR written by an older release, its kind told from its files; an ambiguous or unfinished DIR is refused")
	return fs
}

// cvFlags defines the cross-validation flags (none when no cross-validation is registered). One
// set of --folds flags serves every cross-validation; the defaults are the first one's.
func (c *command) cvFlags(fs *pflag.FlagSet) {
	var cvModels, cvUsage, cvDefaults []string
	cvModel, devShare := "", 0.0
	for _, cv := range c.cvs {
		c.cvTasks = append(c.cvTasks, cv.Task)
		for _, m := range cv.Models {
			if !slices.Contains(cvModels, m) {
				cvModels = append(cvModels, m)
			}
		}
		if cv.ModelsUsage != "" {
			cvUsage = append(cvUsage, cv.ModelsUsage)
		}
		if cvModel == "" {
			cvModel, devShare = cv.DefaultModel, cv.DefaultDevShare
		}
		cvDefaults = append(cvDefaults, cv.Task+": "+cv.DefaultModel)
	}
	if len(c.cvs) > 1 { // each task has its own default model (applied in Run when --cv-model is not given)
		cvModel = ""
		cvUsage = append(cvUsage, "default per task: "+strings.Join(cvDefaults, ", "))
	}
	if len(c.cvs) == 0 {
		return
	}
	fs.Int("folds", 0, "cross-validate --task "+orList(c.cvTasks)+" on the K folds of --data (prepare --folds K): --out gets cv.json, oof.jsonl, fold-k/")
	fs.String("cv-model", cvModel, "with --folds: "+orList(cvModels)+" ("+strings.Join(cvUsage, "; ")+")")
	fs.Float64("dev-share", devShare, "with --folds: share of the training folds' abstracts used as dev (model selection)")
	var finals []string
	for _, cv := range c.cvs {
		if cv.Final != nil {
			finals = append(finals, cv.Task+": "+cv.FinalUsage)
		}
	}
	if len(finals) > 0 {
		fs.Bool("final", false, "train the final model with the step count chosen by the cross-validation --folds-from CV: "+strings.Join(finals, "; "))
		fs.String("folds-from", "", "with --final: the cross-validation directory (the --out of train --folds K on the same --data and config)")
	}
}

// usage returns the synopsis (one line per way of calling) and the description (the tasks).
func (c *command) usage() (synopsis, desc string) {
	synopsis = "--task " + strings.Join(c.names, "|") + " --data PREPARED_DIR --out CHECKPOINT_DIR [--config FILE] [flags]"
	for _, cv := range c.cvs {
		synopsis += "\n       tracksum-train --task " + cv.Task + " --folds K [--cv-model " + strings.Join(cv.Models, "|") + "] --data PREPARED_DIR --out CV_DIR"
		if cv.Final != nil {
			synopsis += "\n       tracksum-train --task " + cv.Task + " --final --folds-from CV_DIR --data PREPARED_DIR --out CHECKPOINT_DIR"
		}
	}
	synopsis += "\n       tracksum-train --migrate DIR..."
	desc = "Trains a model on a prepared directory. Tasks:\n"
	for _, t := range c.tasks {
		desc += fmt.Sprintf("  %-15s %s (config section %s)\n", t.Name, t.Description, t.Section)
	}
	desc += "The backend is GOMLX_BACKEND when set (e.g. xla:cuda), else xla:cpu when a PJRT plugin is installed,\n" +
		"else the pure-Go backend."
	return synopsis, desc
}

// run is the command's Run: it resolves the task, loads the config, refuses the flags that do not
// apply, then plans, or trains (a model, a cross-validation or a final model), afresh with
// --overwrite.
func (c *command) run(ctx context.Context, args []string) error {
	fs := c.fs
	// The task's own flags and the loop flags are bound to keys of the task's section, so
	// the task (train.task: --task, a profile, the environment) is resolved first.
	own := ownFlagKeys(fs)
	pre, err := cli.Peek(fs, own)
	if err != nil {
		return err
	}
	if pre.Train.Migrate {
		return migrateDirs(ctx, fs, args)
	}
	name := cmp.Or(pre.Train.Task, c.def)
	task, ok := training.LookupTask(name)
	switch {
	case len(args) > 0:
		return cli.Usagef("unexpected arguments %v", args)
	case !ok:
		return cli.Usagef("--task must be %s, got %q", orList(c.names), name)
	}
	// A flag of another task (e.g. --architecture with --task summarizer) would be ignored
	// silently: refuse it instead.
	for _, t := range c.tasks {
		for _, f := range t.Flags {
			mine := slices.ContainsFunc(task.Flags, func(g training.TaskFlag) bool { return g.Name == f.Name })
			if fs.Changed(f.Name) && !mine {
				return cli.Usagef("--%s applies to --task %s, not %s", f.Name, t.Name, task.Name)
			}
		}
	}
	cfg, src, err := cli.LoadTaskConfigSources(fs, flagKeys(own, task, c.tasks), task.Section)
	if err != nil {
		return err
	}
	if err := c.checkSettings(task, cfg); err != nil {
		return err
	}
	tc := cfg.Train
	if tc.Folds == 0 { // a cross-validation's --cv-model picks its own models
		warnUnread(os.Stderr, cfg, src, task.Name)
	}
	if tc.Plan {
		v, pretrained := training.ActiveBackbone(task.Name, cfg)
		if !pretrained || v.Plan == nil {
			return cli.Usagef("--plan plans a --pretrained causal LM of --task tracker or summarizer; give --pretrained DIR")
		}
		return v.Plan(ctx, cfg, training.Request{Log: os.Stdout})
	}
	req := training.Request{Data: tc.Data, Out: tc.Out, Log: os.Stderr, AllowChangedConfig: tc.AllowChangedConfig}
	if tc.Overwrite && req.AllowChangedConfig {
		return cli.Usagef("--overwrite starts afresh and --allow-changed-config resumes: give one of them")
	}
	if tc.Overwrite {
		return training.Overwrite(tc.Out, req.Log, func(dir string) error {
			req.Out = dir
			return c.train(ctx, task, cfg, req)
		})
	}
	return c.train(ctx, task, cfg, req)
}

// checkSettings refuses the settings that go against each other, an --out that is, lies in or
// holds an input, and a flag that would be ignored with task and cfg.
func (c *command) checkSettings(task training.Task, cfg *config.Config) error {
	tc := cfg.Train
	switch {
	case c.fs.Changed("plan-memory") && !tc.Plan:
		return cli.Usagef("--plan-memory goes with --plan")
	case tc.Overwrite && tc.Plan:
		return cli.Usagef("--overwrite replaces a training run; --plan trains nothing")
	case (tc.Data == "" || tc.Out == "") && !tc.Plan:
		return cli.Usagef("--data and --out are required")
	case tc.DevShare != nil && (math.IsNaN(*tc.DevShare) || math.IsInf(*tc.DevShare, 0)):
		return cli.Usagef("--dev-share %v: want a finite number", *tc.DevShare)
	}
	// The rule of every command (issue 22 defects 6 and 7): --out may not be, lie in or
	// hold an input.
	inputs := map[string]string{"--data": tc.Data, "--folds-from": tc.FoldsFrom, "tracker.pretrained": cfg.Tracker.Pretrained,
		"summarizer.pretrained": cfg.Summarizer.Pretrained}
	if err := cli.CheckOutputs(inputs, map[string]string{"--out": tc.Out}); err != nil {
		return err
	}
	// A single model (not a cross-validation, which may fill a pipeline's OUT/tracker)
	// is never trained into a cross-validation's directory.
	if tc.Out != "" && (len(c.cvs) == 0 || tc.Folds == 0) {
		if err := training.CheckNotFold(tc.Out); err != nil {
			return err
		}
	}
	if _, pretrained := training.ActiveBackbone(task.Name, cfg); !pretrained {
		return c.checkScratchFlags(task, cfg)
	}
	return nil
}

// checkScratchFlags refuses, for a from-scratch model, a backbone's own flag (e.g. --head,
// --lora-rank of --pretrained), which would be ignored silently.
func (c *command) checkScratchFlags(task training.Task, cfg *config.Config) error {
	fs := c.fs
	// The from-scratch models compute in float32 without checkpoints.
	if p, _ := cfg.Value(task.Section + ".train.precision"); fs.Changed("precision") && p == "bf16" {
		return cli.Usagef("--precision bf16 applies to --task %s with --pretrained only (the from-scratch model computes in f32)", task.Name)
	}
	if on, _ := cfg.Value(task.Section + ".train.gradient_checkpointing"); fs.Changed("gradient-checkpointing") && on == "true" {
		return cli.Usagef("--gradient-checkpointing applies to --task %s with --pretrained only", task.Name)
	}
	// A profile's nf4 (configs/paper.yaml) is ignored by the from-scratch models, as its
	// precision is; the flag given for one is refused.
	if q, _ := cfg.Value(task.Section + ".train.quantization"); fs.Changed("quantize") && q == config.QuantizationNF4 {
		return cli.Usagef("--quantize nf4 applies to --task %s with --pretrained only (the from-scratch model has no frozen base)", task.Name)
	}
	only := training.BackboneOnly(task.Name)
	for _, name := range slices.Sorted(maps.Keys(only)) {
		if v, _ := cfg.Value(keyOf(task, name)); fs.Changed(name) && v != "" {
			when, _, _ := strings.Cut(only[name], ":")
			return cli.Usagef("--%s applies to --task %s %s only", name, task.Name, when)
		}
	}
	return nil
}

// train trains what the settings ask for (a model, a cross-validation or a final model) into
// req.Out.
func (c *command) train(ctx context.Context, task training.Task, cfg *config.Config, req training.Request) error {
	tc, cvs := cfg.Train, c.cvs
	cv := tc.Folds != 0 || tc.Final || tc.FoldsFrom != "" || tc.CVModel != "" || tc.DevShare != nil
	// Cross-validation trains the from-scratch models: refuse it rather than ignore a
	// backbone's settings (e.g. --pretrained).
	if _, pretrained := training.ActiveBackbone(task.Name, cfg); pretrained && cv {
		return cli.Usagef("--folds and --final cross-validate the from-scratch %s only, not a --pretrained one", task.Name)
	}
	if len(cvs) == 0 {
		if cv {
			return cli.Usagef("no cross-validation is registered: --folds, --final, --folds-from, --cv-model and --dev-share do not apply")
		}
		return task.Train(ctx, cfg, req)
	}
	if tc.Final || tc.FoldsFrom != "" {
		req.FoldsFrom = tc.FoldsFrom
		i := slices.IndexFunc(cvs, func(cv training.CrossValidation) bool { return cv.Task == task.Name && cv.Final != nil })
		switch {
		case !hasFinal(cvs):
			return cli.Usagef("no cross-validation trains a final model: --final and --folds-from do not apply")
		case !tc.Final || tc.FoldsFrom == "":
			return cli.Usagef("--final and --folds-from CV_DIR go together")
		case i < 0:
			return cli.Usagef("--final trains --task %s only", orList(finalTasks(cvs)))
		case tc.Folds != 0 || tc.CVModel != "" || tc.DevShare != nil:
			return cli.Usagef("--final takes its folds from --folds-from: leave out --folds, --cv-model and --dev-share")
		}
		return cvs[i].Final(ctx, cfg, req)
	}
	req.Folds = tc.Folds
	if req.Folds != 0 || tc.CVModel != "" || tc.DevShare != nil {
		i := slices.IndexFunc(cvs, func(cv training.CrossValidation) bool { return cv.Task == task.Name })
		if i < 0 || req.Folds < 2 {
			return cli.Usagef("--folds K (K >= 2) cross-validates --task %s only; --cv-model and --dev-share need it", orList(c.cvTasks))
		}
		req.Model, req.DevShare = cmp.Or(tc.CVModel, cvs[i].DefaultModel), cvs[i].DefaultDevShare
		if tc.DevShare != nil {
			req.DevShare = *tc.DevShare
		}
		if !slices.Contains(cvs[i].Models, req.Model) {
			return cli.Usagef("--cv-model for --task %s must be %s, got %q", task.Name, orList(cvs[i].Models), req.Model)
		}
		return cvs[i].Run(ctx, cfg, req)
	}
	return task.Train(ctx, cfg, req)
}

// ownFlagKeys binds tracksum-train's own flags (those fs defines: the cross-validation ones only
// when one is registered) to their train.* keys, and --seed to seed.
func ownFlagKeys(fs *pflag.FlagSet) map[string]string {
	keys := map[string]string{"seed": "seed"}
	for flag, key := range map[string]string{
		"task": "train.task", "data": "train.data", "out": "train.out", "folds": "train.folds", "cv-model": "train.cv_model",
		"dev-share": "train.dev_share", "final": "train.final", "folds-from": "train.folds_from", "plan": "train.plan",
		"overwrite": "train.overwrite", "allow-changed-config": "train.allow_changed_config", "migrate": "train.migrate",
	} {
		if fs.Lookup(flag) != nil {
			keys[flag] = key
		}
	}
	return keys
}

// flagKeys binds every flag of tracksum-train for task: its own flags (own), the loop flags to
// task's section, the task's flags to their keys, and the other tasks' flags (refused when given)
// to theirs.
func flagKeys(own map[string]string, task training.Task, tasks []training.Task) map[string]string {
	keys := maps.Clone(own)
	for flag, key := range loopFlags {
		keys[flag] = task.Section + ".train." + key
	}
	for _, t := range append([]training.Task{task}, tasks...) {
		for _, f := range t.Flags {
			if _, ok := keys[f.Name]; !ok {
				keys[f.Name] = f.Key
			}
		}
	}
	return keys
}

// keyOf returns the key task binds its flag name to ("" for none).
func keyOf(task training.Task, name string) string {
	for _, f := range task.Flags {
		if f.Name == name {
			return f.Key
		}
	}
	return ""
}

// hasFinal reports whether a cross-validation trains a final model (--final is defined).
func hasFinal(cvs []training.CrossValidation) bool {
	return slices.ContainsFunc(cvs, func(cv training.CrossValidation) bool { return cv.Final != nil })
}

// finalTasks returns the tasks whose cross-validation has a final training.
func finalTasks(cvs []training.CrossValidation) []string {
	var out []string
	for _, cv := range cvs {
		if cv.Final != nil {
			out = append(out, cv.Task)
		}
	}
	return out
}

// orList writes names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	switch len(names) {
	case 0:
		return "(none registered)"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// defineTyped defines a task flag with the type of its config key, so that --help shows it (an
// int as int) and pflag rejects a value of the wrong type with the flag's name.
func defineTyped(fs *pflag.FlagSet, name string, kind reflect.Kind, usage string) {
	switch kind {
	case reflect.Int, reflect.Int64:
		fs.Int64(name, 0, usage)
	case reflect.Float64:
		fs.Float64(name, 0, usage)
	case reflect.Bool:
		fs.Bool(name, false, usage)
	default:
		fs.String(name, "", usage)
	}
}

// migrateDirs is tracksum-train --migrate DIR...: it writes the manifest of each checkpoint of an
// older release (checkpoint.Migrate), with no other flag.
func migrateDirs(ctx context.Context, fs *pflag.FlagSet, dirs []string) error {
	if len(dirs) == 0 {
		return cli.Usagef("--migrate needs the checkpoint directories to migrate: tracksum-train --migrate DIR...")
	}
	var other []string
	fs.Visit(func(f *pflag.Flag) {
		if f.Name != "migrate" {
			other = append(other, "--"+f.Name)
		}
	})
	if len(other) > 0 {
		return cli.Usagef("--migrate takes checkpoint directories only, not %s", strings.Join(other, ", "))
	}
	for _, dir := range dirs {
		m, wrote, err := checkpoint.Migrate(ctx, dir)
		if err != nil {
			return err
		}
		if !wrote {
			fmt.Fprintf(os.Stderr, "train: %s already has %s (%s checkpoint)\n", dir, checkpoint.ManifestFile, m.Name())
			continue
		}
		fmt.Fprintf(os.Stderr, "train: %s: wrote %s (%s checkpoint, %d files, %d members)\n", dir, checkpoint.ManifestFile, m.Name(), len(m.Files), len(m.Members))
	}
	return nil
}

// unreadSections are the config sections whose keys the model of a task may leave unread
// (config.Config.Unread): the tracker's and the summarizer's own tasks. The variants and the
// pipeline read both sections in their own ways, and are left out.
var unreadSections = map[string]string{"tracker": "tracker", "summarizer": "summarizer"}

// warnUnread writes one warning per key of task's section that the chosen model does not read
// and that the command line or the environment set (a profile holds recipes for several models,
// so its keys are not warned about): the setting would otherwise be accepted and ignored.
func warnUnread(w io.Writer, cfg *config.Config, src map[string]config.Source, task string) {
	section, ok := unreadSections[task]
	if !ok {
		return
	}
	unread := cfg.Unread(section)
	for _, key := range slices.Sorted(maps.Keys(unread)) {
		if s := src[key]; s.Layer == "env" || s.Layer == "flag" || s.Layer == "set" {
			fmt.Fprintf(w, "warning: %s (%s) is not read: %s\n", key, s, unread[key])
		}
	}
}
