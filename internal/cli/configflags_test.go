package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCaptured runs a command that loads its config with one bound flag (--lr), returning the exit
// code, what it printed and whether its work ran.
func runCaptured(t *testing.T, hideConfig bool, args ...string) (code int, out string, ran bool) {
	t.Helper()
	var b bytes.Buffer
	old := stdout
	stdout = &b
	t.Cleanup(func() { stdout = old })
	fs := NewFlags("tracksum-x")
	fs.Float64("lr", 0, "learning rate")
	if hideConfig {
		_ = fs.MarkHidden("config")
	}
	cmd := Command{Name: "tracksum-x", Flags: fs, Run: func(context.Context, []string) error {
		if !hideConfig {
			if _, err := LoadConfig(fs, map[string]string{"lr": "tracker.train.learning_rate"}); err != nil {
				return err
			}
		}
		ran = true
		return nil
	}}
	code = run(cmd, args)
	return code, b.String(), ran
}

func TestVersionFlag(t *testing.T) {
	code, out, ran := runCaptured(t, false, "--version")
	if code != 0 || ran || !strings.HasPrefix(out, "tracksum-x ") || !strings.Contains(out, "go1.") {
		t.Errorf("--version: exit %d, ran %v, printed %q; want exit 0, not run, name and Go version", code, ran, out)
	}
}

// TestPrintConfigSources: every key is printed once with the layer that set it, and the command's
// work does not run.
func TestPrintConfigSources(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(profile, []byte("seed: 7\ntracker:\n  dropout: 0.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRACKSUM_TRACKER_D_MODEL", "96")
	code, out, ran := runCaptured(t, false, "--config", profile, "--lr", "3e-5", "--set", "eval.missing=empty",
		"--set", "infer.aspects=a,i", "--print-config")
	if code != 0 || ran {
		t.Fatalf("exit %d, ran %v; want 0 and the work not run", code, ran)
	}
	for _, want := range []string{
		"seed=7", "# file " + profile,
		"tracker.dropout=0.2",
		"tracker.d_model=96", "# env TRACKSUM_TRACKER_D_MODEL",
		"tracker.train.learning_rate=3e-05", "# flag --lr",
		"eval.missing=empty", "# set --set",
		"infer.aspects=a,i",
		"prepare.rows_per_shard=100000", "# default",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--print-config lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\ntracker.train.learning_rate="); n != 1 {
		t.Errorf("tracker.train.learning_rate printed %d times", n)
	}
}

func TestSetFlag(t *testing.T) {
	for _, tc := range []struct {
		desc string
		args []string
		code int
		want string // in the printed config; "" when the command fails
	}{
		{"any key", []string{"--set", "tracker.train.learning_rate=2e-5"}, 0, "tracker.train.learning_rate=2e-05"},
		{"set beats a flag", []string{"--lr", "1e-3", "--set", "tracker.train.learning_rate=2e-5"}, 0, "tracker.train.learning_rate=2e-05"},
		{"mistyped key", []string{"--set", "tracker.train.learning_rat=1"}, 2, ""},
		{"not key=value", []string{"--set", "seed"}, 2, ""},
		{"bad value", []string{"--set", "seed=abc"}, 2, ""},
		{"invalid value", []string{"--set", "tracker.dropout=2"}, 1, ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			code, out, _ := runCaptured(t, false, append(tc.args, "--print-config")...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d; output lacks %q", code, tc.code, tc.want)
			}
		})
	}
}

// TestConfigFlagsRefusedWithoutConfig: a command that reads no config key refuses --set and
// --print-config instead of ignoring them.
func TestConfigFlagsRefusedWithoutConfig(t *testing.T) {
	for _, args := range [][]string{{"--set", "seed=1"}, {"--print-config"}} {
		if code, _, ran := runCaptured(t, true, args...); code != 2 || ran {
			t.Errorf("%v on a command without config: exit %d, ran %v; want 2, not run", args, code, ran)
		}
	}
	if code, _, ran := runCaptured(t, true); code != 0 || !ran {
		t.Errorf("plain run: exit %d, ran %v", code, ran)
	}
}
