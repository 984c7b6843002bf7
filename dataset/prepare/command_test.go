package prepare

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/cli"
)

func runCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := command(&stdout, &stderr)
	if err := c.Flags.Parse(args); err != nil {
		return "", err
	}
	err := c.Run(context.Background(), c.Flags.Args())
	return stdout.String(), err
}

func TestCommand(t *testing.T) {
	dir := t.TempDir()
	sample := filepath.Join(dir, "sample.jsonl")
	out, err := runCommand(t, "--write-sample", sample, "--sample-size", "12", "--seed", "5")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "wrote 12 synthetic abstracts (84 instances, seed 5)") {
		t.Errorf("stdout %q", out)
	}
	ins, err := dataset.ReadInstances(sample)
	if err != nil || len(ins) != 84 {
		t.Fatalf("sample: %d instances, %v", len(ins), err)
	}
	prepared := filepath.Join(dir, "prepared")
	out, err = runCommand(t, "--config", "../../configs/tiny.yaml", "--input", sample, "--out", prepared, "--quiet",
		"--vocab-size", "500", "--split-by", "instance")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"prepared 84 instances (12 abstracts", "splits by instance", "tracker ", "tokenizer: bpe, 500 tokens", "abstracts/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	m, err := dataset.ReadManifest(prepared)
	if err != nil {
		t.Fatal(err)
	}
	if m.SplitInfo.By != dataset.SplitByInstance || m.Tokenizer.VocabSize != 500 {
		t.Errorf("flags not applied: split %s, vocab %d", m.SplitInfo.By, m.Tokenizer.VocabSize)
	}
	if got := m.Config["prepare"].(map[string]any)["rows_per_shard"]; got != float64(2000) {
		t.Errorf("tiny.yaml rows_per_shard not in the config snapshot: %v", got)
	}
}

func TestCommandUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		desc string
		args []string
		want string
	}{
		{"no output", []string{}, "--out is required"},
		{"stray argument", []string{"--out", "x", "extra"}, "unexpected arguments"},
		{"sample with input", []string{"--write-sample", "s.jsonl", "--input", "a.jsonl"}, "cannot be combined"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := runCommand(t, tc.args...)
			if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a usage error with %q", err, tc.want)
			}
		})
	}
}

func TestCommandInvalidConfig(t *testing.T) {
	_, err := runCommand(t, "--out", filepath.Join(t.TempDir(), "x"), "--train-ratio", "0.95")
	if err == nil || !strings.Contains(err.Error(), "prepare.train_ratio + prepare.dev_ratio + prepare.test_ratio: must sum to 1") {
		t.Errorf("err = %v", err)
	}
	t.Setenv("TRACKSUM_PREPARE_SPLIT_BY", "abstract")
	_, err = runCommand(t, "--out", filepath.Join(t.TempDir(), "x"))
	if err == nil || !strings.Contains(err.Error(), `prepare.split_by: must be "pmid" or "instance", got "abstract"`) {
		t.Errorf("err = %v", err)
	}
}

func TestCommandMissingInput(t *testing.T) {
	parent := t.TempDir()
	_, err := runCommand(t, "--input", filepath.Join(parent, "nope.jsonl"), "--out", filepath.Join(parent, "out"))
	if err == nil || !strings.Contains(err.Error(), "nope.jsonl") {
		t.Errorf("err = %v", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}
