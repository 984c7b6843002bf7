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
	// FullContextBatchSize, SumThenTrackBatchSize and EndToEndBatchSize are the micro-batches of
	// the summarizer loop when it trains TTS (+) f (summarizer.full_context), SUM-THEN-TRACK's
	// summarizer of the whole abstract, and END-TO-END: the paper halves them to 8 for these longer
	// inputs (C.4, C.5.2, C.6.2). 0 = summarizer.train.batch_size.
	FullContextBatchSize  int `mapstructure:"full_context_batch_size" yaml:"full_context_batch_size"`
	SumThenTrackBatchSize int `mapstructure:"sum_then_track_batch_size" yaml:"sum_then_track_batch_size"`
	EndToEndBatchSize     int `mapstructure:"end_to_end_batch_size" yaml:"end_to_end_batch_size"`
}

// Kinds of summarizer-loop runs of SummarizerBatchSize.
const (
	BatchTrackThenSum = ""               // TTS, summarizer.full_context decides (+) f
	BatchSumThenTrack = "sum_then_track" // SUM-THEN-TRACK's summarizer
	BatchEndToEnd     = "end_to_end"     // END-TO-END
)

// SummarizerBatchSize returns the micro-batch of the summarizer loop for a run of kind v
// (BatchTrackThenSum, BatchSumThenTrack, BatchEndToEnd) whose TTS input has the full abstract when
// fullContext: the variant's batch size when set, else summarizer.train.batch_size (base).
func (c Variants) SummarizerBatchSize(v string, fullContext bool, base int) int {
	b := 0
	switch v {
	case BatchSumThenTrack:
		b = c.SumThenTrackBatchSize
	case BatchEndToEnd:
		b = c.EndToEndBatchSize
	default:
		if fullContext {
			b = c.FullContextBatchSize
		}
	}
	if b > 0 {
		return b
	}
	return base
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
	for _, b := range []struct {
		key string
		n   int
	}{{"full_context_batch_size", c.FullContextBatchSize}, {"sum_then_track_batch_size", c.SumThenTrackBatchSize}, {"end_to_end_batch_size", c.EndToEndBatchSize}} {
		if b.n < 0 {
			errs = append(errs, fmt.Errorf("variants.%s: must be >= 0 (0 = summarizer.train.batch_size), got %d", b.key, b.n))
		}
	}
	return errors.Join(errs...)
}
