package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadInstancesValid(t *testing.T) {
	ins, err := ReadInstances("testdata/valid.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 6 {
		t.Fatalf("got %d instances, want 6", len(ins))
	}
	if ins[2].Aspect != "d" || !ins[2].IsNegative() || ins[2].Summary != UnknownSummary {
		t.Errorf("negative instance = %+v", ins[2])
	}
	if got := ins[1].Sentences[0]; got != ins[1].Document[3] {
		t.Errorf("Sentences[0] = %q", got)
	}
}

func TestReadInstancesMalformed(t *testing.T) {
	for _, tc := range []struct {
		desc string
		file string
		want string
		err  error
	}{
		{"truncated JSON", "bad_json", "bad_json.jsonl:2: malformed JSON: unexpected EOF", ErrMalformedJSON},
		{"missing Summary", "missing_field", "missing_field.jsonl:2: Summary: missing field: required", ErrMissingField},
		{"string in Indexes", "wrong_type", "wrong_type.jsonl:2: Indexes: wrong field type: got JSON string, want an integer", ErrFieldType},
		{"numeric PMID", "pmid_number", "pmid_number.jsonl:1: PMID: wrong field type: got JSON number, want a string", ErrFieldType},
		{"index past the document", "index_range", "index_range.jsonl:2: Indexes[0]: index out of range: 7 not in [0, 5)", ErrIndexRange},
		{"Sentences not Document[Indexes]", "sentences_mismatch", "sentences_mismatch.jsonl:2: Sentences[0]: Sentences != Document[Indexes]: differs from Document[3]", ErrSentencesMismatch},
		{"unknown aspect code", "unknown_aspect", `unknown_aspect.jsonl:2: Aspect: unknown aspect: "x" is not in the tracsum set`, ErrUnknownAspect},
		{"same PMID and aspect twice", "duplicate", "duplicate.jsonl:3: Aspect: duplicate (PMID, aspect): (1001, o) already seen at testdata/malformed/duplicate.jsonl:2", ErrDuplicate},
		{"same PMID, other document", "conflicting_document", "conflicting_document.jsonl:2: Document: same PMID with a different Document: PMID 1001 already seen with another Document at testdata/malformed/conflicting_document.jsonl:1", ErrConflictingDoc},
		{"no sentences", "empty_document", "empty_document.jsonl:2: Document: empty document: no sentences", ErrEmptyDocument},
		{"field outside the format", "unknown_field", "unknown_field.jsonl:2: Extra: unknown field: not a TracSum/PCoA field", ErrUnknownField},
		{"sentence cited twice", "duplicate_index", "duplicate_index.jsonl:2: Indexes[1]: duplicate index: 3 cited twice", ErrDuplicateIndex},
		{"no citations but a summary", "negative_summary", `negative_summary.jsonl:2: Indexes: summary does not match citations: no cited sentences but the summary is not "Unknown."`, ErrNegativeSummary},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			path := filepath.Join("testdata", "malformed", tc.file+".jsonl")
			_, err := ReadInstances(path)
			if err == nil {
				t.Fatal("no error")
			}
			if got := err.Error(); got != "testdata/malformed/"+tc.want {
				t.Errorf("error\n got %s\nwant testdata/malformed/%s", got, tc.want)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestStreamInstancesAcrossFiles(t *testing.T) {
	// The same file twice: every record of the second copy is a duplicate of the first.
	var err error
	n := 0
	for _, e := range StreamInstances("auto", "testdata/valid.jsonl", "testdata/valid.jsonl") {
		if e != nil {
			err = e
			break
		}
		n++
	}
	if n != 6 || !errors.Is(err, ErrDuplicate) {
		t.Errorf("read %d then %v, want 6 then a duplicate error", n, err)
	}
}

func TestReadInstancesBOMAndBlankLines(t *testing.T) {
	b, err := os.ReadFile("testdata/valid.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bom.jsonl")
	if err := os.WriteFile(path, append([]byte("\ufeff"), append(b, '\n', '\n')...), 0o644); err != nil {
		t.Fatal(err)
	}
	ins, err := ReadInstances(path)
	if err != nil || len(ins) != 6 {
		t.Fatalf("got %d instances, err %v", len(ins), err)
	}
}

func TestAspectSetDetection(t *testing.T) {
	for _, tc := range []struct {
		desc, set, code, want string
		ok                    bool
	}{
		{"tracsum lower-case code", "auto", "p", AspectSetTracSum, true},
		{"pcoa upper-case code", "auto", "TD", AspectSetPCoA, true},
		{"pcoa P is not tracsum p", "auto", "P", AspectSetPCoA, true},
		{"forced set", "tracsum", "O", AspectSetTracSum, true},
		{"pcoa code in tracsum set", "tracsum", "FU", "", false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			v := NewValidator(tc.set)
			line := `{"PMID":"9","Document":["A sentence."],"Aspect":"` + tc.code + `","Summary":"A.","Indexes":[0]}`
			_, err := v.Parse("x.jsonl", 1, []byte(line))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if tc.ok && v.AspectSet() != tc.want {
				t.Errorf("set = %s, want %s", v.AspectSet(), tc.want)
			}
		})
	}
}

// sharedData returns the path of a file under ../shared, or skips the test.
func sharedData(t testing.TB, rel string) string {
	t.Helper()
	path := filepath.Join("..", "..", "shared", rel)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not available (needs ../shared beside the repository): %v", rel, err)
	}
	return path
}

func TestReadInstancesTracSumDev(t *testing.T) {
	ins, err := ReadInstances(sharedData(t, "data/tracsum/tracsum-dev.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	pmids := map[string]bool{}
	sentences, cited, negatives := 0, 0, 0
	for _, in := range ins {
		pmids[in.PMID] = true
		sentences += len(in.Document)
		cited += len(in.Indexes)
		if in.IsNegative() {
			negatives++
		}
	}
	// Figures from the data README.
	if len(ins) != 544 || len(pmids) != 310 || sentences != 6768 || cited != 833 || negatives != 100 {
		t.Errorf("instances %d, PMIDs %d, pairs %d, cited %d, negatives %d; want 544, 310, 6768, 833, 100",
			len(ins), len(pmids), sentences, cited, negatives)
	}
}

func TestReadInstancesPCoA(t *testing.T) {
	ins, err := ReadInstances("testdata/pcoa.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 6 || ins[3].Aspect != "PE" || len(ins[4].Phrases) != 1 || !ins[5].IsNegative() {
		t.Errorf("instances %+v", ins)
	}
	if _, err := ReadInstances("testdata/valid.jsonl"); err != nil {
		t.Fatal(err)
	}
	// A TracSum file read as PCoA: "a" (Aims) is no PCoA aspect.
	var got error
	for _, err := range StreamInstances(AspectSetPCoA, "testdata/valid.jsonl") {
		got = err
		break
	}
	if !errors.Is(got, ErrUnknownAspect) {
		t.Errorf("err = %v, want unknown aspect", got)
	}
}
