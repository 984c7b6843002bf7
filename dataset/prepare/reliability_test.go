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
