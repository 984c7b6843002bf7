package infer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// TestOutputLockedByAnotherRun is the regression test of issue 10 item 4 for the single-file
// outputs: two infer runs on one --out used to both succeed, the last writer silently winning.
// While another run holds the output's lock, infer fails with ErrLocked before any work and the
// existing file is left as it was.
func TestOutputLockedByAnotherRun(t *testing.T) {
	in, _ := copyInput(t)
	out := filepath.Join(filepath.Dir(in), "pred.jsonl")
	if err := os.WriteFile(out, []byte("previous\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := atomicio.LockFile(out)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	_, err = Run(context.Background(), &cfg, Options{Tracker: GoldTracker, Summarizer: ExtractiveSummarizer,
		Input: in, Out: out, Log: discard{}})
	if !errors.Is(err, atomicio.ErrLocked) {
		t.Fatalf("err = %v, want ErrLocked", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "previous\n" {
		t.Fatalf("the previous output was changed: %q", b)
	}
	held.Release()
	if _, err := Run(context.Background(), &cfg, Options{Tracker: GoldTracker, Summarizer: ExtractiveSummarizer,
		Input: in, Out: out, Log: discard{}}); err != nil {
		t.Fatalf("after the lock is released: %v", err)
	}
}

// TestStaleTempOfOutputRemoved: a killed run leaves .pred.jsonl.tmp-* beside its output; the next
// run on that output removes it (issue 10 item 13, single-file outputs).
func TestStaleTempOfOutputRemoved(t *testing.T) {
	in, _ := copyInput(t)
	dir := filepath.Dir(in)
	out := filepath.Join(dir, "pred.jsonl")
	stale := filepath.Join(dir, ".pred.jsonl.tmp-123")
	other := filepath.Join(dir, ".other.jsonl.tmp-456")
	for _, p := range []string{stale, other} {
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	if _, err := Run(context.Background(), &cfg, Options{Tracker: GoldTracker, Summarizer: ExtractiveSummarizer,
		Input: in, Out: out, Log: discard{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file of --out still there (err %v)", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another output's temporary file was removed: %v", err)
	}
}
