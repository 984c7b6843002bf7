package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		desc string
		args []string
		err  error
		want int
	}{
		{desc: "success", err: nil, want: 0},
		{desc: "help", args: []string{"--help"}, want: 0},
		{desc: "unknown flag", args: []string{"--nope"}, want: 2},
		{desc: "usage error", err: Usagef("--out is required"), want: 2},
		{desc: "other error", err: errors.New("input.jsonl:3: bad"), want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			cmd := Command{
				Name:  "tracksum-test",
				Flags: NewFlags("tracksum-test"),
				Run:   func(context.Context, []string) error { return tc.err },
			}
			if got := run(cmd, tc.args); got != tc.want {
				t.Errorf("exit code = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestLoadConfigFlagOverrides(t *testing.T) {
	fs := NewFlags("tracksum-test")
	fs.Int64("seed", 0, "seed")
	if err := fs.Parse([]string{"--seed", "42"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(fs, map[string]string{"seed": "seed"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Seed != 42 {
		t.Errorf("seed = %d, want 42 from the flag", cfg.Seed)
	}
}

// TestLoadConfigAppliesOnlyGivenFlags: a flag left out keeps the profile's value (the flag's
// default is not applied), a flag given overrides it, and a binding to an undefined flag is an
// error. Before, each command filtered on fs.Changed itself and eval bound every flag.
func TestLoadConfigAppliesOnlyGivenFlags(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(profile, []byte("seed: 7\neval:\n  judge: llm\n  llm:\n    model: m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{"seed": "seed", "judge": "eval.judge"}
	for _, tc := range []struct {
		desc      string
		args      []string
		keys      map[string]string
		seed      int64
		judge     string
		wantError string
	}{
		{desc: "no flag: the profile", args: []string{"--config", profile}, keys: keys, seed: 7, judge: "llm"},
		{desc: "one flag given", args: []string{"--config", profile, "--judge", "lexical"}, keys: keys, seed: 7, judge: "lexical"},
		{desc: "both given", args: []string{"--config", profile, "--seed", "1", "--judge", "lexical"}, keys: keys, seed: 1, judge: "lexical"},
		{desc: "undefined flag", args: nil, keys: map[string]string{"nope": "seed"}, wantError: "flag --nope"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			fs := NewFlags("tracksum-test")
			fs.Int64("seed", 3407, "seed")
			fs.String("judge", "lexical", "judge")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadConfig(fs, tc.keys)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("err = %v, want %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Seed != tc.seed || cfg.Eval.Judge != tc.judge {
				t.Errorf("seed %d judge %q, want %d %q", cfg.Seed, cfg.Eval.Judge, tc.seed, tc.judge)
			}
		})
	}
}

// TestSubcommands: the first argument picks a subcommand, which parses the rest with its own
// flags; anything else goes to the parent.
func TestSubcommands(t *testing.T) {
	var ran string
	mk := func(name string) Command {
		fs := NewFlags(name)
		fs.Bool("x", false, "x")
		return Command{Name: name, Flags: fs, Run: func(_ context.Context, args []string) error {
			ran = name
			if len(args) > 0 {
				return Usagef("unexpected %v", args)
			}
			return nil
		}}
	}
	for _, tc := range []struct {
		desc string
		args []string
		ran  string
		code int
	}{
		{"parent", nil, "tracksum-test", 0},
		{"subcommand", []string{"compare", "--x"}, "tracksum-test compare", 0},
		{"subcommand help", []string{"compare", "--help"}, "", 0},
		{"subcommand usage error", []string{"compare", "extra"}, "tracksum-test compare", 2},
		{"parent with an argument", []string{"other"}, "tracksum-test", 2},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ran = ""
			cmd := mk("tracksum-test")
			cmd.Subcommands = []Command{mk("tracksum-test compare"), mk("tracksum-test agreement")}
			if code := run(cmd, tc.args); code != tc.code || ran != tc.ran {
				t.Errorf("exit %d ran %q, want %d %q", code, ran, tc.code, tc.ran)
			}
		})
	}
}

func TestUsageConfigFooter(t *testing.T) {
	tests := []struct {
		desc       string
		hideConfig bool
		want       bool
	}{
		{desc: "command reading config", want: true},
		{desc: "command hiding --config", hideConfig: true, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			fs := NewFlags("tracksum-x")
			fs.String("out", "", "output")
			if fs.Lookup("config") == nil {
				fs.String("config", "", "profile")
			}
			if tc.hideConfig {
				if err := fs.MarkHidden("config"); err != nil {
					t.Fatal(err)
				}
			}
			var b strings.Builder
			writeUsage(&b, Command{Name: "tracksum-x", Synopsis: "--out X"}, fs)
			if got := strings.Contains(b.String(), "environment variable"); got != tc.want {
				t.Errorf("footer shown = %v, want %v:\n%s", got, tc.want, b.String())
			}
			if !strings.Contains(b.String(), "--out") {
				t.Errorf("flags missing:\n%s", b.String())
			}
		})
	}
}
