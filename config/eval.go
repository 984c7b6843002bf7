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
	// deterministic proxy), "llm" (an OpenAI-compatible chat-completions endpoint) or "nli" (a
	// local sequence-classification NLI snapshot, eval.nli; claims from the lexical decomposition).
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
	// NLI configures the nli judge.
	NLI EvalNLI `mapstructure:"nli" yaml:"nli"`
	// Metrics lists the optional LLM metrics computed besides the built-in ones, through the
	// endpoint of eval.llm: "fm" (ScholarSum's facet-aware metric) and "qa" (LongSumEval).
	Metrics []string `mapstructure:"metrics" yaml:"metrics"`
	// FM configures the facet-aware metric.
	FM EvalFM `mapstructure:"fm" yaml:"fm"`
	// QA configures the LongSumEval QA metric and tracksum-infer --refine.
	QA EvalQA `mapstructure:"qa" yaml:"qa"`

	// The run settings of tracksum-eval and its subcommands (their flags; see commands.go): left
	// out of YAML.

	// Pred and Ref are the predictions and references JSONL files (Ref: compare's too).
	Pred string `mapstructure:"pred" yaml:"-"`
	Ref  string `mapstructure:"ref" yaml:"-"`
	// Out is the output directory; Overwrite replaces it when it is not a previous eval output.
	Out       string `mapstructure:"out" yaml:"-"`
	Overwrite bool   `mapstructure:"overwrite" yaml:"-"`
	// Compare holds tracksum-eval compare's own settings.
	Compare EvalCompare `mapstructure:"compare" yaml:"-"`
	// Agreement holds tracksum-eval agreement's settings.
	Agreement EvalAgreement `mapstructure:"agreement" yaml:"-"`
}

// EvalCompare holds tracksum-eval compare's own settings (its two prediction files are arguments).
type EvalCompare struct {
	// Out is the optional JSON file of the comparison.
	Out string `mapstructure:"out" yaml:"out"`
}

// EvalAgreement holds tracksum-eval agreement's settings.
type EvalAgreement struct {
	// Scores is the automatic per-instance scores (instances.jsonl); Human the human scores.
	Scores string `mapstructure:"scores" yaml:"scores"`
	Human  string `mapstructure:"human" yaml:"human"`
	// Out is the optional JSON file of the correlations.
	Out string `mapstructure:"out" yaml:"out"`
}

// EvalFM configures the facet-aware metric (package eval/facet).
type EvalFM struct {
	// WeightBackground, WeightMethod, WeightResult and WeightConclusion weigh the facets in the
	// overall score (ScholarSum's linear fit: 0.1, 0.3, 0.3, 0.3); the weights of the facets the
	// reference lacks are left out and the rest renormalised.
	WeightBackground float64 `mapstructure:"weight_background" yaml:"weight_background"`
	WeightMethod     float64 `mapstructure:"weight_method" yaml:"weight_method"`
	WeightResult     float64 `mapstructure:"weight_result" yaml:"weight_result"`
	WeightConclusion float64 `mapstructure:"weight_conclusion" yaml:"weight_conclusion"`
	// Temperature is sent with every request (0: the most deterministic answers).
	Temperature float64 `mapstructure:"temperature" yaml:"temperature"`
	// MaxTokens bounds each answer (0: the endpoint's default).
	MaxTokens int `mapstructure:"max_tokens" yaml:"max_tokens"`
}

// EvalQA configures the LongSumEval QA metric (package eval/qaeval) and its refinement loop.
type EvalQA struct {
	// SourceQuestions is the number of questions asked about the source (coverage; the paper
	// uses 6-12 for long documents).
	SourceQuestions int `mapstructure:"source_questions" yaml:"source_questions"`
	// SummaryQuestions is the number of question-answer pairs drawn from the summary
	// (consistency; the paper finds 5-7 best).
	SummaryQuestions int `mapstructure:"summary_questions" yaml:"summary_questions"`
	// Source is the text coverage questions are drawn from: "document" (the whole abstract:
	// LongSumEval's reference-free rule, questions from the source document) or "cited" (our
	// option: the reference's cited sentences in eval, the prediction's in refine, the aspect's
	// evidence). Consistency is always checked against the whole abstract.
	Source string `mapstructure:"source" yaml:"source"`
	// Similarity compares a summary answer with the source's: "rouge1" (ROUGE-1 F1) or
	// "jaccard" (token-set overlap, the paper's partial match).
	Similarity string `mapstructure:"similarity" yaml:"similarity"`
	// Threshold is tau: answer pairs with similarity <= it are inconsistent (paper: 0.6).
	Threshold float64 `mapstructure:"threshold" yaml:"threshold"`
	// CoverageTarget and ConsistencyTarget are the refinement's quality thresholds T_cov and
	// T_cons (paper: 0.60 and 0.73): a summary meeting both is not refined.
	CoverageTarget    float64 `mapstructure:"coverage_target" yaml:"coverage_target"`
	ConsistencyTarget float64 `mapstructure:"consistency_target" yaml:"consistency_target"`
	// EarlyStop ends a refinement at the first revision that does not raise the mean of the
	// scores. LongSumEval's Algorithm 2 (false, the default) revises on until the targets are met
	// or the rounds are spent.
	EarlyStop bool `mapstructure:"early_stop" yaml:"early_stop"`
	// Temperature is sent with every request.
	Temperature float64 `mapstructure:"temperature" yaml:"temperature"`
	// MaxTokens bounds each answer (0: the endpoint's default).
	MaxTokens int `mapstructure:"max_tokens" yaml:"max_tokens"`
}

// EvalMetrics lists the accepted values of eval.metrics.
var EvalMetrics = []string{"fm", "qa"}

// EvalQASources lists the accepted values of eval.qa.source.
var EvalQASources = []string{"document", "cited"}

// EvalQASimilarities lists the accepted values of eval.qa.similarity.
var EvalQASimilarities = []string{"rouge1", "jaccard"}

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
	// EntailHints adds instructions to the llm judge's entailment prompt that the papers' NLI
	// model (TRUE) does not get: "agreement" (numbers, doses, groups and negations must agree),
	// "abbreviations" (an abbreviation may be read as its expansion; TRUE fails there). None by
	// default: the prompt asks for entailment and nothing else.
	EntailHints []string `mapstructure:"entail_hints" yaml:"entail_hints"`
	// AllowMalformed lets tracksum-eval finish when an LLM metric (eval.metrics) got malformed
	// answers for over half of its prompts: that metric still gets no score (a model that does
	// not follow the prompts' format gives no meaningful one), but the run writes its outputs and
	// exits 0 instead of failing.
	AllowMalformed bool `mapstructure:"allow_malformed" yaml:"allow_malformed"`
}

// EvalNLI configures the nli judge: a local snapshot of a BERT, RoBERTa or DeBERTa-v2/v3
// sequence-classification NLI model (config.json with id2label, model.safetensors,
// tokenizer.json), never downloaded.
type EvalNLI struct {
	// Model is the snapshot directory (flag --nli-model).
	Model string `mapstructure:"model" yaml:"model"`
	// Threshold: a premise supports a claim when the entailment probability (softmax over the
	// model's labels; the largest over the premise's chunks) is at least this.
	Threshold float64 `mapstructure:"threshold" yaml:"threshold"`
	// BatchSize is the number of (premise, hypothesis) pairs per forward pass; it is also the
	// number of instances scored at once when eval.workers is 0.
	BatchSize int `mapstructure:"batch_size" yaml:"batch_size"`
	// MaxLength bounds a pair's tokens; 0 means the model's own limit (max_position_embeddings,
	// less RoBERTa's position offset, and tokenizer_config.json's model_max_length when smaller;
	// a DeBERTa without absolute positions: model_max_length, else 512).
	// Longer premises are cut into chunks of whole sentences.
	MaxLength int `mapstructure:"max_length" yaml:"max_length"`
	// CacheDir holds one file per (model weights, premise chunk, hypothesis) probability, so that
	// a rerun computes nothing; empty disables the cache.
	CacheDir string `mapstructure:"cache_dir" yaml:"cache_dir"`
}

// EvalEntailHints lists the accepted values of eval.llm.entail_hints (judge.EntailHints).
var EvalEntailHints = []string{"agreement", "abbreviations"}

// EvalJudges lists the accepted values of eval.judge.
var EvalJudges = []string{"lexical", "llm", "nli"}

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
			EntailHints: []string{},
		},
		NLI:     EvalNLI{Model: "", Threshold: 0.5, BatchSize: 16, MaxLength: 0, CacheDir: ".cache/tracksum-nli"},
		Metrics: []string{},
		FM: EvalFM{WeightBackground: 0.1, WeightMethod: 0.3, WeightResult: 0.3, WeightConclusion: 0.3,
			Temperature: 0, MaxTokens: 512},
		QA: EvalQA{SourceQuestions: 8, SummaryQuestions: 6, Source: "document", Similarity: "rouge1", Threshold: 0.6,
			CoverageTarget: 0.6, ConsistencyTarget: 0.73, EarlyStop: false, Temperature: 0, MaxTokens: 1024},
	}
}

// Validate reports invalid eval settings, naming each key.
func (c Eval) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("eval.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	// In this order, which is the order of the errors reported.
	c.validateScoring(bad)
	c.validateJudges(bad)
	c.validateFM(bad)
	c.validateQA(bad)
	c.validateEndpoints(bad)
	return errors.Join(errs...)
}

// reportBad records one invalid key of the eval section (Validate collects them all).
type reportBad = func(key, format string, args ...any)

// validateScoring checks the judge, the missing-prediction rule, the workers, the bootstrap and
// the lexical judge.
func (c Eval) validateScoring(bad reportBad) {
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
}

// validateJudges checks the LLM endpoint's and the NLI judge's settings and the names of the
// entailment hints and the LLM metrics.
func (c Eval) validateJudges(bad reportBad) {
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
	if !(c.NLI.Threshold > 0 && c.NLI.Threshold <= 1) {
		bad("nli.threshold", "must be in (0, 1]")
	}
	if c.NLI.BatchSize < 1 {
		bad("nli.batch_size", "must be >= 1")
	}
	if c.NLI.MaxLength != 0 && c.NLI.MaxLength < 8 {
		bad("nli.max_length", "must be 0 (the model's limit) or >= 8")
	}
	if c.Judge == "nli" && c.NLI.Model == "" {
		bad("nli.model", "must be set when eval.judge is nli (a local snapshot directory: --nli-model DIR)")
	}
	for _, h := range c.LLM.EntailHints {
		if !slices.Contains(EvalEntailHints, h) {
			bad("llm.entail_hints", "unknown hint %q (known: %v)", h, EvalEntailHints)
		}
	}
	for _, m := range c.Metrics {
		if !slices.Contains(EvalMetrics, m) {
			bad("metrics", "unknown metric %q (known: %v)", m, EvalMetrics)
		}
	}
}

// validateFM checks the facet metric's weights, and the temperatures and token limits of the
// FM and QA metrics.
func (c Eval) validateFM(bad reportBad) {
	for _, w := range []struct {
		key string
		v   float64
	}{{"weight_background", c.FM.WeightBackground}, {"weight_method", c.FM.WeightMethod},
		{"weight_result", c.FM.WeightResult}, {"weight_conclusion", c.FM.WeightConclusion}} {
		if w.v < 0 {
			bad("fm."+w.key, "must be >= 0")
		}
	}
	if c.FM.WeightBackground+c.FM.WeightMethod+c.FM.WeightResult+c.FM.WeightConclusion <= 0 {
		bad("fm.weight_*", "at least one facet weight must be > 0")
	}
	for _, t := range []struct {
		key string
		v   float64
	}{{"fm.temperature", c.FM.Temperature}, {"qa.temperature", c.QA.Temperature}} {
		if t.v < 0 || t.v > 2 {
			bad(t.key, "must be in [0, 2]")
		}
	}
	if c.FM.MaxTokens < 0 {
		bad("fm.max_tokens", "must be >= 0")
	}
	if c.QA.MaxTokens < 0 {
		bad("qa.max_tokens", "must be >= 0")
	}
}

// validateQA checks the QA metric's question counts, source, similarity and thresholds.
func (c Eval) validateQA(bad reportBad) {
	if c.QA.SourceQuestions < 1 {
		bad("qa.source_questions", "must be >= 1")
	}
	if c.QA.SummaryQuestions < 1 {
		bad("qa.summary_questions", "must be >= 1")
	}
	if !slices.Contains(EvalQASources, c.QA.Source) {
		bad("qa.source", "must be one of %v, got %q", EvalQASources, c.QA.Source)
	}
	if !slices.Contains(EvalQASimilarities, c.QA.Similarity) {
		bad("qa.similarity", "must be one of %v, got %q", EvalQASimilarities, c.QA.Similarity)
	}
	for _, t := range []struct {
		key string
		v   float64
	}{{"qa.threshold", c.QA.Threshold}, {"qa.coverage_target", c.QA.CoverageTarget}, {"qa.consistency_target", c.QA.ConsistencyTarget}} {
		if t.v < 0 || t.v > 1 {
			bad(t.key, "must be in [0, 1]")
		}
	}
}

// validateEndpoints checks that what needs the LLM endpoint (the LLM metrics, the llm judge)
// has one.
func (c Eval) validateEndpoints(bad reportBad) {
	if len(c.Metrics) > 0 && c.LLM.Model == "" {
		bad("llm.model", "must be set when eval.metrics is not empty (the LLM metrics use the eval.llm endpoint)")
	}
	if c.Judge == "llm" {
		if c.LLM.BaseURL == "" {
			bad("llm.base_url", "must be set when eval.judge is llm")
		}
		if c.LLM.Model == "" {
			bad("llm.model", "must be set when eval.judge is llm")
		}
	}
}
