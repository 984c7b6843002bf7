// Package checkpointtest helps tests of checkpoint loaders.
package checkpointtest

import (
	"os"
	"path/filepath"
	"testing"
)

// BreakFiles overwrites the files names (relative to dir) with a truncated JSON document, so that a
// loader reading any of them from disk fails, and returns the function that puts them back. Tests
// break the files after checkpoint.Open to check that a loader parses the bytes Open verified
// instead of reading the files again.
func BreakFiles(t testing.TB, dir string, names ...string) (restore func()) {
	t.Helper()
	saved := map[string][]byte{}
	for _, name := range names {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		saved[path] = b
		if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		t.Helper()
		for path, b := range saved {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
