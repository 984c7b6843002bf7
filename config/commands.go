package config

import (
	"fmt"
	"slices"
	"time"
)

// The settings of this file (and the run settings of the infer, prepare and eval sections) say
// what one command invocation reads and writes: paths, modes, a server's address. Every flag of
// every command is bound to such a key (internal/cli's LoadConfig), so that a profile, a
// TRACKSUM_* variable or --set can give them too and --print-config shows them. They change no
// model and no prediction, so they are left out of the config.yaml files written next to outputs
// (yaml:"-"): those record how a model or a prediction was made, and the settings records of
// cross-validations are hashed from them.

// InferDecoding overrides the decoding settings stored in a summarizer checkpoint (tracksum-infer's
// --beam-size, --length-penalty, ...; tracksum-serve's models too). Each key is unset (nil) by
// default: the checkpoint's own value. Ranges are checked where they are applied (infer's
// CheckDecoding), with one usage error naming the flag.
type InferDecoding struct {
	// BeamSize is the beam width (1 = greedy).
	BeamSize *int `mapstructure:"beam_size" yaml:"beam_size,omitempty"`
	// MaxLength is the maximum summary tokens, [EOS] included.
	MaxLength *int `mapstructure:"max_length" yaml:"max_length,omitempty"`
	// LengthPenalty is the GNMT length penalty alpha.
	LengthPenalty *float64 `mapstructure:"length_penalty" yaml:"length_penalty,omitempty"`
	// NoRepeatNgram forbids repeating n-grams of this size (0 = off).
	NoRepeatNgram *int `mapstructure:"no_repeat_ngram" yaml:"no_repeat_ngram,omitempty"`
	// MinLengthRatio overrides a from-scratch summarizer's summarizer.min_len_ratio.
	MinLengthRatio *float64 `mapstructure:"min_length_ratio" yaml:"min_length_ratio,omitempty"`
	// CopyChainBonus overrides a from-scratch summarizer's summarizer.copy_chain_bonus.
	CopyChainBonus *float64 `mapstructure:"copy_chain_bonus" yaml:"copy_chain_bonus,omitempty"`
	// WordRule overrides a from-scratch summarizer's summarizer.word_rule.
	WordRule *bool `mapstructure:"word_rule" yaml:"word_rule,omitempty"`
	// RepeatSourceNgrams overrides a from-scratch summarizer's summarizer.repeat_source_ngrams.
	RepeatSourceNgrams *bool `mapstructure:"repeat_source_ngrams" yaml:"repeat_source_ngrams,omitempty"`
	// SampleTemperature > 0 makes a pretrained summarizer sample its tokens instead of searching
	// (unset or 0: search).
	SampleTemperature *float64 `mapstructure:"sample_temperature" yaml:"sample_temperature,omitempty"`
	// TopP is the nucleus of sampling, in (0, 1] (unset: 1).
	TopP *float64 `mapstructure:"top_p" yaml:"top_p,omitempty"`
}

// Serve holds tracksum-serve's settings (its flags); the models are loaded with the infer
// section's grounding, precision and full_context.
type Serve struct {
	// Mode is tracksum or chat; empty: chosen from the models given.
	Mode string `mapstructure:"mode" yaml:"mode"`
	// Summarizer, Tracker, Method and Model name the models, as tracksum-infer's flags do.
	Summarizer string `mapstructure:"summarizer" yaml:"summarizer"`
	Tracker    string `mapstructure:"tracker" yaml:"tracker"`
	Method     string `mapstructure:"method" yaml:"method"`
	Model      string `mapstructure:"model" yaml:"model"`
	// Threshold is the tracker's decision threshold (0: infer.threshold when set, else the
	// tracker checkpoint's, else 0.5; infer.Threshold).
	Threshold float64 `mapstructure:"threshold" yaml:"threshold"`
	// MaxTokens bounds a chat-mode answer whose request sets no max_tokens.
	MaxTokens int `mapstructure:"max_tokens" yaml:"max_tokens"`
	// DefaultAspect is the aspect of a message that names none (empty: the checkpoint's first).
	DefaultAspect string `mapstructure:"default_aspect" yaml:"default_aspect"`
	// Listen is the TCP address to listen on.
	Listen string `mapstructure:"listen" yaml:"listen"`
	// ModelName is the model id served by /v1/models and expected in requests.
	ModelName string `mapstructure:"model_name" yaml:"model_name"`
	// Workers is the number of requests the model runs at once.
	Workers int `mapstructure:"workers" yaml:"workers"`
	// Queue is the number of requests that may wait for a worker.
	Queue int `mapstructure:"queue" yaml:"queue"`
	// MaxBodyBytes is the largest request body.
	MaxBodyBytes int64 `mapstructure:"max_body_bytes" yaml:"max_body_bytes"`
	// BodyTimeout, RequestTimeout and ShutdownTimeout bound the reading of a body, a request and
	// the drain on SIGTERM/SIGINT.
	BodyTimeout     time.Duration `mapstructure:"body_timeout" yaml:"body_timeout"`
	RequestTimeout  time.Duration `mapstructure:"request_timeout" yaml:"request_timeout"`
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout" yaml:"shutdown_timeout"`
	// APIKeyEnv names the environment variable holding the bearer token requests must carry
	// (empty: no authentication). The variable itself is no config key.
	APIKeyEnv string `mapstructure:"api_key_env" yaml:"api_key_env"`
	// LogPrompts writes the request messages into the access log.
	LogPrompts bool `mapstructure:"log_prompts" yaml:"log_prompts"`
}

// DefaultServe returns tracksum-serve's built-in settings (package serve's DefaultOptions are
// these).
func DefaultServe() Serve {
	return Serve{MaxTokens: 512, Listen: "127.0.0.1:8000", ModelName: "tracksum", Workers: 2, Queue: 16,
		MaxBodyBytes: 1 << 20, BodyTimeout: 10 * time.Second, RequestTimeout: 120 * time.Second,
		ShutdownTimeout: 30 * time.Second}
}

// Export holds tracksum-export's settings (its flags).
type Export struct {
	// Checkpoint is the pretrained checkpoint to merge.
	Checkpoint string `mapstructure:"checkpoint" yaml:"checkpoint"`
	// Out is the directory of the merged snapshot.
	Out string `mapstructure:"out" yaml:"out"`
	// Overwrite replaces an existing non-empty Out.
	Overwrite bool `mapstructure:"overwrite" yaml:"overwrite"`
	// Base is the base snapshot when it moved since training (empty: the one base.json names).
	Base string `mapstructure:"base" yaml:"base"`
	// DType is the dtype of the written float tensors: "" keeps each base tensor's own (the merge
	// is rounded to it), float32 keeps the merge unrounded, bfloat16 or float16 round to those.
	DType string `mapstructure:"dtype" yaml:"dtype"`
}

// ExportDTypes are export.dtype's values besides "" (the base's dtypes), as transformers names
// them in config.json's torch_dtype.
var ExportDTypes = []string{"float32", "bfloat16", "float16"}

// Validate checks export.dtype.
func (c Export) Validate() error {
	if c.DType != "" && !slices.Contains(ExportDTypes, c.DType) {
		return fmt.Errorf("export.dtype: must be empty (the base's) or one of %v, got %q", ExportDTypes, c.DType)
	}
	return nil
}

// Train holds tracksum-train's own settings (its flags that are not a model's keys: those are the
// task sections' train.* and the tasks' own keys).
type Train struct {
	// Task is the registered task to train (empty: tracker, else the first registered).
	Task string `mapstructure:"task" yaml:"task"`
	// Data is the prepared directory; Out the checkpoint or cross-validation directory.
	Data string `mapstructure:"data" yaml:"data"`
	Out  string `mapstructure:"out" yaml:"out"`
	// Folds > 0 cross-validates the task on that many folds of Data.
	Folds int `mapstructure:"folds" yaml:"folds"`
	// CVModel is the model a cross-validation trains (empty: the task's default).
	CVModel string `mapstructure:"cv_model" yaml:"cv_model"`
	// DevShare is the share of the training folds' abstracts used as dev (unset: the
	// cross-validation's default).
	DevShare *float64 `mapstructure:"dev_share" yaml:"dev_share,omitempty"`
	// Final trains the final model with the step count chosen by the cross-validation FoldsFrom.
	Final     bool   `mapstructure:"final" yaml:"final"`
	FoldsFrom string `mapstructure:"folds_from" yaml:"folds_from"`
	// Plan prints the memory plan of a --pretrained recipe instead of training.
	Plan bool `mapstructure:"plan" yaml:"plan"`
	// Overwrite starts afresh, replacing a previous run in Out once the new one has finished.
	Overwrite bool `mapstructure:"overwrite" yaml:"overwrite"`
	// AllowChangedConfig resumes a checkpoint whose seed or task settings differ.
	AllowChangedConfig bool `mapstructure:"allow_changed_config" yaml:"allow_changed_config"`
	// Migrate writes the manifests of older checkpoints (the command's arguments) and trains
	// nothing.
	Migrate bool `mapstructure:"migrate" yaml:"migrate"`
}

// DefaultTrain returns tracksum-train's built-in settings.
func DefaultTrain() Train { return Train{} }
