package config

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/tracksum/tracksum/llm"
)

// InferLLM configures the LLM methods of tracksum-infer (--method prompt|intrinsic|prior|posthoc,
// --tracker llm, --summarizer llm). The endpoint, key, cache, concurrency, retries and timeouts
// are eval.llm's, so that every LLM user of tracksum is configured in one place.
type InferLLM struct {
	// Model is the model name sent to the endpoint; empty means eval.llm.model.
	Model string `mapstructure:"model" yaml:"model"`
	// Temperature is the sampling temperature of every request (TracSum section 6.1: 1.0).
	Temperature float64 `mapstructure:"temperature" yaml:"temperature"`
	// MaxTokens bounds each answer's length in tokens (0: the endpoint's default).
	MaxTokens int `mapstructure:"max_tokens" yaml:"max_tokens"`
	// Demos is where --method prompt draws its two demonstrations from: a prepared directory (its
	// train split) or a TracSum/PCoA JSONL file; empty means the train split of --input, which
	// must then be a prepared directory.
	Demos string `mapstructure:"demos" yaml:"demos"`
	// PromptStyle is --method prompt's two-shot prompt: tracksum (reworded, the abstract after the
	// demonstrations, headings with colons) or paper (Table 15 as printed: the target document
	// first with empty answer fields, then the demonstrations, '[...]' lists).
	PromptStyle string `mapstructure:"prompt_style" yaml:"prompt_style"`
}

// DefaultInferLLM returns the built-in infer.llm settings.
func DefaultInferLLM() InferLLM {
	return InferLLM{Model: "", Temperature: 1.0, MaxTokens: 512, Demos: "", PromptStyle: PromptStyleTrackSum}
}

// Validate reports invalid infer.llm settings, naming each key.
func (c InferLLM) Validate() error {
	var errs []error
	if !(c.Temperature >= 0 && c.Temperature <= 2) {
		errs = append(errs, fmt.Errorf("infer.llm.temperature: must be in [0, 2], got %g", c.Temperature))
	}
	if c.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("infer.llm.max_tokens: must be >= 0"))
	}
	if !slices.Contains(PromptStyles, c.PromptStyle) {
		errs = append(errs, fmt.Errorf("infer.llm.prompt_style: must be one of %v, got %q", PromptStyles, c.PromptStyle))
	}
	return errors.Join(errs...)
}

// ClientOptions returns the options of an llm.Client for model (empty: c.Model), with the API key
// read from the environment variable c.APIKeyEnv. configKey names the base URL's setting in
// errors about an unreachable endpoint.
func (c EvalLLM) ClientOptions(model string) llm.Options {
	key := ""
	if c.APIKeyEnv != "" {
		key = os.Getenv(c.APIKeyEnv)
	}
	if model == "" {
		model = c.Model
	}
	return llm.Options{
		BaseURL: c.BaseURL, Model: model, APIKey: key, CacheDir: c.CacheDir,
		Concurrency: c.Concurrency, MaxRetries: c.MaxRetries, Backoff: c.Backoff, Timeout: c.Timeout,
		ConfigKey: "eval.llm.base_url",
	}
}
