// Package qaeval is LongSumEval's QA-based evaluation and feedback-driven refinement
// ("LongSumEval", sections III-C and III-D), over any OpenAI-compatible endpoint:
//
//   - coverage: questions are generated from the source and answered from the summary; the score
//     is the share answered (not "UNANSWERABLE"), and the unanswered questions are the coverage
//     feedback;
//   - consistency: question-answer pairs are generated from the summary and the questions are
//     answered from the document; with s_i the similarity of the two answers (ROUGE-1 F1 or token
//     Jaccard), the score is (1/|Qs|) sum 1(s_i > tau) s_i, and the pairs with s_i <= tau are the
//     consistency feedback (question, the summary's claim, the document's correction);
//   - refinement (Refine): the feedback becomes revision instructions, the summary is revised and
//     assessed again, for at most N rounds, stopping when the targets are met (or, with
//     Options.EarlyStop, when a revision does not raise the scores); every round is kept.
//
// Aspect-based summaries (TracSum) adapt the paper's long-document setting: coverage questions
// are drawn from the whole abstract as the paper draws them from the source document
// (eval.qa.source: document, the default) or from the aspect's evidence, the cited sentences
// (cited, our option), consistency is always checked against the whole abstract, and the
// instructions name the aspect. Malformed answers are counted, never fatal, and cached like any
// other answer so that reruns are reproducible. The prompts are ours (the paper's wording is not
// copied) and golden-tested.
//
// # Example
//
//	m := qaeval.New(client, qaeval.DefaultOptions())
//	a, err := m.Assess(ctx, "Intervention: treatment given", evidence, abstract, summary)
//	fmt.Println(a.Coverage, a.Consistency, a.Feedback.Unanswered)
package qaeval

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/llm"
	"github.com/tracksum/tracksum/textmetrics/rouge"
)

// Chatter is the part of *llm.Client the metric uses.
type Chatter interface {
	Chat(ctx context.Context, req llm.Request, usable func(string) bool) (string, error)
}

// Options configures the metric (config eval.qa.*).
type Options struct {
	// SourceQuestions and SummaryQuestions are the numbers of questions asked for.
	SourceQuestions, SummaryQuestions int
	// Similarity is "rouge1" or "jaccard".
	Similarity string
	// Threshold is tau.
	Threshold float64
	// CoverageTarget and ConsistencyTarget are T_cov and T_cons of the refinement.
	CoverageTarget, ConsistencyTarget float64
	// EarlyStop ends a refinement at the first revision that does not raise the scores; the
	// paper's Algorithm 2 (the default, false) goes on revising until the targets are met or the
	// rounds are spent.
	EarlyStop bool
	// Temperature is sent with every request; MaxTokens bounds each answer (0: endpoint default).
	Temperature float64
	MaxTokens   int
}

// DefaultOptions returns the paper's settings (tau 0.6, ROUGE-1, T_cov 0.60, T_cons 0.73) with 8
// source and 6 summary questions.
func DefaultOptions() Options {
	return Options{SourceQuestions: 8, SummaryQuestions: 6, Similarity: "rouge1", Threshold: 0.6,
		CoverageTarget: 0.6, ConsistencyTarget: 0.73, Temperature: 0, MaxTokens: 1024}
}

// Unanswerable is the answer that marks a question the text cannot answer.
const Unanswerable = "UNANSWERABLE"

// QA is a generated question with its answer in the text it was generated from.
type QA struct {
	Rank     int    `json:"rank"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// CoverageItem is a source question and its answer from the summary.
type CoverageItem struct {
	Question string `json:"question"`
	// SourceAnswer is the answer the question was generated with.
	SourceAnswer string `json:"source_answer"`
	// SummaryAnswer is the answer found in the summary (Unanswerable when none).
	SummaryAnswer string `json:"summary_answer"`
	Answered      bool   `json:"answered"`
}

// ConsistencyItem is a summary fact checked against the document.
type ConsistencyItem struct {
	Question      string  `json:"question"`
	SummaryAnswer string  `json:"summary_answer"`
	SourceAnswer  string  `json:"source_answer"`
	Similarity    float64 `json:"similarity"`
	Consistent    bool    `json:"consistent"`
}

// Correction is an inconsistent claim with the document's answer.
type Correction struct {
	Question string `json:"question"`
	Claimed  string `json:"claimed"`
	Correct  string `json:"correct"`
}

// Feedback is the structured feedback of an assessment.
type Feedback struct {
	// Unanswered are the source questions the summary does not answer (coverage gaps).
	Unanswered []string `json:"unanswered"`
	// Inconsistent are the summary's claims the document disagrees with.
	Inconsistent []Correction `json:"inconsistent"`
}

// Assessment is the QA evaluation of one summary.
type Assessment struct {
	// Coverage and Consistency are in [0, 1]; nil when undefined (no source, negative summary
	// for consistency, or a malformed answer).
	Coverage    *float64          `json:"coverage"`
	Consistency *float64          `json:"consistency"`
	CoverageQA  []CoverageItem    `json:"coverage_items"`
	Facts       []ConsistencyItem `json:"consistency_items"`
	Feedback    Feedback          `json:"feedback"`
	// Answers is the number of answers the endpoint gave, of which Malformed lists the ones that
	// could not be parsed, by step.
	Answers   int      `json:"answers"`
	Malformed []string `json:"malformed,omitempty"`
	// Unparsed holds the start of each malformed answer by step, for inspection.
	Unparsed map[string]string `json:"unparsed,omitempty"`
}

// unparsed records a malformed answer of step.
func (a *Assessment) unparsed(step, answer string) {
	a.Malformed = append(a.Malformed, step)
	if a.Unparsed == nil {
		a.Unparsed = map[string]string{}
	}
	r := []rune(answer)
	if len(r) > 300 {
		answer = string(r[:300]) + "..."
	}
	a.Unparsed[step] = answer
}

// Metric computes the QA scores with an LLM.
type Metric struct {
	client Chatter
	opts   Options
	rouge  *rouge.Scorer
}

// New returns the metric over client.
func New(client Chatter, o Options) *Metric {
	return &Metric{client: client, opts: o, rouge: rouge.New(rouge.Options{Stem: true})}
}

func ptr(v float64) *float64 { return &v }

// Assess evaluates summary. focus names what the summary is about (e.g. "Intervention: treatment
// method given to the participants"; empty: the whole study); source is the text coverage
// questions come from (empty: coverage undefined), document the text consistency is checked
// against. An error is returned only when the endpoint fails.
func (m *Metric) Assess(ctx context.Context, focus, source, document, summary string) (Assessment, error) {
	a := Assessment{CoverageQA: []CoverageItem{}, Facts: []ConsistencyItem{}, Feedback: Feedback{Unanswered: []string{}, Inconsistent: []Correction{}}}
	neg := dataset.IsUnknownSummary(summary)
	if strings.TrimSpace(source) != "" {
		answer, err := m.ask(ctx, GeneratePrompt(focus, source, m.opts.SourceQuestions, "source"))
		if err != nil {
			return a, err
		}
		a.Answers++
		qs := ParseQA(answer)
		switch {
		case len(qs) == 0:
			a.unparsed("source questions", answer)
		case neg:
			// Nothing can be answered from a negative summary: no request needed.
			for _, q := range qs {
				a.CoverageQA = append(a.CoverageQA, CoverageItem{Question: q.Question, SourceAnswer: q.Answer, SummaryAnswer: Unanswerable})
				a.Feedback.Unanswered = append(a.Feedback.Unanswered, q.Question)
			}
			a.Coverage = ptr(0)
		default:
			answer, err := m.ask(ctx, AnswerPrompt("summary", summary, questions(qs)))
			if err != nil {
				return a, err
			}
			a.Answers++
			ans, ok := ParseAnswers(answer, len(qs))
			if !ok {
				a.unparsed("answers from the summary", answer)
				break
			}
			n := 0
			for i, q := range qs {
				item := CoverageItem{Question: q.Question, SourceAnswer: q.Answer, SummaryAnswer: ans[i], Answered: !isUnanswerable(ans[i])}
				if item.Answered {
					n++
				} else {
					a.Feedback.Unanswered = append(a.Feedback.Unanswered, q.Question)
				}
				a.CoverageQA = append(a.CoverageQA, item)
			}
			a.Coverage = ptr(float64(n) / float64(len(qs)))
		}
	}
	if neg {
		return a, nil
	}
	answer, err := m.ask(ctx, GeneratePrompt(focus, summary, m.opts.SummaryQuestions, "summary"))
	if err != nil {
		return a, err
	}
	a.Answers++
	facts := ParseQA(answer)
	if len(facts) == 0 {
		a.unparsed("summary questions", answer)
		return a, nil
	}
	answer, err = m.ask(ctx, AnswerPrompt("document", document, questions(facts)))
	if err != nil {
		return a, err
	}
	a.Answers++
	ans, ok := ParseAnswers(answer, len(facts))
	if !ok {
		a.unparsed("answers from the document", answer)
		return a, nil
	}
	var sum float64
	for i, f := range facts {
		sim := 0.0
		if !isUnanswerable(ans[i]) {
			sim = m.Similarity(f.Answer, ans[i])
		}
		item := ConsistencyItem{Question: f.Question, SummaryAnswer: f.Answer, SourceAnswer: ans[i], Similarity: sim, Consistent: sim > m.opts.Threshold}
		if item.Consistent {
			sum += sim
		} else {
			a.Feedback.Inconsistent = append(a.Feedback.Inconsistent, Correction{Question: f.Question, Claimed: f.Answer, Correct: ans[i]})
		}
		a.Facts = append(a.Facts, item)
	}
	a.Consistency = ptr(sum / float64(len(facts)))
	return a, nil
}

func questions(qs []QA) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Question
	}
	return out
}

// Similarity compares two answers with the configured measure.
func (m *Metric) Similarity(a, b string) float64 {
	if m.opts.Similarity == "jaccard" {
		return Jaccard(a, b)
	}
	return m.rouge.Score(a, b).R1.F
}

// Jaccard is the overlap of the two answers' stemmed token sets (|A∩B| / |A∪B|; 1 for two empty
// sets).
func Jaccard(a, b string) float64 {
	sa, sb := map[string]bool{}, map[string]bool{}
	for _, t := range rouge.Tokenize(a, true) {
		sa[t] = true
	}
	for _, t := range rouge.Tokenize(b, true) {
		sb[t] = true
	}
	if len(sa) == 0 && len(sb) == 0 {
		return 1
	}
	inter := 0
	for t := range sa {
		if sb[t] {
			inter++
		}
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

func isUnanswerable(a string) bool {
	a = strings.ToUpper(strings.Trim(strings.TrimSpace(a), `"'.*`))
	return a == "" || a == Unanswerable || a == "UNANSWERED" || a == "N/A" || a == "NONE" || a == "NOT MENTIONED"
}

func (m *Metric) request(prompt string) llm.Request {
	t := m.opts.Temperature
	return llm.Request{Messages: []llm.Message{{Role: "user", Content: prompt}}, Temperature: &t, MaxTokens: m.opts.MaxTokens}
}

// ask sends one prompt; a refusal that persists after the client's retries comes back as an
// answer (then found malformed), not as an error.
func (m *Metric) ask(ctx context.Context, prompt string) (string, error) {
	answer, err := m.client.Chat(ctx, m.request(prompt), nil)
	if errors.Is(err, llm.ErrUnusable) {
		return answer, nil
	}
	return answer, err
}

// GeneratePrompt asks for n ranked question-answer pairs about text (the paper's fact
// extraction, in our words); kind is "source" or "summary", focus the aspect ("" for none).
func GeneratePrompt(focus, text string, n int, kind string) string {
	var b strings.Builder
	b.WriteString("Instructions:\n")
	fmt.Fprintf(&b, "Write %d questions that test the key information of the %s text below, each with its answer "+
		"taken from the text, most important first. Mix question types (what, who, when, where, how, why) and "+
		"prefer central facts (populations, treatments, doses, durations, outcomes, numbers) over side details. "+
		"Each answer is a short phrase from the text.\n", n, kind)
	if focus != "" {
		fmt.Fprintf(&b, "Ask only about this aspect of the study: %s.\n", focus)
	}
	b.WriteString("Use exactly this format, with nothing else:\n" +
		"Question [1]: <question>\nAnswer: <answer>\nQuestion [2]: <question>\nAnswer: <answer>\n\n")
	b.WriteString("Text:\n" + strings.TrimSpace(text) + "\n\nQuestions:\n")
	return b.String()
}

// AnswerPrompt asks for the answers to questions using only text (a "summary" for coverage, the
// "document" for consistency).
func AnswerPrompt(kind, text string, qs []string) string {
	var b strings.Builder
	b.WriteString("Instructions:\n")
	fmt.Fprintf(&b, "Answer each question below using only what the %s states. Give a short, exact answer in the "+
		"%s's words. If the %s does not give the answer, write %s. Do not guess and do not add anything.\n"+
		"Answer every question, in order, in exactly this format:\n"+
		"Question: <question>\nAnswer: <answer or %s>\n\n", kind, kind, kind, Unanswerable, Unanswerable)
	fmt.Fprintf(&b, "%s%s:\n%s\n\nQuestions:\n", strings.ToUpper(kind[:1]), kind[1:], strings.TrimSpace(text))
	for i, q := range qs {
		fmt.Fprintf(&b, "%d. %s\n", i+1, q)
	}
	b.WriteString("\nAnswers:\n")
	return b.String()
}

var (
	questionLine = regexp.MustCompile(`(?i)^\s*[-*]*\s*\**\s*(?:(?:question|q)\s*\[?\s*(\d*)\s*\]?\s*\**\s*:|(\d+)[.)])\s*\**\s*(.*)$`)
	answerLine   = regexp.MustCompile(`(?i)^\s*[-*]*\s*\**\s*a(?:nswer)?\s*(?:\[?\s*\d+\s*\]?)?\s*\**\s*:\s*\**\s*(.*)$`)
)

// ParseQA reads "Question [r]: q" / "Answer: a" pairs (also "Q1:", "1." and bold markers). A
// question without an answer line is dropped; ranks default to the order of appearance.
func ParseQA(answer string) []QA {
	var out []QA
	var cur *QA
	for _, line := range strings.Split(answer, "\n") {
		if m := answerLine.FindStringSubmatch(line); m != nil && cur != nil {
			cur.Answer = strings.TrimSpace(strings.Trim(m[1], "*"))
			if cur.Question != "" && cur.Answer != "" {
				out = append(out, *cur)
			}
			cur = nil
			continue
		}
		if m := questionLine.FindStringSubmatch(line); m != nil && strings.TrimSpace(m[3]) != "" {
			rank := len(out) + 1
			if r, err := strconv.Atoi(m[1] + m[2]); err == nil && r > 0 {
				rank = r
			}
			cur = &QA{Rank: rank, Question: strings.TrimSpace(strings.Trim(m[3], "*"))}
		}
	}
	return out
}

// ParseAnswers reads the answers to n questions, in order ("Answer: a" lines, each optionally
// after its "Question:" line). ok is false unless exactly n answers are found.
func ParseAnswers(answer string, n int) ([]string, bool) {
	var out []string
	for _, line := range strings.Split(answer, "\n") {
		if m := answerLine.FindStringSubmatch(line); m != nil {
			out = append(out, strings.TrimSpace(strings.Trim(m[1], "*")))
		}
	}
	if len(out) != n {
		return nil, false
	}
	return out, true
}
