package prepare

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// Issue 10 item 1: `prepare --out FILE` deleted the file and put a directory there, exit 0.
func TestRunOutIsFileRefused(t *testing.T) {
	parent := t.TempDir()
	file := filepath.Join(parent, "v.txt")
	if err := os.WriteFile(file, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(parent, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{file, link} {
		for _, overwrite := range []bool{false, true} {
			_, err := Run(context.Background(), testConfig(), Options{Out: out, Overwrite: overwrite})
			if !errors.Is(err, atomicio.ErrNotDir) || strings.Contains(err.Error(), "\n") {
				t.Errorf("--out %s (overwrite %v): err = %v, want a one-line ErrNotDir", out, overwrite, err)
			}
		}
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != "precious\n" {
		t.Errorf("file now %q, %v", got, err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 2 {
		t.Errorf("left behind: %v", entries)
	}
}

// Issue 10 item 4: two prepare runs on one --out both exited 0, the later deleting the earlier's
// result (check-then-delete race). Exactly one may succeed; the other fails clearly.
func TestRunConcurrentSameOut(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	held, err := atomicio.Acquire(out)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), testConfig(), Options{Out: out, Overwrite: true})
	held.Release()
	if !errors.Is(err, atomicio.ErrLocked) || !strings.Contains(err.Error(), "another tracksum run holds") {
		t.Fatalf("while locked: err = %v, want ErrLocked", err)
	}

	seeds := []int64{1, 2}
	errs := make([]error, len(seeds))
	var wg sync.WaitGroup
	for i, seed := range seeds {
		wg.Go(func() {
			cfg := testConfig()
			cfg.Seed = seed
			_, errs[i] = Run(context.Background(), cfg, Options{Out: out})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else if !errors.Is(err, atomicio.ErrLocked) && !strings.Contains(err.Error(), "--overwrite") {
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of 2 concurrent runs succeeded (%v), want exactly 1", ok, errs)
	}
	if _, err := dataset.ReadManifest(out); err != nil {
		t.Errorf("result unreadable: %v", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestPrepareOverwriteKeepsInput is the regression test of issue 22 defect 7: `prepare --input
// R/in.jsonl --out R --overwrite` deleted its input with the old R (exit 0). An --out that holds
// an input (directly, or through a symlink) is refused naming the input, and the input survives;
// --overwrite replaces only a previous prepared directory, never one holding files prepare did
// not write.
func TestPrepareOverwriteKeepsInput(t *testing.T) {
	writeInput := func(t *testing.T, path string) []byte {
		t.Helper()
		var b strings.Builder
		if err := dataset.WriteSynthetic(&b, 1, 12); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return []byte(b.String())
	}
	t.Run("input inside --out", func(t *testing.T) {
		r := filepath.Join(t.TempDir(), "R")
		in := filepath.Join(r, "in.jsonl")
		want := writeInput(t, in)
		link := filepath.Join(t.TempDir(), "R-link")
		if err := os.Symlink(r, link); err != nil {
			t.Fatal(err)
		}
		for _, out := range []string{r, link} {
			_, err := Run(context.Background(), testConfig(), Options{Inputs: []string{in}, Out: out, Overwrite: true})
			if err == nil || !strings.Contains(err.Error(), "--input "+in+" is inside --out") || strings.Contains(err.Error(), "\n") {
				t.Errorf("--out %s: err = %v, want a one-line refusal naming the input", out, err)
			}
			if got, err := os.ReadFile(in); err != nil || string(got) != string(want) {
				t.Fatalf("--out %s: the input was deleted or changed (%v)", out, err)
			}
		}
	})
	t.Run("foreign files beside a previous output", func(t *testing.T) {
		parent := t.TempDir()
		in := filepath.Join(parent, "in.jsonl")
		writeInput(t, in)
		out := filepath.Join(parent, "prepared")
		cfg := testConfig()
		if _, err := Run(context.Background(), cfg, Options{Inputs: []string{in}, Out: out}); err != nil {
			t.Fatal(err)
		}
		// A previous prepared directory is replaced with --overwrite...
		if _, err := Run(context.Background(), cfg, Options{Inputs: []string{in}, Out: out, Overwrite: true}); err != nil {
			t.Fatalf("--overwrite of a previous output: %v", err)
		}
		// ...but not once it holds a file prepare did not write, at any depth.
		for _, name := range []string{"notes.txt", filepath.Join(dataset.TaskTracker, "mine.txt"), filepath.Join("other", "important.txt")} {
			p := filepath.Join(out, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte("mine"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Run(context.Background(), cfg, Options{Inputs: []string{in}, Out: out, Overwrite: true})
			if !errors.Is(err, atomicio.ErrForeign) || !strings.Contains(err.Error(), "not written by tracksum-prepare") {
				t.Errorf("%s: err = %v, want ErrForeign", name, err)
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s was deleted: %v", name, err)
			}
			os.Remove(p)
		}
	})
}
