package dataset

// Instance is one (abstract, aspect) annotation in the TracSum JSONL layout: the abstract split into
// sentences, the aspect code, the reference summary and the indices of the sentences that support it.
// PCoA instances use the same layout plus contributory Phrases.
//
// A negative instance has Summary "Unknown." and no Indexes.
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
const UnknownSummary = "Unknown."

// IsNegative reports whether the instance states that the aspect is absent from the abstract.
func (in *Instance) IsNegative() bool { return len(in.Indexes) == 0 }
