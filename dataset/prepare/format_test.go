package prepare

import (
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/dataset"
)

// streamArray is a test input format: one JSON array of TracSum records per file, each element
// validated as a record numbered from 1.
func streamArray(v *dataset.Validator, path string) iter.Seq2[dataset.Instance, error] {
	return func(yield func(dataset.Instance, error) bool) {
		b, err := os.ReadFile(path)
		if err != nil {
			yield(dataset.Instance{}, err)
			return
		}
		var recs []json.RawMessage
		if err := json.Unmarshal(b, &recs); err != nil {
			yield(dataset.Instance{}, fmt.Errorf("%s: %w", path, err))
			return
		}
		for i, r := range recs {
			in, err := v.Parse(path, i+1, r)
			if !yield(in, err) || err != nil {
				return
			}
		}
	}
}

// TestRunOtherFormat proves the "one new reader in one place" claim of docs/architecture.md: a
// format added to dataset.Formats (here a JSON array per file) is prepared with no other change,
// into the same shards, splits and tokenizer as the same instances in JSONL, and its errors name
// the file and record.
func TestRunOtherFormat(t *testing.T) {
	saved := dataset.Formats
	dataset.Formats = append(append([]dataset.Format{}, saved...), dataset.Format{Name: "jsonarray", Extensions: []string{".jsonarray"}, Stream: streamArray})
	t.Cleanup(func() { dataset.Formats = saved })

	dir := t.TempDir()
	var lines, elems []string
	for i := range 30 {
		for _, in := range dataset.SyntheticAbstract(7, i) {
			b, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			lines, elems = append(lines, string(b)), append(elems, string(b))
		}
	}
	jsonl, array := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "in.jsonarray")
	if err := os.WriteFile(jsonl, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(array, []byte("["+strings.Join(elems, ",\n")+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	run(t, cfg, []string{jsonl}, a)
	run(t, cfg, []string{array}, b)
	sameTree(t, a, b, dataset.ManifestFile, dataset.CardFile) // both name the input file
	ma, err := dataset.ReadManifest(a)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := dataset.ReadManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	if ma.Inputs[0].Instances != mb.Inputs[0].Instances || !reflect.DeepEqual(ma.Tasks, mb.Tasks) || ma.Counts != mb.Counts {
		t.Errorf("manifests differ beyond the input file:\n%+v\n%+v", ma, mb)
	}

	// A bad record is reported by the format's reader, with its position.
	bad := filepath.Join(dir, "bad.jsonarray")
	if err := os.WriteFile(bad, []byte("["+elems[0]+`,{"PMID":"1"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Run(t.Context(), cfg, Options{Inputs: []string{bad}, Out: filepath.Join(dir, "c")})
	if want := bad + ":2: Document: missing field: required"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}
