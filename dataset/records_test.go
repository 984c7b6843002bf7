package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestNegativeRule pins the one negative-instance rule shared by the validator, infer and eval.
func TestNegativeRule(t *testing.T) {
	for _, c := range []struct {
		desc       string
		summary    string
		indexes    []int
		unknown    bool // IsUnknownSummary
		negative   bool // IsNegative
		consistent bool // NegativeConsistent
	}{
		{"canonical negative", "Unknown.", nil, true, true, true},
		{"lower case, no period", "unknown", []int{}, true, true, true},
		{"blank (track-only prediction)", " ", nil, true, true, true},
		{"surrounding spaces", "  Unknown. ", nil, true, true, true},
		{"positive", "Drug X was given.", []int{0}, false, false, true},
		{"a summary that starts with Unknown", "Unknown effects were seen.", []int{1}, false, false, true},
		{"unknown summary with citations", "Unknown.", []int{2}, true, false, false},
		{"summary without citations", "Drug X was given.", nil, false, false, false},
		{"two periods are not the negative answer", "Unknown..", nil, false, false, false},
	} {
		if got := IsUnknownSummary(c.summary); got != c.unknown {
			t.Errorf("%s: IsUnknownSummary(%q) = %v", c.desc, c.summary, got)
		}
		if got := IsNegative(c.summary, c.indexes); got != c.negative {
			t.Errorf("%s: IsNegative = %v", c.desc, got)
		}
		in := Instance{Summary: c.summary, Indexes: c.indexes}
		if got := in.IsNegative(); got != c.negative {
			t.Errorf("%s: Instance.IsNegative = %v", c.desc, got)
		}
		if got := NegativeConsistent(c.summary, c.indexes); got != c.consistent {
			t.Errorf("%s: NegativeConsistent = %v", c.desc, got)
		}
	}
}

// TestValidatorNegativeSpelling: benchmark records follow the same rule, and spell the negative
// summary exactly "Unknown.".
func TestValidatorNegativeSpelling(t *testing.T) {
	for _, c := range []struct {
		desc, summary, indexes, want string
	}{
		{"canonical negative", "Unknown.", "[]", ""},
		{"other spelling", "unknown", "[]", `x.jsonl:1: Summary: summary does not match citations: a negative instance's summary is written "Unknown.", not "unknown"`},
		{"unknown with citations", "Unknown", "[0]", `x.jsonl:1: Summary: summary does not match citations: "Unknown" with 1 cited sentences`},
		{"summary without citations", "Drug X.", "[]", `x.jsonl:1: Indexes: summary does not match citations: no cited sentences but the summary is not "Unknown."`},
	} {
		line := `{"PMID":"9","Document":["A sentence."],"Aspect":"p","Summary":"` + c.summary + `","Indexes":` + c.indexes + `}`
		_, err := NewValidator("tracsum").Parse("x.jsonl", 1, []byte(line))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.desc, err)
		case c.want != "" && (err == nil || err.Error() != c.want || !errors.Is(err, ErrNegativeSummary)):
			t.Errorf("%s: err = %v\nwant %s", c.desc, err, c.want)
		}
	}
}

// TestReadRecords covers the lenient prediction/reference reader (formerly eval's): the error
// messages name file:line (regression test of issue 10 item 14 for a missing Summary), extra
// fields are ignored, and Phrases presence is recorded.
func TestReadRecords(t *testing.T) {
	for _, tc := range []struct {
		desc, data, want string
		n                int
	}{
		{"no Summary field", "{\"PMID\":\"1\",\"Aspect\":\"a\",\"Summary\":\"x\",\"Indexes\":[0]}\n{\"PMID\":\"1\",\"Aspect\":\"i\",\"Indexes\":[0]}\n",
			"pred.jsonl:2: malformed record: field Summary is missing", 0},
		{"Summary null", `{"PMID":"1","Aspect":"a","Summary":null,"Indexes":[]}`, "pred.jsonl:1: malformed record: field Summary is missing", 0},
		{"broken JSON", "{\"PMID\":\"1\",\"Aspect\":\"a\",\"Summary\":\"\"}\n{\"PMID\":", "pred.jsonl:2: malformed record: unexpected end of JSON input", 0},
		{"index of the wrong type", `{"PMID":"1","Aspect":"a","Summary":"","Indexes":["0"]}`, "pred.jsonl:1: malformed record: json: cannot unmarshal string", 0},
		{"no PMID", `{"Aspect":"a","Summary":""}`, "pred.jsonl:1: malformed record: field PMID is missing or empty", 0},
		{"empty Aspect", `{"PMID":"1","Aspect":"","Summary":""}`, "pred.jsonl:1: malformed record: field Aspect is missing or empty", 0},
		{"empty Summary is fine", `{"PMID":"1","Aspect":"a","Summary":"","Indexes":[0]}`, "", 1},
		{"extra fields and blank lines", "\n{\"PMID\":\"1\",\"Aspect\":\"a\",\"Summary\":\"s\",\"Indexes\":[0],\"Scores\":[0.9]}\n\n", "", 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			recs, err := ReadRecords(strings.NewReader(tc.data), "pred.jsonl")
			if tc.want == "" {
				if err != nil || len(recs) != tc.n {
					t.Fatalf("%d records, err %v", len(recs), err)
				}
				return
			}
			if !errors.Is(err, ErrMalformedRecord) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant one starting with %q", err, tc.want)
			}
		})
	}
	recs, err := ReadRecords(strings.NewReader("\n{\"PMID\":\"1\",\"Aspect\":\"TD\",\"Summary\":\"s\",\"Indexes\":[0],\"Phrases\":[]}\n"), "p.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if r := recs[0]; r.Line != 2 || r.File != "p.jsonl" || !r.HasPhrases || r.Aspect != "TD" || r.Key() != (Key{"1", "td"}) {
		t.Errorf("record = %+v", r)
	}
	if recs[0].Scores != nil {
		t.Errorf("a record without Scores reads as Scores %v, want nil", recs[0].Scores)
	}
	// eval's report reads the tracker's per-sentence probabilities from predictions.
	recs, err = ReadRecords(strings.NewReader(`{"PMID":"1","Aspect":"p","Summary":"s","Indexes":[0],"Scores":[0.75,0.25]}`), "p.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got := recs[0].Scores; len(got) != 2 || got[0] != 0.75 || got[1] != 0.25 {
		t.Errorf("Scores = %v, want [0.75 0.25]", got)
	}
}

// TestPredictionJSON pins the predictions JSONL layout: field order, omitted optional fields and a
// Refinement copied as written.
func TestPredictionJSON(t *testing.T) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, p := range []Prediction{
		{PMID: "1", Aspect: "p", Summary: UnknownSummary, Indexes: []int{}},
		{PMID: "1", Aspect: "i", Summary: "a < b", Indexes: []int{0, 2}, Scores: []float32{0.5, 0.25, 1}, Phrases: []string{"x"},
			Problems: []string{"p"}, Refinement: json.RawMessage(`{"rounds":[{"round":0,"summary":"a < b"}],"best":0,"stop":"s"}`)},
	} {
		if err := enc.Encode(p); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"PMID":"1","Aspect":"p","Summary":"Unknown.","Indexes":[]}
{"PMID":"1","Aspect":"i","Summary":"a < b","Indexes":[0,2],"Scores":[0.5,0.25,1],"Phrases":["x"],"Problems":["p"],"Refinement":{"rounds":[{"round":0,"summary":"a < b"}],"best":0,"stop":"s"}}
`
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}
