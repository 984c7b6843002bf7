package config

import (
	"errors"
	"fmt"
)

// Variants configures the TracSum Table 6 variants of Track-then-Sum (model/stt, model/ete):
// SUM-THEN-TRACK summarizes the whole abstract, then tracks the sentences that support the summary
// with a tracker on (sentence, summary) pairs; END-TO-END writes the summary and its citation
// indices with one encoder-decoder. Their models are the summarizer's and the tracker's, trained
// with the summarizer and tracker sections (architecture, training loop, decoding); this section
// holds only what differs: the inputs are longer.
type Variants struct {
	// MaxSourceLen caps the encoder input of the whole-abstract models (STT's summarizer, ETE):
	// the aspect and every sentence of the abstract (ETE: each after its index, "3: ..."), in
	// place of summarizer.max_source_len (sized for the tracked sentences only).
	MaxSourceLen int `mapstructure:"max_source_len" yaml:"max_source_len"`
	// MaxOutputLen caps ETE's output: the summary, the marker " [CITE]" and the cited indices,
	// in place of summarizer.max_summary_len.
	MaxOutputLen int `mapstructure:"max_output_len" yaml:"max_output_len"`
	// PairMaxLen caps STT's tracker input in tokens: the sentence, [SEP], the summary and the
	// aspect token, in place of tracker.max_len (sized for one sentence).
	PairMaxLen int `mapstructure:"pair_max_len" yaml:"pair_max_len"`
}

// DefaultVariants returns the built-in variant settings: 512 source tokens hold about 90% of the
// TracSum abstracts whole (mean ~350 tokens with the built-in BPE), 128 output tokens the longest
// summaries with their indices.
func DefaultVariants() Variants {
	return Variants{MaxSourceLen: 512, MaxOutputLen: 128, PairMaxLen: 128}
}

// Validate reports invalid variant settings, naming each key.
func (c Variants) Validate() error {
	var errs []error
	if c.MaxSourceLen < 16 {
		errs = append(errs, fmt.Errorf("variants.max_source_len: must be >= 16, got %d", c.MaxSourceLen))
	}
	if c.MaxOutputLen < 8 {
		errs = append(errs, fmt.Errorf("variants.max_output_len: must be >= 8, got %d", c.MaxOutputLen))
	}
	if c.PairMaxLen < 8 {
		errs = append(errs, fmt.Errorf("variants.pair_max_len: must be >= 8, got %d", c.PairMaxLen))
	}
	return errors.Join(errs...)
}
