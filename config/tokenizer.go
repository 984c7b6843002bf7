package config

import (
	"errors"
	"fmt"
)

// Tokenizer configures the subword vocabulary that prepare learns from the training split and
// writes as OUT/tokenizer.json.
type Tokenizer struct {
	// Kind is the subword model: "bpe" (byte-level: decoding restores the text exactly, which the
	// summarizer needs) or "wordpiece".
	Kind string `mapstructure:"kind" yaml:"kind"`
	// VocabSize is the target vocabulary size, special tokens included.
	VocabSize int `mapstructure:"vocab_size" yaml:"vocab_size"`
	// MinFrequency drops words/merges seen fewer times in the training texts.
	MinFrequency int `mapstructure:"min_frequency" yaml:"min_frequency"`
	// MaxTrainTexts caps the number of training texts (sentences and summaries, in input order)
	// the vocabulary is learned from, so that learning stays bounded on very large inputs; 0 = all.
	MaxTrainTexts int `mapstructure:"max_train_texts" yaml:"max_train_texts"`
}

// DefaultTokenizer returns the built-in tokenizer settings.
func DefaultTokenizer() Tokenizer {
	return Tokenizer{Kind: "bpe", VocabSize: 8000, MinFrequency: 2, MaxTrainTexts: 200000}
}

// Validate reports invalid tokenizer settings, naming each key.
func (c Tokenizer) Validate() error {
	var errs []error
	switch c.Kind {
	case "wordpiece", "bpe":
	default:
		errs = append(errs, fmt.Errorf("tokenizer.kind: must be \"wordpiece\" or \"bpe\", got %q", c.Kind))
	}
	if c.VocabSize < 300 || c.VocabSize > 1<<20 {
		errs = append(errs, fmt.Errorf("tokenizer.vocab_size: must be in [300, 1048576] (room for the alphabet and special tokens), got %d", c.VocabSize))
	}
	if c.MinFrequency < 1 {
		errs = append(errs, fmt.Errorf("tokenizer.min_frequency: must be >= 1, got %d", c.MinFrequency))
	}
	if c.MaxTrainTexts < 0 {
		errs = append(errs, fmt.Errorf("tokenizer.max_train_texts: must be >= 0 (0 = all), got %d", c.MaxTrainTexts))
	}
	return errors.Join(errs...)
}
