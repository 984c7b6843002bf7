package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cancelAfter is a context whose Err reports context.Canceled from its (n+1)-th call on: it
// cancels "in the middle" of a read at a point the test chooses, as a signal arriving while the
// weights are read would.
type cancelAfter struct {
	context.Context
	n int
}

func (c *cancelAfter) Err() error {
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

// TestSnapshotLoadingHonoursCancel: issue 22 rough edge "SIGTERM is not honoured during snapshot
// loading". No context reached the weight readers, so a command stopped by SIGINT or SIGTERM
// read (and hashed) the whole base first. Reading must stop before the next tensor, with an error
// that wraps context.Canceled (cli maps it to exit 130 or 143) and names the file and tensor.
func TestSnapshotLoadingHonoursCancel(t *testing.T) {
	dir := makeSnapshot(t)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, WeightsFile)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		desc string
		ctx  context.Context
		want string // the error's text
	}{
		{"cancelled before reading", cancelled,
			path + ": reading stopped before tensor embeddings.word_embeddings.weight: context canceled"},
		{"cancelled after the first tensor", &cancelAfter{Context: context.Background(), n: 2},
			path + ": reading stopped before tensor encoder.layer.0.output.dense.bias: context canceled"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			start := time.Now()
			ts, err := s.Tensors(tc.ctx, nil)
			if err == nil {
				t.Fatalf("Tensors read %d tensors with a cancelled context, want an error", len(ts))
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error %q does not wrap context.Canceled", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error %q, want %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to stop", d)
			}
		})
	}
}

// TestDigestHonoursCancel: hashing the base's weights (a minute for 16 GB, at every infer, export
// and resume when the cache misses) stops once its context is cancelled, and caches nothing.
func TestDigestHonoursCancel(t *testing.T) {
	t.Setenv(CacheDirEnv, filepath.Join(t.TempDir(), "cache"))
	path := filepath.Join(t.TempDir(), WeightsFile)
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := CachedSHA256(ctx, []string{path})
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), path+": hashing stopped") {
		t.Fatalf("error %v, want %s: hashing stopped: ... wrapping context.Canceled", err, path)
	}
	before := hashed.Load()
	if _, err := CachedSHA256(context.Background(), []string{path}); err != nil {
		t.Fatal(err)
	}
	if hashed.Load() == before {
		t.Error("the digest after a cancelled one came from the cache: a cancelled hash was cached")
	}
}
