package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReadInput checks that ReadInput picks the reader by the path's kind: an annotated format
// (instances), anything else raw text (abstracts), a missing path an ErrInput error.
func TestReadInput(t *testing.T) {
	raw := filepath.Join(t.TempDir(), "abstract.txt")
	if err := os.WriteFile(raw, []byte("Aims were set. Results were good.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		desc, path           string
		instances, abstracts int
		err                  error
	}{
		{"JSONL", "testdata/valid.jsonl", 6, 0, nil},
		{"PCoA JSONL", "testdata/pcoa.jsonl", 6, 0, nil},
		{"raw text", raw, 0, 1, nil},
		{"missing", "testdata/none.jsonl", 0, 0, ErrInput},
		{"malformed JSONL", "testdata/malformed/bad_json.jsonl", 0, 0, ErrMalformedJSON},
	} {
		ins, abs, err := ReadInput(c.path, "")
		if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s: err = %v, want %v", c.desc, err, c.err)
			continue
		}
		if len(ins) != c.instances || len(abs) != c.abstracts {
			t.Errorf("%s: %d instances, %d abstracts; want %d, %d", c.desc, len(ins), len(abs), c.instances, c.abstracts)
		}
	}
	if f, ok := FormatOf("x.jsonl"); !ok || f.Name != "jsonl" {
		t.Errorf("FormatOf(x.jsonl) = %v, %v", f.Name, ok)
	}
	if _, ok := FormatOf("x.txt"); ok {
		t.Error("FormatOf(x.txt) claims a text file")
	}
}
