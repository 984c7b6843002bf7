package infer

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/infer/llmmethods"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/llm"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
)

// LLMComponent is the tracker or summarizer "llm": a prompted component of Track-then-Sum, asked
// through the endpoint of eval.llm (package llmmethods' Track and Summarize).
const LLMComponent = "llm"

// Predictor predicts every aspect of an abstract at once; it replaces the tracker and summarizer
// of a Pipeline (the end-to-end LLM methods of --method).
type Predictor interface {
	Predict(a Abstract) ([]dataset.Prediction, error)
}

// usesLLM reports whether the options need the LLM endpoint.
func usesLLM(o Options) bool {
	return llmMethod(o.Method) || o.Tracker == LLMComponent || o.Summarizer == LLMComponent
}

// llmRun is the LLM side of a run: the shared client, the methods' runner and what to report.
type llmRun struct {
	client *llm.Client
	runner *llmmethods.Runner
	opts   Options
	cfg    *config.Config
}

// resolveAspect finds the aspect of a code: an exact code of set first, then an exact code of any
// set (PCoA's upper-case codes in a run whose set defaulted to TracSum's), then LookupAspect's
// case-insensitive match in set.
func resolveAspect(set, code string) (dataset.Aspect, error) {
	sets := append([]string{set}, dataset.AspectSets()...)
	for _, s := range sets {
		for _, a := range dataset.Aspects(s) {
			if a.Code == code {
				return a, nil
			}
		}
	}
	if a, ok := dataset.LookupAspect(set, code); ok {
		return a, nil
	}
	return dataset.Aspect{}, fmt.Errorf("%w: aspect %q is in no known aspect set", ErrInput, code)
}

// setupLLM builds the client and the runner and plugs them into p: as its Predictor (--method),
// its Tracker (--tracker llm) and/or its Summarizer (--summarizer llm). abstracts are checked for
// aspects the prompts can name.
func setupLLM(ctx context.Context, cfg *config.Config, o Options, p *Pipeline, aspectSet string, abstracts []Abstract, log io.Writer) (*llmRun, error) {
	opts := cfg.Eval.LLM.ClientOptions(cfg.Infer.LLM.Model)
	if opts.Model == "" {
		return nil, fmt.Errorf("infer: the LLM methods need a model: --llm-model, infer.llm.model or eval.llm.model")
	}
	client, err := llm.New(opts)
	if err != nil {
		return nil, fmt.Errorf("infer: %w (eval.llm.base_url)", err)
	}
	for _, a := range abstracts {
		for _, code := range a.Aspects {
			if _, err := resolveAspect(aspectSet, code); err != nil {
				return nil, fmt.Errorf("abstract %s: %w", a.PMID, err)
			}
		}
	}
	mc := llmmethods.Config{Client: client, Temperature: cfg.Infer.LLM.Temperature, MaxTokens: cfg.Infer.LLM.MaxTokens, Seed: cfg.Seed,
		PaperPrompt: cfg.Infer.LLM.PromptStyle == config.PromptStylePaper}
	var method llmmethods.Method
	if o.Method != "" {
		if method, err = llmmethods.ParseMethod(o.Method); err != nil {
			return nil, fmt.Errorf("--method: %w", err)
		}
	}
	if method == llmmethods.Prompt {
		if mc.Demos, err = loadDemos(cfg, o, aspectSet, abstracts, log); err != nil {
			return nil, err
		}
	}
	r := &llmRun{client: client, runner: llmmethods.New(mc), opts: o, cfg: cfg}
	if method != "" {
		p.Predictor = &llmPredictor{ctx: ctx, runner: r.runner, method: method, set: aspectSet}
	}
	if o.Tracker == LLMComponent {
		p.Tracker = &llmTracker{ctx: ctx, runner: r.runner, set: aspectSet}
	}
	if o.Summarizer == LLMComponent {
		p.Summarizer = &llmSummarizer{ctx: ctx, runner: r.runner, set: aspectSet}
	}
	return r, nil
}

// loadDemos reads the demonstration pool of the prompt method: infer.llm.demos (a prepared
// directory's train split or a JSONL file), else the train split of --input.
func loadDemos(cfg *config.Config, o Options, aspectSet string, abstracts []Abstract, log io.Writer) (*llmmethods.Demos, error) {
	src := cfg.Infer.LLM.Demos
	if src == "" {
		if st, err := os.Stat(o.Input); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("--method prompt: --demos (infer.llm.demos) is required when --input is not a prepared directory")
		}
		src = o.Input
	}
	_, pool, err := ReadInput(src, dataset.SplitTrain, aspectSet, nil)
	if err != nil {
		return nil, fmt.Errorf("--demos %s: %w", src, err)
	}
	if pool == nil {
		return nil, fmt.Errorf("--demos %s: raw text has no reference summaries to demonstrate", src)
	}
	if st, err := os.Stat(src); err == nil && !st.IsDir() && sameFile(src, o.Input) {
		fmt.Fprintf(log, "infer: warning: the demonstrations come from --input itself (%s); an abstract never demonstrates itself, but other evaluation abstracts do\n", src)
	}
	demos := llmmethods.NewDemos(pool, cfg.Seed)
	seen := map[string]bool{}
	for _, a := range abstracts {
		for _, code := range a.Aspects {
			if seen[code] {
				continue
			}
			seen[code] = true
			pos, neg := demos.Has(code)
			var missing []string
			if !pos {
				missing = append(missing, "positive")
			}
			if !neg {
				missing = append(missing, "negative")
			}
			if len(missing) > 0 {
				fmt.Fprintf(log, "infer: warning: %s has no %s demonstration of aspect %s: its prompts have fewer than two shots\n",
					src, strings.Join(missing, " or "), code)
			}
		}
	}
	return demos, nil
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// StatsPath is where Run writes the LLM statistics of an output: PRED.llm-stats.json next to
// PRED.jsonl.
func StatsPath(out string) string {
	return strings.TrimSuffix(out, filepath.Ext(out)) + ".llm-stats.json"
}

// LLMStats is the content of StatsPath: what the LLM side of a run did.
type LLMStats struct {
	Method      string  `json:"method,omitempty"`
	Tracker     string  `json:"tracker,omitempty"`
	Summarizer  string  `json:"summarizer,omitempty"`
	Model       string  `json:"model"`
	Endpoint    string  `json:"endpoint"`
	Temperature float64 `json:"temperature"`
	MaxTokens   int     `json:"max_tokens"`
	Seed        int64   `json:"seed"`
	Abstracts   int     `json:"abstracts"`
	Predictions int     `json:"predictions"`
	ElapsedSec  float64 `json:"elapsed_s"`
	// RequestsPerPrediction is the client's calls (cached or not) per prediction.
	RequestsPerPrediction float64           `json:"requests_per_prediction"`
	Client                llm.Stats         `json:"client"`
	CacheHitRate          float64           `json:"cache_hit_rate"`
	Answers               llmmethods.Report `json:"answers"`
}

// finish prints the summary line and writes the statistics next to the predictions.
func (r *llmRun) finish(st *Stats, log io.Writer) error {
	cs := r.client.Stats()
	rep := r.runner.Report()
	s := LLMStats{
		Method: r.opts.Method, Model: r.client.Model(), Endpoint: r.client.Endpoint(),
		Temperature: r.cfg.Infer.LLM.Temperature, MaxTokens: r.cfg.Infer.LLM.MaxTokens, Seed: r.cfg.Seed,
		Abstracts: st.Abstracts, Predictions: st.Predictions, ElapsedSec: st.Elapsed.Seconds(),
		Client: cs, CacheHitRate: cs.HitRate(), Answers: rep,
	}
	if r.opts.Tracker == LLMComponent {
		s.Tracker = LLMComponent
	}
	if r.opts.Summarizer == LLMComponent {
		s.Summarizer = LLMComponent
	}
	if st.Predictions > 0 {
		s.RequestsPerPrediction = float64(cs.Calls) / float64(st.Predictions)
	}
	path := StatsPath(r.opts.Out)
	if err := atomicio.WriteJSON(path, s); err != nil {
		return fmt.Errorf("infer: %s: %w", path, err)
	}
	fmt.Fprintf(log, "infer: llm %s: %s; %s -> %s\n", r.client.Model(), rep, cs, path)
	return nil
}

// runAspects runs f for every aspect of an abstract concurrently (the client bounds the requests
// in flight) and returns the first error.
func runAspects(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// llmPredictor implements Predictor with an end-to-end method.
type llmPredictor struct {
	ctx    context.Context
	runner *llmmethods.Runner
	method llmmethods.Method
	set    string
}

// Predict implements Predictor.
func (l *llmPredictor) Predict(a Abstract) ([]dataset.Prediction, error) {
	out := make([]dataset.Prediction, len(a.Aspects))
	err := runAspects(len(a.Aspects), func(i int) error {
		asp, err := resolveAspect(l.set, a.Aspects[i])
		if err != nil {
			return err
		}
		o, err := l.runner.Predict(l.ctx, l.method, llmmethods.Document{PMID: a.PMID, Sentences: a.Document}, asp)
		if err != nil {
			return err
		}
		out[i] = dataset.Prediction{PMID: a.PMID, Aspect: a.Aspects[i], Summary: o.Summary, Indexes: o.Indexes,
			Phrases: o.Phrases, Problems: o.Problems}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// llmTracker implements Tracker: the sentences the model lists score 1, the others 0.
type llmTracker struct {
	ctx    context.Context
	runner *llmmethods.Runner
	set    string
}

// ScoreBatch implements Tracker.
func (l *llmTracker) ScoreBatch(reqs []tracker.Request) ([][]float32, error) {
	out := make([][]float32, len(reqs))
	err := runAspects(len(reqs), func(i int) error {
		asp, err := resolveAspect(l.set, reqs[i].Aspect)
		if err != nil {
			return err
		}
		idx, err := l.runner.Track(l.ctx, llmmethods.Document{Sentences: reqs[i].Doc}, asp)
		if err != nil {
			return err
		}
		out[i] = make([]float32, len(reqs[i].Doc))
		for _, j := range idx {
			out[i][j] = 1
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// llmSummarizer implements Summarizer with the prompted summarizer.
type llmSummarizer struct {
	ctx    context.Context
	runner *llmmethods.Runner
	set    string
}

// Summarize implements Summarizer; the decoding options do not apply to an LLM.
func (l *llmSummarizer) Summarize(reqs []summarizer.Request, _ decode.Options) ([]string, error) {
	out := make([]string, len(reqs))
	err := runAspects(len(reqs), func(i int) error {
		asp, err := resolveAspect(l.set, reqs[i].Aspect)
		if err != nil {
			return err
		}
		s, err := l.runner.Summarize(l.ctx, asp, reqs[i].Cited, reqs[i].Document)
		out[i] = s
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
