package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Infer configures Track-then-Sum inference: which sentences the tracker keeps and how the work is
// batched. Decoding settings (beam size, length penalty, ...) live in the summarizer section and are
// stored in its checkpoint; Decoding overrides them at inference.
type Infer struct {
	// Threshold keeps the sentences whose tracker probability is >= it (0 keeps every one). Unset
	// (nil, the default; written to YAML only when set): the tracker checkpoint's recorded
	// tracker.threshold applies, else 0.5 (TracSum C.1); see infer.Threshold for the whole rule,
	// which tracksum-serve follows too.
	Threshold *float64 `mapstructure:"threshold" yaml:"threshold,omitempty"`
	// Aspects lists the aspect codes to summarize for raw-text input (empty = every registered
	// aspect). For benchmark input, the instances' own aspects are used unless this is set.
	Aspects []string `mapstructure:"aspects" yaml:"aspects"`
	// FullContext feeds the full abstract to the summarizer as well (TTS (+) f); the summarizer
	// checkpoint must have been trained that way.
	FullContext bool `mapstructure:"full_context" yaml:"full_context"`
	// Grounding says what happens to a tracked sentence that supports no claim of the summary
	// written from it (package infer/ground): "restore" appends it to the summary, "prune" drops
	// the citation, "off" leaves both. Track-then-Sum only (TTS and TTS (+) f, and the summarizer
	// cross-validation's summaries of gold citations). Off by default: its support test is the
	// lexical judge's own, and no independent judge has shown that it helps (docs/summarizer.md).
	// Left out of the YAML when empty: the settings records of cross-validations hold it empty.
	Grounding string `mapstructure:"grounding" yaml:"grounding,omitempty"`
	// Workers is the number of abstracts processed in parallel (0 = number of CPUs, or
	// eval.llm.concurrency for the LLM methods).
	Workers int `mapstructure:"workers" yaml:"workers"`
	// LLM configures the LLM methods (see InferLLM).
	LLM InferLLM `mapstructure:"llm" yaml:"llm"`
	// Precision overrides the compute precision of checkpoints fine-tuned from a pretrained model
	// (train.precision): f32, bf16 or auto (bf16 on a CUDA backend, else f32); empty = the one
	// each checkpoint was trained in. Left out of the YAML when empty, as Grounding.
	Precision string `mapstructure:"precision" yaml:"precision,omitempty"`
	// Decoding overrides the summarizer checkpoint's decoding settings (each unset by default:
	// the checkpoint's); written to YAML only when set.
	Decoding InferDecoding `mapstructure:"decoding" yaml:"decoding,omitempty"`

	// The run settings of tracksum-infer (its flags; see commands.go): left out of YAML.

	// Tracker, Summarizer, Method and Model name the models (infer.Options).
	Tracker    string `mapstructure:"tracker" yaml:"-"`
	Summarizer string `mapstructure:"summarizer" yaml:"-"`
	Method     string `mapstructure:"method" yaml:"-"`
	Model      string `mapstructure:"model" yaml:"-"`
	// Input is a prepared directory, a benchmark file or a raw text file; Split the split of a
	// prepared directory.
	Input string `mapstructure:"input" yaml:"-"`
	Split string `mapstructure:"split" yaml:"-"`
	// Out is the prediction JSONL file; Refs, when set, receives the input's reference instances.
	Out  string `mapstructure:"out" yaml:"-"`
	Refs string `mapstructure:"refs" yaml:"-"`
	// Refine > 0 refines each positive summary with QA feedback for at most that many rounds.
	Refine int `mapstructure:"refine" yaml:"-"`
}

// DefaultInfer returns the built-in infer settings.
func DefaultInfer() Infer {
	return Infer{Aspects: []string{}, FullContext: false, Grounding: "off", Workers: 0, LLM: DefaultInferLLM(), Split: "test"}
}

// Validate reports invalid infer settings, naming each key.
func (c Infer) Validate() error {
	var errs []error
	// An optional key escapes Config.Validate's check of every float for NaN and infinities.
	if t := c.Threshold; t != nil && (math.IsNaN(*t) || math.IsInf(*t, 0)) {
		errs = append(errs, fmt.Errorf("infer.threshold: must be a finite number, got %g", *t))
	} else if t != nil && (*t < 0 || *t > 1) {
		errs = append(errs, fmt.Errorf("infer.threshold: must be in [0, 1], got %g", *t))
	}
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("infer.workers: must be >= 0"))
	}
	if c.Precision != "" && !slices.Contains(Precisions, c.Precision) {
		errs = append(errs, fmt.Errorf("infer.precision: must be empty (the checkpoint's) or one of %v, got %q", Precisions, c.Precision))
	}
	switch c.Grounding {
	case "off", "prune", "restore":
	default:
		errs = append(errs, fmt.Errorf("infer.grounding: must be off, prune or restore, got %q", c.Grounding))
	}
	return errors.Join(append(errs, c.LLM.Validate())...)
}
