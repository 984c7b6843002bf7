// Package llmmethods holds tracksum's LLM methods, run through the shared client of package llm
// against any OpenAI-compatible endpoint:
//
//   - prompt: TracSum's two-shot prompting baseline (section 6.1, Table 15): one positive and one
//     negative demonstration, the abstract as numbered sentences, an answer "Summary: ..." and
//     "Citations: [...]" (or "Unknown." and "Null."). One request per (abstract, aspect).
//   - intrinsic: PCoA's intrinsic attribution (section 2.2, Table 6): cited sentences,
//     contributory phrases and summary in one answer. One request.
//   - prior: PCoA's prior attribution (Tables 8 and 9): sentences and phrases first, then the
//     summary from them only. Two requests (one when no sentence is found).
//   - posthoc: PCoA's post-hoc attribution (Tables 10 and 11): the summary first, then the
//     sentences and phrases it rests on. Two requests (one when the summary is "Unknown.").
//
// and the prompted components of Track-then-Sum: Track (the sentences about an aspect, one
// request) and Summarize (TracSum Tables 16 and 17, one request per aspect with tracked sentences).
//
// Answers are parsed leniently (parse.go); what could not be read is counted per problem in
// Report and marked on the output, never fatal. A refusal is asked again and, if it persists,
// read as "Unknown."; an endpoint error (unreachable, HTTP status after retries) is returned.
//
// # Example
//
//	c, _ := llm.New(cfg.Eval.LLM.ClientOptions(""))
//	r := llmmethods.New(llmmethods.Config{Client: c, Temperature: 1, Seed: 3407})
//	out, err := r.Predict(ctx, llmmethods.Intrinsic, llmmethods.Document{PMID: "1", Sentences: doc}, aspect)
package llmmethods

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/llm"
)

// Method names an end-to-end LLM method.
type Method string

// The methods of --method.
const (
	Prompt    Method = "prompt"
	Intrinsic Method = "intrinsic"
	Prior     Method = "prior"
	Posthoc   Method = "posthoc"
)

// Methods lists the accepted method names.
var Methods = []Method{Prompt, Intrinsic, Prior, Posthoc}

// ParseMethod checks a method name.
func ParseMethod(s string) (Method, error) {
	if m := Method(s); slices.Contains(Methods, m) {
		return m, nil
	}
	return "", fmt.Errorf("unknown method %q (want one of %v)", s, Methods)
}

// Phrases reports whether the method writes contributory phrases (the PCoA strategies do).
func (m Method) Phrases() bool { return m != Prompt }

// Config configures a Runner.
type Config struct {
	// Client sends the requests (it caches, retries and bounds the concurrency).
	Client *llm.Client
	// Temperature is sent with every request (TracSum: 1.0).
	Temperature float64
	// MaxTokens bounds each answer (0: the endpoint's default).
	MaxTokens int
	// Seed is sent with every request, for endpoints that support reproducible sampling.
	Seed int64
	// Demos is the demonstration pool of the prompt method (required by it only).
	Demos *Demos
	// PaperPrompt renders the prompt method's prompt as TracSum's Table 15 prints it
	// (infer.llm.prompt_style paper) instead of tracksum's wording.
	PaperPrompt bool
}

// Document is one abstract.
type Document struct {
	PMID      string
	Sentences []string
}

// Output is the prediction of one (abstract, aspect).
type Output struct {
	Summary string
	Indexes []int
	// Phrases is nil for the prompt method, never nil for the PCoA strategies.
	Phrases []string
	// Problems lists what could not be read in the answers (see the Problem* constants).
	Problems []string
}

// Report sums up the answers of a run.
type Report struct {
	// Answers is the number of answers parsed (requests answered, from the cache or not).
	Answers int `json:"answers"`
	// Malformed is the number of answers with at least one problem.
	Malformed int `json:"malformed"`
	// Problems counts the answers per problem.
	Problems map[string]int `json:"problems"`
	// Demos lists, per aspect, the PMIDs of the demonstrations used (prompt method).
	Demos map[string][]string `json:"demos,omitempty"`
}

// String renders the report for the summary line.
func (r Report) String() string {
	s := fmt.Sprintf("%d answers, %d malformed", r.Answers, r.Malformed)
	if len(r.Problems) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.Problems)) {
			parts = append(parts, fmt.Sprintf("%d %s", r.Problems[k], k))
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// Runner runs the methods; it is safe for concurrent use.
type Runner struct {
	cfg Config

	mu       sync.Mutex
	answers  int
	bad      int
	problems map[string]int
	demos    map[string][]string
}

// New returns a runner.
func New(cfg Config) *Runner {
	return &Runner{cfg: cfg, problems: map[string]int{}, demos: map[string][]string{}}
}

// Report returns what the runner's answers looked like so far.
func (r *Runner) Report() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := Report{Answers: r.answers, Malformed: r.bad, Problems: maps.Clone(r.problems)}
	if len(r.demos) > 0 {
		rep.Demos = map[string][]string{}
		for k, v := range r.demos {
			rep.Demos[k] = slices.Sorted(slices.Values(v))
		}
	}
	return rep
}

func (r *Runner) record(a Answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers++
	if len(a.Problems) > 0 {
		r.bad++
	}
	for _, p := range a.Problems {
		r.problems[p]++
	}
}

// ask sends one prompt. A refusal or an empty answer that persists after the client's retries is
// reported as refused (ok false); any other failure is an error.
func (r *Runner) ask(ctx context.Context, prompt string) (answer string, ok bool, err error) {
	t := r.cfg.Temperature
	seed := r.cfg.Seed
	answer, err = r.cfg.Client.Chat(ctx, llm.Request{
		Messages:    []llm.Message{{Role: "user", Content: prompt}},
		Temperature: &t, MaxTokens: r.cfg.MaxTokens, Seed: &seed,
	}, func(a string) bool { return strings.TrimSpace(a) != "" && !llm.IsRefusal(a) })
	if errors.Is(err, llm.ErrUnusable) {
		return answer, false, nil
	}
	return answer, err == nil, err
}

// refused is the answer read from a persistent refusal.
func refused(phrases bool) Answer {
	a := Answer{Problems: []string{ProblemRefused}}
	if phrases {
		a.Phrases = []string{}
	}
	a.negative()
	return a
}

// Predict runs method on one abstract and aspect.
func (r *Runner) Predict(ctx context.Context, m Method, doc Document, asp dataset.Aspect) (Output, error) {
	n := len(doc.Sentences)
	var final Answer
	var problems []string
	// step sends one prompt and parses its answer with parse; the answer's problems are recorded.
	step := func(prompt string, parse func(string) Answer) (Answer, error) {
		ans, ok, err := r.ask(ctx, prompt)
		if err != nil {
			return Answer{}, fmt.Errorf("abstract %s, aspect %s: %w", doc.PMID, asp.Code, err)
		}
		a := refused(m.Phrases())
		if ok {
			a = parse(ans)
		}
		r.record(a)
		problems = append(problems, a.Problems...)
		return a, nil
	}
	base := promptData{Aspect: asp, Document: doc.Sentences}
	switch m {
	case Prompt:
		if r.cfg.Demos == nil {
			return Output{}, errors.New("llmmethods: the prompt method needs a demonstration pool")
		}
		d := base
		d.Demos = r.cfg.Demos.Pick(asp.Code, doc.PMID)
		r.noteDemos(asp.Code, d.Demos)
		tmpl := promptTmpl
		if r.cfg.PaperPrompt {
			tmpl = paperPromptTmpl
		}
		a, err := step(render(tmpl, d), func(s string) Answer { return ParseSummaryCitations(s, n) })
		if err != nil {
			return Output{}, err
		}
		final = a
	case Intrinsic:
		a, err := step(render(intrinsicTmpl, base), func(s string) Answer { return ParseEvidence(s, n, true) })
		if err != nil {
			return Output{}, err
		}
		final = a
	case Prior:
		ev, err := step(render(retrieveTmpl, base), func(s string) Answer { return ParseEvidence(s, n, false) })
		if err != nil {
			return Output{}, err
		}
		final = Answer{Indexes: ev.Indexes, Phrases: ev.Phrases}
		if len(ev.Indexes) == 0 {
			final.negative()
			break
		}
		d := base
		for _, i := range ev.Indexes {
			d.Sentences = append(d.Sentences, doc.Sentences[i])
		}
		d.Phrases = ev.Phrases
		s, err := step(render(fromEvidenceTmpl, d), ParseSummary)
		if err != nil {
			return Output{}, err
		}
		final.Summary = s.Summary
		if isUnknown(s.Summary) {
			final.negative()
		}
	case Posthoc:
		s, err := step(render(summarizeTmpl, base), ParseSummary)
		if err != nil {
			return Output{}, err
		}
		final = Answer{Summary: s.Summary, Indexes: []int{}, Phrases: []string{}}
		if isUnknown(s.Summary) {
			final.negative()
			break
		}
		d := base
		d.Summary = s.Summary
		ev, err := step(render(attributeTmpl, d), func(s string) Answer { return ParseEvidence(s, n, false) })
		if err != nil {
			return Output{}, err
		}
		final.Indexes, final.Phrases = ev.Indexes, ev.Phrases
	default:
		return Output{}, fmt.Errorf("llmmethods: unknown method %q", m)
	}
	out := Output{Summary: final.Summary, Indexes: final.Indexes, Phrases: final.Phrases}
	for _, p := range problems {
		if !slices.Contains(out.Problems, p) {
			out.Problems = append(out.Problems, p)
		}
	}
	return out, nil
}

func (r *Runner) noteDemos(aspect string, demos []dataset.Instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range demos {
		if !slices.Contains(r.demos[aspect], d.PMID) {
			r.demos[aspect] = append(r.demos[aspect], d.PMID)
		}
	}
}

// Track returns the indices of the sentences of doc about asp (the prompted tracker of
// Track-then-Sum). A refusal or an unreadable answer tracks nothing.
func (r *Runner) Track(ctx context.Context, doc Document, asp dataset.Aspect) ([]int, error) {
	ans, ok, err := r.ask(ctx, render(trackTmpl, promptData{Aspect: asp, Document: doc.Sentences}))
	if err != nil {
		if doc.PMID == "" {
			return nil, fmt.Errorf("aspect %s: %w", asp.Code, err)
		}
		return nil, fmt.Errorf("abstract %s, aspect %s: %w", doc.PMID, asp.Code, err)
	}
	a := refused(false)
	if ok {
		a = ParseEvidence(ans, len(doc.Sentences), false)
		// The tracker prompt asks for indices only.
		a.Problems = slices.DeleteFunc(a.Problems, func(p string) bool { return p == ProblemNoPhrases })
	}
	r.record(a)
	return a.Indexes, nil
}

// Summarize writes the summary of the tracked sentences cited for asp (the prompted summarizer of
// Track-then-Sum); full, when not nil, is the whole abstract given as context (TTS (+) f). A
// refusal or an unreadable answer gives "Unknown.".
func (r *Runner) Summarize(ctx context.Context, asp dataset.Aspect, cited, full []string) (string, error) {
	ans, ok, err := r.ask(ctx, render(tracsumSummarizerTmpl, promptData{Aspect: asp, Sentences: cited, Document: full}))
	if err != nil {
		return "", fmt.Errorf("aspect %s: %w", asp.Code, err)
	}
	a := refused(false)
	if ok {
		a = ParseSummary(ans)
	}
	r.record(a)
	return a.Summary, nil
}

// RequestsPerInstance documents what each method costs, in requests per (abstract, aspect), for
// reports: the most and the least (the least when the first step finds nothing).
func RequestsPerInstance(m Method) (most, least int) {
	switch m {
	case Prior, Posthoc:
		return 2, 1
	}
	return 1, 1
}
