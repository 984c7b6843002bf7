package subword

import (
	"errors"
	"fmt"
)

// Tokenizer kinds accepted by TrainOptions.Kind.
const (
	// KindBPE is a byte-level BPE (GPT-2 style): every byte sequence is representable, so encoding
	// never produces [UNK] and decoding round-trips the (cleaned) text exactly.
	KindBPE = "bpe"
	// KindWordPiece is a cased BERT-style WordPiece with "##" continuation pieces.
	KindWordPiece = "wordpiece"
)

// DefaultSpecialTokens are the special tokens of every tokenizer trained with default options. Their
// ids are their positions: [PAD] is always 0 so that zero-filled id tensors are padding.
var DefaultSpecialTokens = []string{"[PAD]", "[UNK]", "[BOS]", "[EOS]", "[SEP]", "[CLS]", "[MASK]", "[CTX]"}

// Default values used when the corresponding TrainOptions field is zero.
const (
	DefaultVocabSize    = 8000
	DefaultMinFrequency = 2
)

// ErrOptions is wrapped by every error about invalid TrainOptions.
var ErrOptions = errors.New("invalid tokenizer options")

// TrainOptions configures Train. Zero values select the defaults.
type TrainOptions struct {
	// Kind is KindBPE (default when empty) or KindWordPiece.
	Kind string
	// VocabSize is the target vocabulary size including special tokens and the base alphabet
	// (default DefaultVocabSize). Training stops earlier when no pair reaches MinFrequency.
	VocabSize int
	// MinFrequency is the minimum count of a pair to be merged (default DefaultMinFrequency).
	MinFrequency int
	// SpecialTokens get ids 0..len-1 in this order (default DefaultSpecialTokens). The first one is
	// the padding token and "[UNK]" must be present.
	SpecialTokens []string
}

// withDefaults returns a copy of o with zero fields replaced by defaults, or an error naming the
// offending field.
func (o TrainOptions) withDefaults() (TrainOptions, error) {
	if o.Kind == "" {
		o.Kind = KindBPE
	}
	if o.VocabSize == 0 {
		o.VocabSize = DefaultVocabSize
	}
	if o.MinFrequency == 0 {
		o.MinFrequency = DefaultMinFrequency
	}
	if o.SpecialTokens == nil {
		o.SpecialTokens = append([]string(nil), DefaultSpecialTokens...)
	}
	switch o.Kind {
	case KindBPE, KindWordPiece:
	default:
		return o, fmt.Errorf("%w: kind %q: must be %q or %q", ErrOptions, o.Kind, KindBPE, KindWordPiece)
	}
	if o.MinFrequency < 1 {
		return o, fmt.Errorf("%w: min frequency %d: must be >= 1", ErrOptions, o.MinFrequency)
	}
	seen := map[string]bool{}
	for _, s := range o.SpecialTokens {
		if s == "" {
			return o, fmt.Errorf("%w: special tokens: empty token", ErrOptions)
		}
		if seen[s] {
			return o, fmt.Errorf("%w: special tokens: %q listed twice", ErrOptions, s)
		}
		if Clean(s) != s {
			return o, fmt.Errorf("%w: special tokens: %q contains whitespace or control characters", ErrOptions, s)
		}
		seen[s] = true
	}
	if !seen[unkToken] {
		return o, fmt.Errorf("%w: special tokens: %q is required", ErrOptions, unkToken)
	}
	minSize := len(o.SpecialTokens)
	if o.Kind == KindBPE {
		minSize += 256
	}
	if o.VocabSize < minSize+1 {
		return o, fmt.Errorf("%w: vocab size %d: must be > %d (special tokens + base alphabet)", ErrOptions, o.VocabSize, minSize)
	}
	return o, nil
}

const unkToken = "[UNK]"
