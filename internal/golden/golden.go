// Package golden is the golden-file check of tracksum's tests: a test compares what it produced
// with a committed file under testdata/, and `go test ./PKG -update` rewrites the file instead
// (after a reviewed change of the output). Only tests import it.
//
// # Example
//
//	golden.Check(t, filepath.Join("testdata", "prompt.golden"), []byte(prompt))
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// maxShown is the largest output printed with a difference (a prompt, not a tokenizer.json).
const maxShown = 8 << 10

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ instead of comparing with them")

// Check compares got with the golden file at path, or writes got there when the test binary runs
// with -update. A difference is reported with t.Errorf (with the output when it is short enough to
// read), a missing file with t.Fatalf.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		shown := ""
		if len(got) <= maxShown {
			shown = ":\n" + string(got)
		}
		t.Errorf("%s differs from the output (run the test with -update after checking the change)%s", path, shown)
	}
}

// Updating reports whether the test binary runs with -update: a test that compares numbers with a
// tolerance (not bytes) writes its golden file itself then.
func Updating() bool { return *update }
