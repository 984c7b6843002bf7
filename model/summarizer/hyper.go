package summarizer

import (
	"fmt"

	"github.com/tracksum/tracksum/config"
)

// Hyperparams holds everything needed to rebuild the network from its weights. It is written into
// the checkpoint (summarizer.json, under "hyper") so that inference never needs the training
// config. The tracker's counterpart is tracker.Hyperparams (hparams.json).
type Hyperparams struct {
	VocabSize     int  `json:"vocab_size"`
	DModel        int  `json:"d_model"`
	Heads         int  `json:"heads"`
	FFNDim        int  `json:"ffn_dim"`
	EncoderLayers int  `json:"encoder_layers"`
	DecoderLayers int  `json:"decoder_layers"`
	MaxSourceLen  int  `json:"max_source_len"`
	MaxSummaryLen int  `json:"max_summary_len"`
	FullContext   bool `json:"full_context"`
	// Special token ids of the tokenizer the model was trained with.
	PadID int32 `json:"pad_id"`
	BosID int32 `json:"bos_id"`
	EosID int32 `json:"eos_id"`
	SepID int32 `json:"sep_id"`
	CtxID int32 `json:"ctx_id"`
	// NumAspects > 0 conditions the decoder on the aspect: a learned vector per aspect (row
	// NumAspects is the aspect-free copy task) is added to every decoder input. The encoder reads
	// the aspect's text too, but a small decoder trained on a few hundred summaries did not learn
	// to look it up there and opened every summary the same way ("The study aims to evaluate")
	// whatever the aspect. 0 (checkpoints written before) means no aspect vector.
	NumAspects int `json:"num_aspects,omitempty"`
	// Dropout is only used while training; kept for the record.
	Dropout float64 `json:"dropout"`
	// GenIDs is the generation vocabulary, sorted: the ids the output softmax covers (the most
	// frequent summary tokens of the training split and [EOS]). Any other id can only be produced
	// by copying it from the source. Empty means the whole vocabulary. A small generation
	// vocabulary makes the output layer, the costliest part of training, several times cheaper.
	GenIDs []int32 `json:"gen_ids,omitempty"`
}

// genIDs returns the generation vocabulary (every id when GenIDs is empty).
func (h Hyperparams) genIDs() []int32 {
	if len(h.GenIDs) > 0 {
		return h.GenIDs
	}
	ids := make([]int32, h.VocabSize)
	for i := range ids {
		ids[i] = int32(i)
	}
	return ids
}

// genIndex maps ids to their position in the generation vocabulary.
func (h Hyperparams) genIndex() map[int32]int32 {
	m := make(map[int32]int32, len(h.genIDs()))
	for i, id := range h.genIDs() {
		m[id] = int32(i)
	}
	return m
}

// maxPositions sizes the learned position tables; the decoder needs one more slot for [BOS].
func (h Hyperparams) maxPositions() int { return max(h.MaxSourceLen, h.MaxSummaryLen+1) }

// lastTrainedTgtPos is the last decoder position training reaches: the inputs are [BOS] and at
// most MaxSummaryLen-1 summary tokens (positions 0..MaxSummaryLen-1). The rows after it in tgt_pos
// keep their random initial values, so decoding past it (summarizer.max_decode_len) reuses this
// row: causal self-attention still sees every earlier token, and the copy mechanism (with its
// chain bonus) tracks the source position by content, not by the target position.
func (h Hyperparams) lastTrainedTgtPos() int { return min(h.MaxSummaryLen-1, h.maxPositions()-1) }

// copyAspect is the aspect index of the self-supervised copy examples (no aspect).
func (h Hyperparams) copyAspect() int32 { return int32(h.NumAspects) }

// headDim is the width of one attention head.
func (h Hyperparams) headDim() int { return h.DModel / h.Heads }

// validate checks Hyperparams read from a checkpoint or built from a config.
func (h Hyperparams) validate() error {
	switch {
	case h.VocabSize <= 0:
		return fmt.Errorf("vocab_size must be > 0, got %d", h.VocabSize)
	case h.DModel <= 0 || h.Heads <= 0 || h.DModel%h.Heads != 0:
		return fmt.Errorf("d_model (%d) must be a positive multiple of heads (%d)", h.DModel, h.Heads)
	case h.FFNDim <= 0 || h.EncoderLayers <= 0 || h.DecoderLayers <= 0:
		return fmt.Errorf("ffn_dim, encoder_layers and decoder_layers must be > 0")
	case h.MaxSourceLen <= 0 || h.MaxSummaryLen <= 0:
		return fmt.Errorf("max_source_len and max_summary_len must be > 0")
	case h.NumAspects < 0:
		return fmt.Errorf("num_aspects must be >= 0, got %d", h.NumAspects)
	}
	for _, id := range h.GenIDs {
		if id < 0 || int(id) >= h.VocabSize {
			return fmt.Errorf("gen_ids: id %d outside the vocabulary (size %d)", id, h.VocabSize)
		}
	}
	for name, id := range map[string]int32{"pad": h.PadID, "bos": h.BosID, "eos": h.EosID, "sep": h.SepID, "ctx": h.CtxID} {
		if id < 0 || int(id) >= h.VocabSize {
			return fmt.Errorf("%s_id %d outside the vocabulary (size %d)", name, id, h.VocabSize)
		}
	}
	return nil
}

// NewHyperparams builds the network's hyperparameters from the summarizer config and the
// tokenizer's vocabulary size and special ids.
func NewHyperparams(c config.Summarizer, vocabSize int, special SpecialIDs) Hyperparams {
	return Hyperparams{
		VocabSize:     vocabSize,
		DModel:        c.DModel,
		Heads:         c.Heads,
		FFNDim:        c.FFNDim,
		EncoderLayers: c.EncoderLayers,
		DecoderLayers: c.DecoderLayers,
		MaxSourceLen:  c.MaxSourceLen,
		MaxSummaryLen: c.MaxSummaryLen,
		FullContext:   c.FullContext,
		PadID:         special.Pad,
		BosID:         special.Bos,
		EosID:         special.Eos,
		SepID:         special.Sep,
		CtxID:         special.Ctx,
		Dropout:       c.Dropout,
	}
}

// SpecialIDs are the tokenizer ids the summarizer's input and output formats rely on.
type SpecialIDs struct {
	Pad, Bos, Eos, Sep, Ctx int32
}
