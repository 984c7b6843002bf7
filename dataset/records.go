package dataset

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// Prediction is one record of a predictions JSONL file, as infer writes it and eval reads it (with
// ReadRecords): the instance key, the summary and the cited sentence indices, plus what a method
// adds. A negative prediction follows IsNegative: no citation and an unknown summary.
type Prediction struct {
	PMID    string `json:"PMID"`
	Aspect  string `json:"Aspect"`
	Summary string `json:"Summary"`
	Indexes []int  `json:"Indexes"`
	// Scores is the tracker's probability for every sentence of the abstract; left out by the
	// end-to-end LLM methods, which have no tracker.
	Scores []float32 `json:"Scores,omitempty"`
	// Phrases are the contributory phrases of PCoA's attribution strategies (--method
	// intrinsic|prior|posthoc), read by eval's phrase metrics.
	Phrases []string `json:"Phrases,omitempty"`
	// Problems lists what could not be read in an LLM's answers (llmmethods.Problem*).
	Problems []string `json:"Problems,omitempty"`
	// Refinement keeps every round of infer --refine (an eval/qaeval.Refinement; Summary is then
	// the best round's summary). It is kept as JSON so that the data layer does not depend on the
	// metric that produced it; eval ignores it.
	Refinement json.RawMessage `json:"Refinement,omitempty"`
	// SummaryRaw and IndexesRaw are the summarizer's own summary and the tracker's citations when
	// infer's grounding (infer.grounding) changed them, so that the model's output is never lost
	// (left out when grounding changed nothing); eval scores Summary and Indexes.
	SummaryRaw string `json:"SummaryRaw,omitempty"`
	IndexesRaw []int  `json:"IndexesRaw,omitempty"`
}

// Record is one line of a prediction or reference JSONL file as ReadRecords reads it: the
// Instance fields it holds, where it came from, and whether it had Phrases.
type Record struct {
	Instance
	// File and Line locate the record (Line is 1-based; 0 for a synthesized empty prediction).
	File string
	Line int
	// HasPhrases is set when the record carries a Phrases field (even an empty list).
	HasPhrases bool
	// Scores are a prediction's per-sentence tracker probabilities (Prediction.Scores) when the
	// record carries them, else nil: eval's report plots them (histogram, threshold sweep).
	Scores []float32
}

// Key identifies an instance: the join key of predictions and references.
type Key struct {
	PMID   string
	Aspect string
}

// Key returns the record's (PMID, Aspect), the aspect in the one spelling of AspectKey, so that
// predictions and references that spell an aspect differently ("P", "p", "Participants": prepare
// accepts any of them) still join.
func (r *Record) Key() Key { return Key{r.PMID, AspectKey(r.Aspect)} }

// AspectKey folds an aspect as written to one spelling for comparisons: the lower-cased code of
// the aspect it names in any aspect set (a code or a name, in any case, as LookupAspect accepts
// them), else the text lower-cased. The sets agree where they meet: "P", "p" and "Participants"
// all give "p".
func AspectKey(aspect string) string {
	for _, set := range []string{AspectSetTracSum, AspectSetPCoA} {
		if a, ok := LookupAspect(set, aspect); ok {
			return strings.ToLower(a.Code)
		}
	}
	return strings.ToLower(aspect)
}

// ReadRecordsFile reads a prediction or reference JSONL file with ReadRecords.
func ReadRecordsFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadRecords(f, path)
}

// ReadRecords reads prediction or reference JSONL records from r; name is used in error messages.
// It is the lenient sibling of StreamInstances, for files a method wrote rather than benchmark
// files: unknown extra fields are ignored (infer's per-sentence Scores are kept, in Record.Scores),
// Document and Indexes may be absent, Summary may be empty (track-only predictions) but must be
// present, PMID and Aspect must be non-empty, and aspect codes are kept as written. Blank lines are
// skipped. An error is one line, "NAME:LINE: malformed record: problem", wrapping
// ErrMalformedRecord (or the read error).
func ReadRecords(r io.Reader, name string) ([]Record, error) {
	var out []Record
	for l, err := range ReadLines(r, name) {
		if err != nil {
			return nil, err
		}
		rec, perr := parseRecord(l.Data)
		if perr != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, l.Num, perr)
		}
		rec.File, rec.Line = name, l.Num
		out = append(out, rec)
	}
	return out, nil
}

func parseRecord(b []byte) (Record, error) {
	var raw struct {
		Instance
		// Summary shadows Instance.Summary so that a missing field can be told from an empty one
		// (track-only predictions write ""): a missing one is an error, not an empty summary.
		Summary *string   `json:"Summary"`
		Phrases *[]string `json:"Phrases"`
		Scores  []float32 `json:"Scores"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrMalformedRecord, err)
	}
	if raw.Summary == nil {
		return Record{}, fmt.Errorf("%w: field Summary is missing (track-only predictions write \"Summary\": \"\")", ErrMalformedRecord)
	}
	raw.Instance.Summary = *raw.Summary
	rec := Record{Instance: raw.Instance, Scores: raw.Scores}
	if raw.Phrases != nil {
		rec.HasPhrases = true
		rec.Phrases = *raw.Phrases
	}
	switch {
	case rec.PMID == "":
		return rec, fmt.Errorf("%w: field PMID is missing or empty", ErrMalformedRecord)
	case rec.Aspect == "":
		return rec, fmt.Errorf("%w: field Aspect is missing or empty", ErrMalformedRecord)
	}
	return rec, nil
}
