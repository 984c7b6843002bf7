package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/training"
)

// Two toy tasks stand for the models: the command must reach them through the registry only.
var got struct {
	task string
	cfg  *config.Config
	req  training.Request
}

func init() {
	record := func(name string) func(context.Context, *config.Config, training.Request) error {
		return func(_ context.Context, cfg *config.Config, r training.Request) error {
			got.task, got.cfg, got.req = name, cfg, r
			if r.Data == "fail" {
				return errors.New("fail: no shards")
			}
			return nil
		}
	}
	training.Register(training.Task{Name: "toy-sum", Section: "summarizer", Description: "toy", Train: record("toy-sum")})
	training.Register(training.Task{Name: "toy-track", Section: "tracker", Description: "toy",
		Flags: []training.TaskFlag{{Name: "architecture", Key: "tracker.architecture", Usage: "toy"}}, Train: record("toy-track")})
	training.RegisterCrossValidation(training.CrossValidation{Task: "toy-track", Models: []string{"a", "b"}, DefaultModel: "a",
		DefaultDevShare: 0.25, Run: record("toy-track cv"), Final: record("toy-track final"), FinalUsage: "toy final"})
	// A second cross-validation with its own default model and dev share, as experiment/cv's summarizer
	// and pipeline ones: --cv-model and --dev-share default per task.
	training.Register(training.Task{Name: "toy-pipe", Section: "summarizer", Description: "toy", Train: record("toy-pipe")})
	training.RegisterCrossValidation(training.CrossValidation{Task: "toy-pipe", Models: []string{"p", "q"}, DefaultModel: "p",
		DefaultDevShare: 0.3, Run: record("toy-pipe cv")})
	// A variant, as model/pretrained's --pretrained: the same --task, chosen by a config key.
	training.RegisterBackbone(training.Backbone{Task: "toy-track", Flags: []training.TaskFlag{{Name: "pretrained", Key: "tracker.pretrained", Usage: "toy"},
		{Name: "lora-rank", Key: "tracker.lora.rank", Usage: "toy"}}, Description: "with --pretrained DIR: toy",
		Applies: func(cfg *config.Config) bool { return cfg.Tracker.Pretrained != "" }, Train: record("toy-track pretrained"),
		Plan: record("toy-track plan")})
}

func TestCommand(t *testing.T) {
	def := config.Default()
	for _, tc := range []struct {
		desc  string
		args  []string
		task  string // the registered function that ran
		usage string // a usage error containing this
		err   string // another error containing this
		// parseErr: the flag parser's error containing this
		parseErr string
		check    func(t *testing.T)
	}{
		{desc: "defaults kept when no flag is given", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o"}, task: "toy-sum",
			check: func(t *testing.T) {
				if got.cfg.Summarizer.Train.Epochs != def.Summarizer.Train.Epochs || got.cfg.Seed != def.Seed {
					t.Errorf("epochs %d seed %d, want the defaults", got.cfg.Summarizer.Train.Epochs, got.cfg.Seed)
				}
				if got.req.Data != "d" || got.req.Out != "o" || got.req.Log == nil {
					t.Errorf("request %+v", got.req)
				}
			}},
		{desc: "loop flags bound to the task's section", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "--epochs", "3", "--seed", "5"}, task: "toy-sum",
			check: func(t *testing.T) {
				if got.cfg.Summarizer.Train.Epochs != 3 || got.cfg.Tracker.Train.Epochs != def.Tracker.Train.Epochs || got.cfg.Seed != 5 {
					t.Errorf("summarizer epochs %d tracker epochs %d seed %d", got.cfg.Summarizer.Train.Epochs, got.cfg.Tracker.Train.Epochs, got.cfg.Seed)
				}
			}},
		{desc: "task flag", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--architecture", "ngram", "--batch-size", "8"}, task: "toy-track",
			check: func(t *testing.T) {
				if got.cfg.Tracker.Architecture != "ngram" || got.cfg.Tracker.Train.BatchSize != 8 {
					t.Errorf("architecture %q batch %d", got.cfg.Tracker.Architecture, got.cfg.Tracker.Train.BatchSize)
				}
			}},
		{desc: "cross-validation", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--folds", "3", "--cv-model", "b"}, task: "toy-track cv",
			check: func(t *testing.T) {
				if got.req.Folds != 3 || got.req.Model != "b" || got.req.DevShare != 0.25 {
					t.Errorf("request %+v", got.req)
				}
			}},
		{desc: "cross-validation defaults of the task", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--folds", "3"}, task: "toy-track cv",
			check: func(t *testing.T) {
				if got.req.Model != "a" || got.req.DevShare != 0.25 {
					t.Errorf("request %+v", got.req)
				}
			}},
		{desc: "cross-validation defaults of another task", args: []string{"--task", "toy-pipe", "--data", "d", "--out", "o", "--folds", "3"}, task: "toy-pipe cv",
			check: func(t *testing.T) {
				if got.req.Model != "p" || got.req.DevShare != 0.3 {
					t.Errorf("request %+v", got.req)
				}
			}},
		{desc: "another task's cv model", args: []string{"--task", "toy-pipe", "--data", "d", "--out", "o", "--folds", "3", "--cv-model", "a"}, usage: "--cv-model for --task toy-pipe must be p or q"},
		{desc: "another task's flag", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "--architecture", "ngram"}, usage: "--architecture applies to --task toy-track, not toy-sum"},
		{desc: "unknown task", args: []string{"--task", "nope", "--data", "d", "--out", "o"}, usage: `--task must be`},
		{desc: "precision bf16 of a from-scratch model", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "--precision", "bf16"}, usage: "--precision bf16 applies to --task toy-sum with --pretrained only"},
		{desc: "nf4 base of a from-scratch model", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "--quantize", "nf4"}, usage: "--quantize nf4 applies to --task toy-sum with --pretrained only"},
		{desc: "quantize bound to the task's section", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "--quantize", "none"}, task: "toy-sum",
			check: func(t *testing.T) {
				if got.cfg.Summarizer.Train.Quantization != "none" {
					t.Errorf("summarizer quantization %q", got.cfg.Summarizer.Train.Quantization)
				}
			}},
		{desc: "quantize value", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "--quantize", "int8"}, err: "summarizer.train.quantization: must be one of [none nf4], got \"int8\""},
		{desc: "checkpointing of a from-scratch model", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "--gradient-checkpointing"}, usage: "--gradient-checkpointing applies to --task toy-sum with --pretrained only"},
		{desc: "quantization of a from-scratch model", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "--quantize", "nf4"}, usage: "--quantize nf4 applies to --task toy-sum with --pretrained only"},
		{desc: "quantize flag bound to the task's section", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--pretrained", "snap", "--quantize", "nf4"}, task: "toy-track pretrained",
			check: func(t *testing.T) {
				if got.cfg.Tracker.Train.Quantization != "nf4" || got.cfg.Summarizer.Train.Quantization != "none" {
					t.Errorf("tracker quantization %q summarizer quantization %q", got.cfg.Tracker.Train.Quantization, got.cfg.Summarizer.Train.Quantization)
				}
			}},
		{desc: "an unknown quantization", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--pretrained", "snap", "--quantize", "int4"}, err: `tracker.train.quantization: must be one of [none nf4], got "int4"`},
		{desc: "precision and checkpointing flags bound to the task's section", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "--precision", "f32"}, task: "toy-sum",
			check: func(t *testing.T) {
				if got.cfg.Summarizer.Train.Precision != "f32" || got.cfg.Tracker.Train.Precision != "auto" {
					t.Errorf("summarizer precision %q tracker precision %q", got.cfg.Summarizer.Train.Precision, got.cfg.Tracker.Train.Precision)
				}
			}},
		{desc: "no --out", args: []string{"--task", "toy-sum", "--data", "d"}, usage: "--data and --out are required"},
		{desc: "arguments", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "x"}, usage: "unexpected arguments"},
		{desc: "folds of a task without cross-validation", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "--folds", "3"}, usage: "cross-validates --task"},
		{desc: "one fold", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--folds", "1"}, usage: "K >= 2"},
		{desc: "dev share without folds", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--dev-share", "0.2"}, usage: "need it"},
		{desc: "final", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--final", "--folds-from", "cv", "--max-steps", "9"}, task: "toy-track final",
			check: func(t *testing.T) {
				if got.req.FoldsFrom != "cv" || got.req.Data != "d" || got.req.Out != "o" || got.req.Folds != 0 {
					t.Errorf("request %+v", got.req)
				}
			}},
		{desc: "final without --folds-from", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--final"}, usage: "go together"},
		{desc: "--folds-from without --final", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--folds-from", "cv"}, usage: "go together"},
		{desc: "final of a task without one", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "--final", "--folds-from", "cv"}, usage: "--final trains --task toy-track only"},
		{desc: "final with --folds", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--final", "--folds-from", "cv", "--folds", "3"}, usage: "leave out --folds"},
		{desc: "variant chosen by its config key", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--pretrained", "snap"}, task: "toy-track pretrained",
			check: func(t *testing.T) {
				if got.cfg.Tracker.Pretrained != "snap" {
					t.Errorf("tracker.pretrained %q", got.cfg.Tracker.Pretrained)
				}
			}},
		{desc: "variant's flag on another task", args: []string{"--task", "toy-sum", "--data", "d", "--out", "o", "--pretrained", "snap"}, usage: "--pretrained applies to --task toy-track"},
		{desc: "variant refuses cross-validation", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--pretrained", "snap", "--folds", "3"}, usage: "not a --pretrained one"},
		{desc: "variant's typed flag", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--pretrained", "snap", "--lora-rank", "0"}, task: "toy-track pretrained",
			check: func(t *testing.T) {
				if got.cfg.Tracker.LoRA.Rank != 0 || got.cfg.Summarizer.LoRA.Rank != def.Summarizer.LoRA.Rank {
					t.Errorf("tracker.lora.rank %d summarizer.lora.rank %d", got.cfg.Tracker.LoRA.Rank, got.cfg.Summarizer.LoRA.Rank)
				}
			}},
		{desc: "variant's typed flag, bad value", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--pretrained", "snap", "--lora-rank", "x"},
			parseErr: `invalid argument "x" for "--lora-rank" flag`},
		{desc: "variant's flag without the variant", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--lora-rank", "0"},
			usage: "--lora-rank applies to --task toy-track with --pretrained DIR only"},
		{desc: "variant's key set empty", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--pretrained", ""}, task: "toy-track"},
		{desc: "plan without --data and --out", args: []string{"--task", "toy-track", "--pretrained", "snap", "--plan", "--plan-memory", "80GiB"}, task: "toy-track plan",
			check: func(t *testing.T) {
				if got.cfg.Tracker.Train.DeviceMemory != "80GiB" {
					t.Errorf("device memory %q, want 80GiB from --plan-memory", got.cfg.Tracker.Train.DeviceMemory)
				}
			}},
		{desc: "plan of a model without one", args: []string{"--task", "toy-track", "--plan"}, usage: "--plan plans a --pretrained causal LM"},
		{desc: "overwrite with plan", args: []string{"--task", "toy-track", "--pretrained", "snap", "--plan", "--overwrite"}, usage: "--plan trains nothing"},
		{desc: "plan memory without plan", args: []string{"--task", "toy-track", "--data", "d", "--out", "o", "--plan-memory", "80GiB"}, usage: "--plan-memory goes with --plan"},
		{desc: "plan memory without a unit", args: []string{"--task", "toy-track", "--pretrained", "snap", "--plan", "--plan-memory", "80"}, err: "tracker.train.device_memory"},
		{desc: "training error", args: []string{"--task", "toy-sum", "--data", "fail", "--out", "o"}, task: "toy-sum", err: "no shards"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got.task, got.cfg = "", nil
			cmd := Command()
			if err := cmd.Flags.Parse(tc.args); tc.parseErr != "" || err != nil {
				// A typed flag's bad value is refused by the flag parser, naming the flag.
				if tc.parseErr == "" || err == nil || !strings.Contains(err.Error(), tc.parseErr) {
					t.Fatalf("parse error %v, want one with %q", err, tc.parseErr)
				}
				return
			}
			err := cmd.Run(context.Background(), cmd.Flags.Args())
			switch {
			case tc.usage != "":
				if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), tc.usage) {
					t.Fatalf("err = %v, want a usage error with %q", err, tc.usage)
				}
			case tc.err != "":
				if err == nil || errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			}
			if got.task != tc.task {
				t.Errorf("ran %q, want %q", got.task, tc.task)
			}
			if tc.check != nil && got.cfg != nil {
				tc.check(t)
			}
		})
	}
}

// TestTrainOutHoldsInput: train shares the rule of issue 22 defects 6 and 7: an --out that holds,
// is or lies in an input (--data, --pretrained, --folds-from) is refused before any task runs.
func TestTrainOutHoldsInput(t *testing.T) {
	root := t.TempDir()
	data, snap, cvDir := filepath.Join(root, "P"), filepath.Join(root, "snap"), filepath.Join(root, "cv")
	for _, d := range []string{data, snap, cvDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A cross-validation directory (issue 22 defect 9: a plain train into CV/fold-1 was taken
	// for the fold by the CV's resume).
	if err := os.WriteFile(filepath.Join(cvDir, training.CrossValidationMarker), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc string
		args []string
		want string
	}{
		{"--out holds --data", []string{"--task", "toy-sum", "--data", data, "--out", root}, "--data " + data + " is inside --out " + root},
		{"--out is --data", []string{"--task", "toy-sum", "--data", data, "--out", data}, "is the same file as --data"},
		{"--out holds the pretrained base", []string{"--task", "toy-track", "--data", data, "--out", root, "--pretrained", snap}, "is inside --out"},
		{"plain train into a cross-validation's fold", []string{"--task", "toy-track", "--data", data, "--out", filepath.Join(cvDir, "fold-1")}, "inside the cross-validation directory"},
		{"--out inside --folds-from", []string{"--task", "toy-track", "--data", filepath.Join(root, "d2"), "--out", filepath.Join(cvDir, "final"), "--final", "--folds-from", cvDir}, "inside the --folds-from directory"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got.task = ""
			cmd := Command()
			if err := cmd.Flags.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := cmd.Run(context.Background(), cmd.Flags.Args())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if got.task != "" {
				t.Errorf("ran %q", got.task)
			}
		})
	}
}

// TestHelpListsTasks: --help names every registered task and the cross-validation, from the registry.
func TestHelpListsTasks(t *testing.T) {
	cmd := Command()
	for _, want := range []string{"toy-sum", "toy-track"} {
		if !strings.Contains(cmd.Synopsis, want) || !strings.Contains(cmd.Description, want) {
			t.Errorf("help lacks %q:\n%s\n%s", want, cmd.Synopsis, cmd.Description)
		}
	}
	if f := cmd.Flags.Lookup("final"); f == nil || !strings.Contains(f.Usage, "toy-track: toy final") || !strings.Contains(cmd.Synopsis, "--final --folds-from CV_DIR") {
		t.Errorf("--final: %+v\n%s", f, cmd.Synopsis)
	}
	if f := cmd.Flags.Lookup("cv-model"); f == nil || f.DefValue != "" || !strings.Contains(f.Usage, "toy-pipe: p, toy-track: a") {
		t.Errorf("--cv-model: %+v, want no default and the default per task in its usage", f)
	}
	if f := cmd.Flags.Lookup("task"); f == nil || f.Usage != "model to train: toy-pipe, toy-sum or toy-track" {
		t.Errorf("--task usage: %+v", f)
	}
}

// TestTrainOverwrite: issue 23 item 3. --overwrite starts afresh: the task trains into a temporary
// sibling of --out while the previous run stays there, which a failed run keeps and a finished one
// replaces; --allow-changed-config (a resume) does not go with it.
func TestTrainOverwrite(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "ck")
	writePrevious := func(t *testing.T) {
		t.Helper()
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, "hparams.json"), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) error {
		cmd := Command()
		if err := cmd.Flags.Parse(append([]string{"--task", "toy-sum", "--out", out, "--overwrite"}, args...)); err != nil {
			t.Fatal(err)
		}
		return cmd.Run(context.Background(), cmd.Flags.Args())
	}
	tests := []struct {
		desc     string
		args     []string
		usage    string
		err      string
		previous bool // --out still holds the previous run afterwards
	}{
		{desc: "with --allow-changed-config", args: []string{"--data", "d", "--allow-changed-config"}, usage: "give one of them", previous: true},
		{desc: "failed run keeps the previous one", args: []string{"--data", "fail"}, err: "no shards", previous: true},
		{desc: "finished run replaces the previous one", args: []string{"--data", "d"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			writePrevious(t)
			got.req = training.Request{}
			err := run(tc.args...)
			switch {
			case tc.usage != "":
				if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), tc.usage) {
					t.Fatalf("err = %v, want a usage error with %q", err, tc.usage)
				}
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			}
			if tc.usage == "" && (got.req.Out == out || filepath.Dir(got.req.Out) != root) {
				t.Errorf("trained into %q, want a temporary sibling of %s", got.req.Out, out)
			}
			if _, err := os.Stat(filepath.Join(out, "hparams.json")); (err == nil) != tc.previous {
				t.Errorf("previous run still in --out: %v, want %v", err == nil, tc.previous)
			}
		})
	}
}

// TestMigrate: tracksum-train --migrate DIR... writes the manifest of an older release's
// checkpoint, leaves a migrated one alone, refuses an ambiguous directory (naming it) and any
// other flag.
func TestMigrate(t *testing.T) {
	dir := t.TempDir()
	old, ambiguous := filepath.Join(dir, "old"), filepath.Join(dir, "ambiguous")
	for name, body := range map[string]string{
		"old/summarizer.json": "{}", "old/tokenizer.json": "{}", "old/config.yaml": "", "old/best/model.safetensors": "w",
		"ambiguous/summarizer.json": "{}", "ambiguous/hparams.json": "{}", "ambiguous/best/model.safetensors": "w",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		desc  string
		args  []string
		usage string
		err   string
	}{
		{"migrates", []string{"--migrate", old}, "", ""},
		{"already migrated", []string{"--migrate", old}, "", ""},
		{"ambiguous", []string{"--migrate", ambiguous}, "", ambiguous + " is ambiguous: it holds both hparams.json and summarizer.json"},
		{"no directory", []string{"--migrate"}, "--migrate needs the checkpoint directories", ""},
		{"other flags", []string{"--migrate", "--task", "toy-sum", old}, "--migrate takes checkpoint directories only, not --task", ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cmd := Command()
			if err := cmd.Flags.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := cmd.Run(context.Background(), cmd.Flags.Args())
			switch {
			case tc.usage != "":
				if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), tc.usage) {
					t.Fatalf("err = %v, want a usage error with %q", err, tc.usage)
				}
			case tc.err != "":
				if !errors.Is(err, checkpoint.ErrCheckpoint) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			}
		})
	}
	if m, err := checkpoint.Open(t.Context(), old); err != nil || m.Migrated || m.Kind != checkpoint.KindSummarizer {
		t.Errorf("Open after --migrate: %+v, %v", m, err)
	}
	if _, err := os.Stat(filepath.Join(ambiguous, checkpoint.ManifestFile)); err == nil {
		t.Error("the ambiguous directory got a manifest")
	}
}

// TestWarnUnread is issue 35 item 19 at the command: a key the chosen model does not read, set on
// the command line or in the environment, is named on stderr with why; a profile's keys and the
// keys the model reads are not; the tasks whose models read both sections get no warning.
func TestWarnUnread(t *testing.T) {
	cfg := config.Default()
	src := map[string]config.Source{
		"tracker.context_rescoring":   {Layer: "set", From: "--set"},
		"tracker.train.learning_rate": {Layer: "flag", From: "--learning-rate"},
		"tracker.train.epochs":        {Layer: "env", From: "TRACKSUM_TRACKER_TRAIN_EPOCHS"},
		"tracker.d_model":             {Layer: "file", From: "configs/tiny.yaml"},
		"tracker.threshold":           {Layer: "set", From: "--set"},
	}
	for _, tc := range []struct {
		task string
		want []string
	}{
		{"tracker", []string{
			"warning: tracker.context_rescoring (set --set) is not read: the lexical-context tracker fits a logistic regression with its context rescorer (always stacked)",
			"warning: tracker.train.epochs (env TRACKSUM_TRACKER_TRAIN_EPOCHS) is not read: the lexical-context tracker",
			"warning: tracker.train.learning_rate (flag --learning-rate) is not read: the lexical-context tracker",
		}},
		{"toy-pipe", nil},
	} {
		var b strings.Builder
		warnUnread(&b, &cfg, src, tc.task)
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if tc.want == nil {
			if b.Len() > 0 {
				t.Errorf("%s: warned %q, want nothing", tc.task, b.String())
			}
			continue
		}
		if len(lines) != len(tc.want) {
			t.Fatalf("%s: warnings\n%s\nwant %d", tc.task, b.String(), len(tc.want))
		}
		for i, w := range tc.want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("%s: warning %q, want it to start with %q", tc.task, lines[i], w)
			}
		}
	}
}
