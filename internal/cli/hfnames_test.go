package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// runTask runs a command that, as tracksum-train does, peeks at the config, then loads it for the
// task section named by --set train.task (default tracker); it returns the exit code, what it
// printed on stdout and the notes of stderr.
func runTask(t *testing.T, args ...string) (code int, out, notes string) {
	t.Helper()
	var o, e bytes.Buffer
	oldOut, oldErr := stdout, stderr
	stdout, stderr = &o, &e
	t.Cleanup(func() { stdout, stderr = oldOut, oldErr })
	fs := NewFlags("tracksum-x")
	fs.Float64("lr", 0, "learning rate")
	cmd := Command{Name: "tracksum-x", Flags: fs, Run: func(context.Context, []string) error {
		pre, err := Peek(fs, nil)
		if err != nil {
			return err
		}
		section := pre.Train.Task
		if section == "" {
			section = "tracker"
		}
		_, err = LoadTaskConfig(fs, map[string]string{"lr": section + ".train.learning_rate"}, section)
		return err
	}}
	code = run(cmd, args)
	return code, o.String(), e.String()
}

// TestHFNamesOfTheTask: --set with a Hugging Face name sets the task's key and says so on stderr
// (learning_rate was "no such config key (did you mean summarizer.train.learning_rate?)" with
// --task tracker); --print-config puts the task's section first and =changed shows only what
// differs from the defaults.
func TestHFNamesOfTheTask(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		args  []string
		code  int
		out   []string // in order
		notes string
	}{
		{desc: "tracker", args: []string{"--set", "learning_rate=1e-4", "--set", "per_device_train_batch_size=4", "--print-config=changed"},
			out:   []string{"# tracker\n", "tracker.train.batch_size=4", "tracker.train.learning_rate=0.0001"},
			notes: "--set: Hugging Face name learning_rate read as tracker.train.learning_rate"},
		{desc: "summarizer", args: []string{"--set", "train.task=summarizer", "--set", "lora_alpha=64", "--print-config=changed"},
			out:   []string{"# summarizer\n", "summarizer.lora.alpha=64", "# train\n", "train.task=summarizer"},
			notes: "lora_alpha read as summarizer.lora.alpha"},
		{desc: "every key, the task's section first", args: []string{"--print-config"},
			out: []string{"# tracker\n", "tracker.architecture=", "# top level\n", "seed=", "# prepare\n", "# eval\n", "eval.agreement.human="}},
		{desc: "typo", args: []string{"--set", "learning_rat=1e-4"}, code: 2},
		{desc: "bad mode", args: []string{"--print-config=some"}, code: 2},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			code, out, notes := runTask(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stdout %q", code, tc.code, out)
			}
			rest := out
			for _, want := range tc.out {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("stdout lacks %q after what came before:\n%s", want, out)
				}
				rest = rest[i+len(want):]
			}
			if tc.desc != "every key, the task's section first" && strings.Contains(out, "# default") {
				t.Errorf("=changed printed defaults:\n%s", out)
			}
			if !strings.Contains(notes, tc.notes) {
				t.Errorf("stderr %q lacks %q", notes, tc.notes)
			}
		})
	}
}
