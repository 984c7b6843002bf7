package dataset

import "strings"

// Instance is one (abstract, aspect) annotation in the TracSum JSONL layout: the abstract split into
// sentences, the aspect code, the reference summary and the indices of the sentences that support it.
// PCoA instances use the same layout plus contributory Phrases.
//
// A negative instance has Summary "Unknown." and no Indexes (see IsNegative).
type Instance struct {
	PMID      string   `json:"PMID"`
	Document  []string `json:"Document"`
	Aspect    string   `json:"Aspect"`
	Summary   string   `json:"Summary"`
	Indexes   []int    `json:"Indexes"`
	Sentences []string `json:"Sentences,omitempty"`
	// Phrases are PCoA's contributory phrases, copied from the cited sentences; absent in TracSum.
	Phrases []string `json:"Phrases,omitempty"`
	Revise  bool     `json:"Revise,omitempty"`
}

// UnknownSummary is the summary of a negative instance: the abstract says nothing about the aspect.
// Benchmark files (Validator) must spell it exactly so; predictions may use any spelling that
// IsUnknownSummary accepts.
const UnknownSummary = "Unknown."

// IsUnknownSummary reports whether a summary says that the aspect is absent: empty (a track-only
// prediction writes ""), or "Unknown." in any case with the final period optional. It is the one
// reading of a negative summary, shared by the validator, infer and eval.
func IsUnknownSummary(summary string) bool {
	s := strings.TrimSpace(summary)
	s = strings.TrimSpace(strings.TrimSuffix(s, "."))
	return s == "" || strings.EqualFold(s, "unknown")
}

// IsNegative is the negative-instance rule: no cited sentence and a summary that says the aspect
// is absent (IsUnknownSummary). A record with citations is positive whatever its summary; one with
// neither citations nor an unknown summary is positive too (and inconsistent, see
// NegativeConsistent).
func IsNegative(summary string, indexes []int) bool {
	return len(indexes) == 0 && IsUnknownSummary(summary)
}

// NegativeConsistent reports whether a summary and its citations agree: an unknown summary exactly
// when nothing is cited. References and benchmark records must be consistent; predictions need not
// be (an LLM may summarize without citing).
func NegativeConsistent(summary string, indexes []int) bool {
	return IsUnknownSummary(summary) == (len(indexes) == 0)
}

// IsNegative reports whether the instance states that the aspect is absent from the abstract (the
// package-level IsNegative rule).
func (in *Instance) IsNegative() bool { return IsNegative(in.Summary, in.Indexes) }
