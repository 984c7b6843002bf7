package cli_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/tracksum/tracksum/dataset/prepare"
	"github.com/tracksum/tracksum/eval"
	"github.com/tracksum/tracksum/export"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/serve"
	"github.com/tracksum/tracksum/train"

	// The tasks and cross-validations cmd/train links in, so that their flags are walked too.
	_ "github.com/tracksum/tracksum/experiment/cv"
	_ "github.com/tracksum/tracksum/experiment/cvtable6"
	_ "github.com/tracksum/tracksum/model/ete"
	_ "github.com/tracksum/tracksum/model/pretrained"
	_ "github.com/tracksum/tracksum/model/stt"
	_ "github.com/tracksum/tracksum/model/summarizer"
	_ "github.com/tracksum/tracksum/model/tracker"
)

// command is one tracksum command (or a train task) to walk: args select it (train's --task).
type command struct {
	name string
	cmd  func() cli.Command
	args []string
}

// commands lists every command of cmd/*, each subcommand, and tracksum-train once per registered
// task (its flags are bound to the task's section and keys).
func commands() []command {
	cs := []command{
		{"tracksum-prepare", prepare.Command, nil},
		{"tracksum-infer", infer.Command, nil},
		{"tracksum-eval", eval.Command, nil},
		{"tracksum-serve", serve.Command, nil},
		{"tracksum-export", export.Command, nil},
	}
	for _, sub := range eval.Command().Subcommands {
		name := sub.Name
		cs = append(cs, command{name, func() cli.Command {
			for _, s := range eval.Command().Subcommands {
				if s.Name == name {
					return s
				}
			}
			panic("no subcommand " + name)
		}, nil})
	}
	for _, t := range training.Tasks() {
		cs = append(cs, command{"tracksum-train --task " + t.Name, train.Command, []string{"--task", t.Name}})
	}
	return cs
}

// printConfig runs cmd with args and --print-config, returning what it printed.
func printConfig(t *testing.T, cmd cli.Command, args ...string) (string, error) {
	t.Helper()
	var b bytes.Buffer
	defer cli.CaptureStdout(&b)()
	if err := cmd.Flags.Parse(append(slices.Clone(args), "--print-config")); err != nil {
		return "", err
	}
	err := cmd.Run(context.Background(), cmd.Flags.Args())
	if !errors.Is(err, cli.ErrConfigPrinted) {
		return b.String(), err
	}
	return b.String(), nil
}

// TestEveryFlagBound walks the flag set of every command and fails on a flag (other than
// cli.Unbound: --config, --set, --print-config and Main's --quiet, --version, --help) that is not
// bound to a config key in the map the command gives cli.LoadConfig: every flag is a key, and a
// command reads its settings from the resolved config only (issue 20 item 6). Each flag, given
// alone, must then show as the source of its key in --print-config.
func TestEveryFlagBound(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			// A command that never reaches LoadConfig prints nothing; one with an unbound flag
			// fails there naming it.
			if out, err := printConfig(t, c.cmd(), c.args...); err != nil || !strings.Contains(out, "seed=") {
				t.Fatalf("--print-config: err = %v, printed %d bytes", err, len(out))
			}
			var task training.Task
			if len(c.args) > 0 {
				task, _ = training.LookupTask(c.args[1])
			}
			c.cmd().Flags.VisitAll(func(f *pflag.Flag) {
				if slices.Contains(cli.Unbound, f.Name) || slices.Contains(c.args, "--"+f.Name) || otherTasksFlag(task, f.Name) {
					return
				}
				value := strings.Trim(f.DefValue, "[]") // a list flag's default "[]" is given as empty
				if v, ok := validValue[f.Name]; ok {
					value = v
				}
				out, err := printConfig(t, c.cmd(), append(slices.Clone(c.args), "--"+f.Name+"="+value)...)
				if err != nil {
					t.Errorf("--%s=%s --print-config: %v", f.Name, value, err)
					return
				}
				// The source may carry a note on what the value means (serve.threshold 0: unset).
				if !strings.Contains(out, "# flag --"+f.Name+"\n") && !strings.Contains(out, "# flag --"+f.Name+" (") {
					t.Errorf("--%s: no key shows it as its source in --print-config", f.Name)
				}
			})
		})
	}
}

// validValue gives the flags whose --help default is no valid value of their key (tracksum-train's
// "0: the profile's" loop flags and task flags) one that is.
var validValue = map[string]string{"epochs": "1", "batch-size": "1", "learning-rate": "0.001", "precision": "f32",
	"head": "auto", "architecture": "ngram", "quantize": "none"}

// otherTasksFlag reports whether name is a flag of a train task other than task (refused when given
// with task, before the config is loaded).
func otherTasksFlag(task training.Task, name string) bool {
	if task.Name == "" || slices.ContainsFunc(task.Flags, func(f training.TaskFlag) bool { return f.Name == name }) {
		return false
	}
	for _, t := range training.Tasks() {
		if slices.ContainsFunc(t.Flags, func(f training.TaskFlag) bool { return f.Name == name }) {
			return true
		}
	}
	return false
}

// TestCommandKeysFromEnvAndSet: the keys of command settings take the environment and --set like
// any key (a decoding override from TRACKSUM_*, a model path from --set), and --print-config names
// where each came from.
func TestCommandKeysFromEnvAndSet(t *testing.T) {
	t.Setenv("TRACKSUM_INFER_DECODING_NO_REPEAT_NGRAM", "2")
	t.Setenv("TRACKSUM_SERVE_LISTEN", "127.0.0.1:0")
	out, err := printConfig(t, infer.Command(), "--set", "infer.tracker=T", "--beam-size", "3")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"infer.decoding.no_repeat_ngram=2", "# env TRACKSUM_INFER_DECODING_NO_REPEAT_NGRAM",
		"infer.tracker=T", "# set --set",
		"infer.decoding.beam_size=3", "# flag --beam-size",
		"infer.decoding.length_penalty= ", // unset: the checkpoint's
		"serve.listen=127.0.0.1:0", "# env TRACKSUM_SERVE_LISTEN",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--print-config lacks %q", want)
		}
	}
}
