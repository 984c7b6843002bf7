package eval

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/dataset"
)

// FuzzRead feeds arbitrary bytes to the prediction/reference reader (dataset.ReadRecords): either records with a PMID,
// an Aspect and a Summary field, or one error naming the file and line; Join on the result must
// not panic either. Seeds: testdata/fuzz/FuzzRead.
//
//	go test ./eval -run '^$' -fuzz '^FuzzRead$' -fuzztime 60s
func FuzzRead(f *testing.F) {
	for _, name := range []string{"pred.jsonl", "ref.jsonl", "pred_phrases.jsonl"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"PMID":"1","Aspect":"a","Indexes":[0]}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := dataset.ReadRecords(bytes.NewReader(data), "pred.jsonl")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "pred.jsonl:") {
				t.Fatalf("error does not name file:line: %v", err)
			}
			return
		}
		for _, r := range recs {
			if r.PMID == "" || r.Aspect == "" || r.Line < 1 {
				t.Fatalf("record without PMID/Aspect/line accepted: %+v", r)
			}
		}
		refs := make([]dataset.Record, len(recs))
		copy(refs, recs)
		pairs, err := Join(refs, recs, false)
		if err == nil && len(pairs) != len(refs) {
			t.Fatalf("%d pairs for %d references", len(pairs), len(refs))
		}
		if err != nil && errors.Is(err, ErrUnknownInstance) {
			t.Fatalf("a file joined with itself has an unknown instance: %v", err)
		}
	})
}
