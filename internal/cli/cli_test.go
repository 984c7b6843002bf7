package cli

import (
	"context"
	"errors"
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
