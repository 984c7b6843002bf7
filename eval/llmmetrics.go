package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/facet"
	"github.com/tracksum/tracksum/eval/qaeval"
	"github.com/tracksum/tracksum/eval/report"
	"github.com/tracksum/tracksum/eval/stats"
	"github.com/tracksum/tracksum/llm"
)

// LLMResult holds the optional LLM metrics of one instance (eval.metrics).
type LLMResult struct {
	// FM is ScholarSum's facet-aware metric (package eval/facet); nil when not asked. Its JSON
	// key is not "fm", which instances.jsonl and human files use for the score itself.
	FM *facet.Assessment `json:"fm_detail,omitempty"`
	// QA is LongSumEval's QA evaluation (package eval/qaeval); nil when not asked.
	QA *qaeval.Assessment `json:"qa_detail,omitempty"`
}

// LLMMetricNames are the per-instance values the LLM metrics add to instances.jsonl's "scores"
// (and that `tracksum-eval agreement` correlates): the FM overall score, each facet's normalised
// grade (facet.FacetScore.Normalized), and the QA coverage and consistency.
var LLMMetricNames = []string{"fm", "fm_background", "fm_method", "fm_result", "fm_conclusion", "qa_coverage", "qa_consistency"}

// Scores returns the instance's defined LLM metric values by name (undefined ones are absent).
func (r *LLMResult) Scores() map[string]float64 {
	out := map[string]float64{}
	if r.FM != nil && r.FM.Defined {
		out["fm"] = r.FM.Overall
		for _, f := range r.FM.Facets {
			if f.Score > 0 {
				out["fm_"+f.Facet] = f.Normalized()
			}
		}
	}
	if r.QA != nil {
		if r.QA.Coverage != nil {
			out["qa_coverage"] = *r.QA.Coverage
		}
		if r.QA.Consistency != nil {
			out["qa_consistency"] = *r.QA.Consistency
		}
	}
	return out
}

// malformed counts the instance's malformed answers.
func (r *LLMResult) malformed() int {
	n := 0
	if r.FM != nil {
		n += len(r.FM.Malformed)
	}
	if r.QA != nil {
		n += len(r.QA.Malformed)
	}
	return n
}

// NewLLMClient builds the client of the eval.llm endpoint (key from the environment variable
// eval.llm.api_key_env).
func NewLLMClient(cfg config.Eval) (*llm.Client, error) {
	return llm.New(cfg.LLM.ClientOptions(""))
}

// FacetOptions converts eval.fm.* to the metric's options.
func FacetOptions(c config.EvalFM) facet.Options {
	return facet.Options{
		Weights:     [facet.NumFacets]float64{c.WeightBackground, c.WeightMethod, c.WeightResult, c.WeightConclusion},
		Temperature: c.Temperature, MaxTokens: c.MaxTokens,
	}
}

// QAOptions converts eval.qa.* to the metric's options.
func QAOptions(c config.EvalQA) qaeval.Options {
	return qaeval.Options{
		SourceQuestions: c.SourceQuestions, SummaryQuestions: c.SummaryQuestions, Similarity: c.Similarity,
		Threshold: c.Threshold, CoverageTarget: c.CoverageTarget, ConsistencyTarget: c.ConsistencyTarget,
		EarlyStop: c.EarlyStop, Temperature: c.Temperature, MaxTokens: c.MaxTokens,
	}
}

// AspectFocus describes an aspect code for the QA prompts ("Intervention: treatment method given
// to the participants"), looked up in every aspect set; the code itself when unknown.
func AspectFocus(code string) string {
	for _, set := range dataset.AspectSets() {
		if a, ok := dataset.LookupAspect(set, code); ok {
			return a.Name + ": " + a.Description
		}
	}
	return code
}

// LLMMetrics computes the metrics named in cfg.Metrics for every pair through client, with
// cfg.LLM.Concurrency instances at once. Results are in the order of pairs. progress, when not
// nil, is called after each instance.
func LLMMetrics(ctx context.Context, client *llm.Client, pairs []Pair, cfg config.Eval, progress func()) ([]LLMResult, error) {
	var fm *facet.Metric
	var qa *qaeval.Metric
	for _, m := range cfg.Metrics {
		switch m {
		case "fm":
			fm = facet.New(client, FacetOptions(cfg.FM))
		case "qa":
			qa = qaeval.New(client, QAOptions(cfg.QA))
		}
	}
	return scorePairs(ctx, pairs, client.Concurrency(), progress, func(ctx context.Context, p *Pair) (LLMResult, error) {
		return scoreLLM(ctx, fm, qa, p, cfg.QA.Source)
	})
}

func scoreLLM(ctx context.Context, fm *facet.Metric, qa *qaeval.Metric, p *Pair, source string) (LLMResult, error) {
	var r LLMResult
	if fm != nil {
		a, err := fm.Score(ctx, p.Ref.Summary, p.Pred.Summary)
		if err != nil {
			return r, fmt.Errorf("fm: %w", err)
		}
		r.FM = &a
	}
	if qa != nil {
		doc := strings.Join(p.Ref.Document, " ")
		src := doc
		if source == "cited" {
			// The aspect's evidence: the reference's cited sentences (none for a negative
			// reference, so coverage is undefined there).
			var cited []string
			if !p.Ref.IsNegative() {
				for _, i := range p.Ref.Indexes {
					cited = append(cited, p.Ref.Document[i])
				}
			}
			src = strings.Join(cited, " ")
		}
		a, err := qa.Assess(ctx, AspectFocus(p.Ref.Aspect), src, doc, p.Pred.Summary)
		if err != nil {
			return r, fmt.Errorf("qa: %w", err)
		}
		r.QA = &a
	}
	return r, nil
}

// LLMMetricSummary aggregates one LLM metric over the instances where it is defined.
type LLMMetricSummary struct {
	Name string `json:"name"`
	// N is the number of instances where the metric is defined.
	N    int        `json:"n"`
	Mean float64    `json:"mean"`
	CI   [2]float64 `json:"ci"`
}

// LLMReport is llm_metrics.json: the LLM metrics' means (overall and per aspect), the malformed
// answers, and what the client did.
type LLMReport struct {
	Endpoint string                        `json:"endpoint"`
	Model    string                        `json:"model"`
	Metrics  []string                      `json:"metrics"`
	Overall  []LLMMetricSummary            `json:"overall"`
	ByAspect map[string][]LLMMetricSummary `json:"by_aspect"`
	// Instances is the number of instances; Malformed the malformed answers over all of them.
	Instances int `json:"instances"`
	Malformed int `json:"malformed_answers"`
	// Answers counts each metric's answers and malformed ones; a metric with over half of its
	// answers malformed is NotMeaningful and its means and intervals are null.
	Answers []LLMAnswers `json:"answers"`
	// Client counts calls, requests, cache hits, retries and failures.
	Client llm.Stats `json:"client"`
}

// LLMAnswers is how many answers one LLM metric got from the endpoint and how many of them could
// not be parsed.
type LLMAnswers struct {
	Metric    string `json:"metric"`
	Answers   int    `json:"answers"`
	Malformed int    `json:"malformed"`
	// NotMeaningful says why the metric has no score ("" when it has one).
	NotMeaningful string `json:"not_meaningful,omitempty"`
}

// ErrMalformedAnswers marks a run whose LLM metric got malformed answers for over half of its
// prompts (eval.llm.allow_malformed lets it finish).
var ErrMalformedAnswers = errors.New("LLM metric not meaningful")

// countAnswers returns each metric's answers and malformed answers over res, marking NotMeaningful
// a metric with over half of them malformed: its score would come from the few parsed answers and
// from the instances scored without asking (a negative reference is 1 or 0 by rule), a number
// that says nothing of the model's judgement.
func countAnswers(res []LLMResult, metrics []string, model string) []LLMAnswers {
	var out []LLMAnswers
	for _, name := range []string{"fm", "qa"} {
		if !slices.Contains(metrics, name) {
			continue
		}
		c := LLMAnswers{Metric: name}
		for _, r := range res {
			switch {
			case name == "fm" && r.FM != nil:
				c.Answers, c.Malformed = c.Answers+r.FM.Answers, c.Malformed+len(r.FM.Malformed)
			case name == "qa" && r.QA != nil:
				c.Answers, c.Malformed = c.Answers+r.QA.Answers, c.Malformed+len(r.QA.Malformed)
			}
		}
		if 2*c.Malformed > c.Answers {
			c.NotMeaningful = fmt.Sprintf("%d of its %d answers from model %q were malformed (not in the prompts' format)", c.Malformed, c.Answers, model)
		}
		out = append(out, c)
	}
	return out
}

// NotMeaningful returns an error (ErrMalformedAnswers) naming each metric without a score, nil
// when every metric has one.
func (rep *LLMReport) NotMeaningful() error {
	var why []string
	for _, a := range rep.Answers {
		if a.NotMeaningful != "" {
			why = append(why, a.Metric+": "+a.NotMeaningful)
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w, no score: %s; a model that does not follow the metric's prompts gives no meaningful score "+
		"(eval.llm.allow_malformed=true, --allow-malformed, writes the outputs anyway)", ErrMalformedAnswers, strings.Join(why, "; "))
}

// BuildLLMReport aggregates LLM results; the intervals are stats.BootstrapCI with b's settings.
// A metric with over half of its answers malformed (LLMAnswers.NotMeaningful) gets no mean and
// no interval.
func BuildLLMReport(pairs []Pair, res []LLMResult, metrics []string, client *llm.Client, b BootstrapOptions) *LLMReport {
	rep := &LLMReport{Endpoint: client.Endpoint(), Model: client.Model(), Metrics: metrics, ByAspect: map[string][]LLMMetricSummary{},
		Instances: len(res), Client: client.Stats(), Answers: countAnswers(res, metrics, client.Model())}
	refused := map[string]bool{}
	for _, a := range rep.Answers {
		refused[a.Metric] = a.NotMeaningful != ""
	}
	summarize := func(idx []int) []LLMMetricSummary {
		var out []LLMMetricSummary
		for _, name := range LLMMetricNames {
			if !slices.Contains(metrics, strings.SplitN(name, "_", 2)[0]) {
				continue
			}
			var vals []float64
			for _, i := range idx {
				if v, ok := res[i].Scores()[name]; ok {
					vals = append(vals, v)
				}
			}
			s := LLMMetricSummary{Name: name, N: len(vals), Mean: math.NaN(), CI: [2]float64{math.NaN(), math.NaN()}}
			if len(vals) > 0 && !refused[strings.SplitN(name, "_", 2)[0]] {
				s.Mean = stats.Mean(vals)
				s.CI[0], s.CI[1] = stats.BootstrapCI(vals, b.Resamples, b.Seed, b.Level)
			}
			out = append(out, s)
		}
		return out
	}
	all := make([]int, len(res))
	byAspect := map[string][]int{}
	for i := range res {
		all[i] = i
		rep.Malformed += res[i].malformed()
		byAspect[pairs[i].Ref.Aspect] = append(byAspect[pairs[i].Ref.Aspect], i)
	}
	rep.Overall = summarize(all)
	for a, idx := range byAspect {
		rep.ByAspect[a] = summarize(idx)
	}
	return rep
}

// MarshalJSON writes undefined means and intervals as null.
func (s LLMMetricSummary) MarshalJSON() ([]byte, error) {
	f := func(v float64) any {
		if math.IsNaN(v) {
			return nil
		}
		return v
	}
	return json.Marshal(struct {
		Name string `json:"name"`
		N    int    `json:"n"`
		Mean any    `json:"mean"`
		CI   [2]any `json:"ci"`
	}{s.Name, s.N, f(s.Mean), [2]any{f(s.CI[0]), f(s.CI[1])}})
}

// WriteLLMTables prints the LLM metrics: means in percent with bootstrap intervals over the
// instances where each is defined, then the client's counters.
func WriteLLMTables(w io.Writer, rep *LLMReport, level float64) error {
	fmt.Fprintf(w, "\nLLM metrics (%%, mean over the instances where defined; %s, model %s)\n", rep.Endpoint, rep.Model)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "metric\tn\tmean\t%g%% CI\t\n", 100*level)
	for _, s := range rep.Overall {
		ci := "-"
		if !math.IsNaN(s.CI[0]) {
			ci = "[" + pct(s.CI[0]) + ", " + pct(s.CI[1]) + "]"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t\n", s.Name, s.N, pct(s.Mean), ci)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	answers := 0
	for _, a := range rep.Answers {
		answers += a.Answers
	}
	if _, err := fmt.Fprintf(w, "%d instances, %d of %d answers malformed; client: %s\n", rep.Instances, rep.Malformed, answers, rep.Client); err != nil {
		return err
	}
	for _, a := range rep.Answers {
		if a.NotMeaningful != "" {
			if _, err := fmt.Fprintf(w, "%s: not meaningful, no score: %s\n", a.Metric, a.NotMeaningful); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteInstances writes instances.jsonl (encoding/json sorts map keys, so lines are deterministic):
// one instance line per result. With LLM metrics (llmRes, in the order of results; nil without),
// its "scores" are extended with the defined LLM metric values, plus "fm_detail" and "qa_detail"
// objects holding the segments, grades, questions, answers and feedback.
func WriteInstances(w io.Writer, results []Result, llmRes []LLMResult) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range results {
		line := results[i].Line()
		var extra LLMResult
		if i < len(llmRes) {
			extra = llmRes[i]
			for k, v := range extra.Scores() {
				line.Scores[k] = v
			}
		}
		if err := enc.Encode(struct {
			InstanceLine
			LLMResult
		}{line, extra}); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// addLLMCard adds an instance's LLM metrics to its report card: the defined values as scores
// (so that the page's filter offers them) and the segments, grades, questions and answers as
// detail tables.
func addLLMCard(card *report.Card, r *LLMResult) {
	scores := r.Scores()
	for _, name := range LLMMetricNames {
		if v, ok := scores[name]; ok {
			card.Scores = append(card.Scores, report.Score{Name: name, Value: v})
		}
	}
	if fm := r.FM; fm != nil {
		d := report.Detail{Title: "Facet-aware metric (FM)", Head: []string{"facet", "reference segment", "predicted segment", "grade"}}
		for _, f := range fm.Facets {
			grade := fmt.Sprintf("%d/%d", f.Score, f.Scale)
			switch {
			case f.Omitted:
				grade = "omitted"
			case f.Malformed:
				grade = "malformed: " + clipText(f.Answer, 60)
			}
			d.Rows = append(d.Rows, []string{f.Facet, f.Reference, f.Candidate, grade})
		}
		var notes []string
		if fm.Defined {
			notes = append(notes, fmt.Sprintf("FM %.3f", fm.Overall))
		}
		if fm.Skipped != "" {
			notes = append(notes, "not scored: "+fm.Skipped)
		}
		for _, step := range fm.Malformed {
			if a, ok := fm.Unparsed[step]; ok {
				notes = append(notes, fmt.Sprintf("malformed %s: %q", step, clipText(a, 120)))
			} else {
				notes = append(notes, "malformed "+step)
			}
		}
		d.Note = strings.Join(notes, "; ")
		card.Details = append(card.Details, d)
	}
	if qa := r.QA; qa != nil {
		cov := report.Detail{Title: "QA coverage: source questions answered by the prediction", Head: []string{"question", "source answer", "prediction's answer"}}
		for _, c := range qa.CoverageQA {
			cov.Rows = append(cov.Rows, []string{c.Question, c.SourceAnswer, c.SummaryAnswer})
		}
		cons := report.Detail{Title: "QA consistency: the prediction's facts checked against the abstract", Head: []string{"question", "prediction says", "abstract says", "similarity"}}
		for _, c := range qa.Facts {
			mark := fmt.Sprintf("%.2f", c.Similarity)
			if !c.Consistent {
				mark += " (inconsistent)"
			}
			cons.Rows = append(cons.Rows, []string{c.Question, c.SummaryAnswer, c.SourceAnswer, mark})
		}
		var notes []string
		for _, step := range qa.Malformed {
			notes = append(notes, fmt.Sprintf("malformed %s: %q", step, clipText(qa.Unparsed[step], 120)))
		}
		cons.Note = strings.Join(notes, "; ")
		card.Details = append(card.Details, cov, cons)
	}
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}
