package config

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Eval configures the built-in evaluator (package eval, command tracksum-eval).
type Eval struct {
	// Judge decomposes summaries into subclaims and decides entailment: "lexical" (offline,
	// deterministic proxy) or "llm" (an OpenAI-compatible chat-completions endpoint).
	Judge string `mapstructure:"judge" yaml:"judge"`
	// Missing says what a reference without a prediction means: "error" (default) or "empty"
	// (scored as a negative prediction: "Unknown." with no citation).
	Missing string `mapstructure:"missing" yaml:"missing"`
	// Stem applies the Porter stemmer in ROUGE (rouge-score's use_stemmer).
	Stem bool `mapstructure:"stem" yaml:"stem"`
	// Workers is the number of instances scored at once; 0 means one per CPU for the lexical judge
	// and llm.concurrency for the llm judge.
	Workers int `mapstructure:"workers" yaml:"workers"`
	// Bootstrap configures the confidence intervals and the paired significance test.
	Bootstrap EvalBootstrap `mapstructure:"bootstrap" yaml:"bootstrap"`
	// Lexical configures the lexical judge.
	Lexical EvalLexical `mapstructure:"lexical" yaml:"lexical"`
	// LLM configures the llm judge.
	LLM EvalLLM `mapstructure:"llm" yaml:"llm"`
}

// EvalBootstrap configures the percentile bootstrap of report.json and `eval compare`.
type EvalBootstrap struct {
	// Resamples is the number of bootstrap resamples (the issue asks for 1000).
	Resamples int `mapstructure:"resamples" yaml:"resamples"`
	// Seed makes the intervals reproducible: same inputs and seed => byte-identical report.json.
	Seed uint64 `mapstructure:"seed" yaml:"seed"`
	// Level is the confidence level of the intervals, e.g. 0.95.
	Level float64 `mapstructure:"level" yaml:"level"`
}

// EvalLexical configures the lexical judge (a documented proxy for NLI, not NLI).
type EvalLexical struct {
	// Threshold is the share of the hypothesis's stemmed content words that must occur in the
	// premise for entailment (numbers and negation are checked separately).
	Threshold float64 `mapstructure:"threshold" yaml:"threshold"`
	// MinClauseWords is the least number of content words each side of a clause boundary
	// (", and", ", but", ";", ...) must have for the decomposition to split there.
	MinClauseWords int `mapstructure:"min_clause_words" yaml:"min_clause_words"`
}

// EvalLLM configures the llm judge. The API key is read from the environment variable named by
// APIKeyEnv and is never written to the config snapshot, logs or errors.
type EvalLLM struct {
	// BaseURL is the endpoint's base, e.g. http://localhost:8000/v1 (POST BaseURL/chat/completions).
	BaseURL string `mapstructure:"base_url" yaml:"base_url"`
	// Model is the model name sent with every request and part of every cache key.
	Model string `mapstructure:"model" yaml:"model"`
	// APIKeyEnv names the environment variable holding the bearer token (empty value: no header).
	APIKeyEnv string `mapstructure:"api_key_env" yaml:"api_key_env"`
	// CacheDir holds one file per (model, prompt) answer, so that a rerun sends no request.
	CacheDir string `mapstructure:"cache_dir" yaml:"cache_dir"`
	// Concurrency bounds the requests in flight.
	Concurrency int `mapstructure:"concurrency" yaml:"concurrency"`
	// MaxRetries is the number of retries of a failed request (network error, 429, 5xx).
	MaxRetries int `mapstructure:"max_retries" yaml:"max_retries"`
	// Backoff is the wait before the first retry; it doubles at each further retry.
	Backoff time.Duration `mapstructure:"backoff" yaml:"backoff"`
	// Timeout bounds each request.
	Timeout time.Duration `mapstructure:"timeout" yaml:"timeout"`
}

// EvalJudges lists the accepted values of eval.judge.
var EvalJudges = []string{"lexical", "llm"}

// EvalMissing lists the accepted values of eval.missing.
var EvalMissing = []string{"error", "empty"}

// DefaultEval returns the built-in eval settings.
func DefaultEval() Eval {
	return Eval{
		Judge:     "lexical",
		Missing:   "error",
		Stem:      true,
		Workers:   0,
		Bootstrap: EvalBootstrap{Resamples: 1000, Seed: 3407, Level: 0.95},
		Lexical:   EvalLexical{Threshold: 0.6, MinClauseWords: 2},
		LLM: EvalLLM{
			BaseURL:     "http://localhost:8000/v1",
			Model:       "",
			APIKeyEnv:   "TRACKSUM_LLM_API_KEY",
			CacheDir:    ".cache/tracksum-llm",
			Concurrency: 4,
			MaxRetries:  4,
			Backoff:     500 * time.Millisecond,
			Timeout:     60 * time.Second,
		},
	}
}

// Validate reports invalid eval settings, naming each key.
func (c Eval) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("eval.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if !slices.Contains(EvalJudges, c.Judge) {
		bad("judge", "must be one of %v, got %q", EvalJudges, c.Judge)
	}
	if !slices.Contains(EvalMissing, c.Missing) {
		bad("missing", "must be one of %v, got %q", EvalMissing, c.Missing)
	}
	if c.Workers < 0 {
		bad("workers", "must be >= 0")
	}
	if c.Bootstrap.Resamples < 1 {
		bad("bootstrap.resamples", "must be >= 1")
	}
	if !(c.Bootstrap.Level > 0 && c.Bootstrap.Level < 1) {
		bad("bootstrap.level", "must be in (0, 1)")
	}
	if !(c.Lexical.Threshold > 0 && c.Lexical.Threshold <= 1) {
		bad("lexical.threshold", "must be in (0, 1]")
	}
	if c.Lexical.MinClauseWords < 1 {
		bad("lexical.min_clause_words", "must be >= 1")
	}
	if c.LLM.Concurrency < 1 {
		bad("llm.concurrency", "must be >= 1")
	}
	if c.LLM.MaxRetries < 0 {
		bad("llm.max_retries", "must be >= 0")
	}
	if c.LLM.Backoff < 0 {
		bad("llm.backoff", "must be >= 0")
	}
	if c.LLM.Timeout <= 0 {
		bad("llm.timeout", "must be > 0")
	}
	if c.Judge == "llm" {
		if c.LLM.BaseURL == "" {
			bad("llm.base_url", "must be set when eval.judge is llm")
		}
		if c.LLM.Model == "" {
			bad("llm.model", "must be set when eval.judge is llm")
		}
	}
	return errors.Join(errs...)
}
