// Package facet is ScholarSum's facet-aware metric (FM, sections 3.2-3.3 of "facet-metric
// scholarsum"): an LLM extracts the Background, Method, Result and Conclusion segments of the
// reference and of the candidate summary, then compares each facet's segments on the paper's
// scales (1-3 for Background and Conclusion, 1-4 for Method and Result), and the overall score is
// the weighted sum of the facet scores (weights 0.1, 0.3, 0.3, 0.3 by default).
//
// Our reading of the parts the paper leaves open, all documented in docs/eval.md:
//   - a facet whose reference segment is empty is omitted, and the remaining weights are
//     renormalised (the paper: "we adjust our evaluation by omitting the non-conforming aspect");
//   - each facet grade g on a 1..s scale counts (g-1)/(s-1), so the lowest grade ("contradicted or
//     missing") is 0, the highest 1 and the overall score is in [0, 1] (the paper's Equation 1 is
//     not in its text; its tables report scores in [0, 1]);
//   - a facet present in the reference but empty in the candidate gets the lowest grade, 1,
//     without asking the LLM: the lowest grade of both scales covers "lacks relevant content in
//     this aspect"; so a negative candidate ("Unknown.") against a positive reference scores 0;
//   - a negative reference (TracSum's "Unknown.") is scored as the other metrics score negatives:
//     1 when the candidate is negative too, 0 when it is not (a false positive lowers FM), both
//     without a request;
//   - an answer that cannot be parsed is counted as malformed and leaves its facet (or, for an
//     extraction, the instance) unscored; it is never fatal. It is cached like any other answer,
//     so that a rerun reproduces the same scores without a request (with temperature 0 a retry
//     mostly gets the same answer back); only refusals (llm.IsRefusal) are asked again and never
//     cached. Delete the cache directory to ask again.
//
// The prompts are the paper's as printed (prompts are functional text: rewording changes the
// grades), zero-shot (the paper's few-shot variant did not help), and golden-tested; see
// ExtractPrompt and GradePrompt for what the paper leaves open.
//
// # Example
//
//	m := facet.New(client, facet.DefaultOptions())
//	res, err := m.Score(ctx, reference, candidate)
//	fmt.Println(res.Overall, res.Facets[1].Score)
package facet

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/llm"
)

// Facet is one of the four facets of a scientific abstract.
type Facet int

// The facets, in the paper's order (BMRC).
const (
	Background Facet = iota
	Method
	Result
	Conclusion
	NumFacets
)

var facetNames = [NumFacets]string{"background", "method", "result", "conclusion"}

// String returns the facet's lowercase name, its key in answers and outputs.
func (f Facet) String() string { return facetNames[f] }

// Scale returns the facet's highest grade: 3 for Background and Conclusion, 4 for Method and
// Result (the finer scale of the detailed facets).
func (f Facet) Scale() int {
	if f == Method || f == Result {
		return 4
	}
	return 3
}

// Chatter is the part of *llm.Client the metric uses.
type Chatter interface {
	Chat(ctx context.Context, req llm.Request, usable func(string) bool) (string, error)
}

// Options configures the metric.
type Options struct {
	// Weights of the facets in the overall score, by Facet.
	Weights [NumFacets]float64
	// Temperature is sent with every request.
	Temperature float64
	// MaxTokens bounds each answer (0: the endpoint's default).
	MaxTokens int
}

// DefaultOptions returns the paper's weights and deterministic decoding.
func DefaultOptions() Options {
	return Options{Weights: [NumFacets]float64{0.1, 0.3, 0.3, 0.3}, Temperature: 0, MaxTokens: 512}
}

// Metric computes FM with an LLM.
type Metric struct {
	client Chatter
	opts   Options
}

// New returns the metric over client.
func New(client Chatter, o Options) *Metric { return &Metric{client: client, opts: o} }

// FacetScore is one facet's comparison.
type FacetScore struct {
	Facet string `json:"facet"`
	// Reference and Candidate are the extracted segments ("" when the text has none).
	Reference string `json:"reference"`
	Candidate string `json:"candidate"`
	// Score is the grade in 1..Scale; 0 when the facet was not scored (Omitted or Malformed).
	Score int `json:"score"`
	Scale int `json:"scale"`
	// Omitted: the reference has no segment for this facet.
	Omitted bool `json:"omitted,omitempty"`
	// Malformed: the grading answer could not be parsed.
	Malformed bool `json:"malformed,omitempty"`
	// Answer is the LLM's grading answer ("" when none was asked).
	Answer string `json:"answer,omitempty"`
}

// Assessment is FM for one instance.
type Assessment struct {
	// Facets holds the four facets in order (empty when the instance could not be scored).
	Facets []FacetScore `json:"facets"`
	// Overall is the weighted, normalised score in [0, 1]; valid only when Defined.
	Overall float64 `json:"overall"`
	Defined bool    `json:"defined"`
	// Skipped says why the instance was not scored ("" when it was).
	Skipped string `json:"skipped,omitempty"`
	// Answers is the number of answers the endpoint gave (extractions and grades), of which
	// Malformed lists the ones that could not be parsed by step, e.g. "extract reference".
	Answers   int      `json:"answers"`
	Malformed []string `json:"malformed,omitempty"`
	// Unparsed holds the start of each malformed extraction answer by step, for inspection.
	Unparsed map[string]string `json:"unparsed,omitempty"`
}

// clip keeps the start of a malformed answer for the record.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}

// unparsed records a malformed answer of step.
func (a *Assessment) unparsed(step, answer string) {
	a.Malformed = append(a.Malformed, step)
	if a.Unparsed == nil {
		a.Unparsed = map[string]string{}
	}
	a.Unparsed[step] = clip(answer, 300)
}

// Segments are the extracted segments of one text, by Facet.
type Segments [NumFacets]string

// Normalized is the facet's grade on [0, 1]: (Score-1)/(Scale-1), the lowest grade 0.
func (fs FacetScore) Normalized() float64 {
	return float64(fs.Score-1) / float64(fs.Scale-1)
}

// Score computes FM of candidate against reference. Negative texts are TracSum's "Unknown."
// (or empty). An error is returned only when the endpoint fails (unreachable, HTTP error,
// cancelled); a malformed answer is recorded in the Assessment.
func (m *Metric) Score(ctx context.Context, reference, candidate string) (Assessment, error) {
	res := Assessment{Facets: []FacetScore{}}
	if dataset.IsUnknownSummary(reference) {
		// As every metric of eval scores negatives: agreeing on "nothing to say" is right, a
		// summary where the reference has none is wrong.
		res.Defined = true
		if dataset.IsUnknownSummary(candidate) {
			res.Overall = 1
		}
		return res, nil
	}
	ref, answer, ok, err := m.extract(ctx, reference)
	if err != nil {
		return res, err
	}
	res.Answers++
	if !ok {
		res.unparsed("extract reference", answer)
		res.Skipped = "reference facets could not be extracted"
		return res, nil
	}
	var cand Segments
	if !dataset.IsUnknownSummary(candidate) {
		cand, answer, ok, err = m.extract(ctx, candidate)
		if err != nil {
			return res, err
		}
		res.Answers++
		if !ok {
			res.unparsed("extract candidate", answer)
			res.Skipped = "candidate facets could not be extracted"
			return res, nil
		}
	}
	var num, den float64
	for f := range NumFacets {
		fs := FacetScore{Facet: f.String(), Reference: ref[f], Candidate: cand[f], Scale: f.Scale()}
		switch {
		case ref[f] == "":
			fs.Omitted = true
		case cand[f] == "":
			fs.Score = 1
		default:
			answer, err := ask(ctx, m.client, m.request(GradePrompt(f, ref[f], cand[f])))
			if err != nil {
				return res, err
			}
			res.Answers++
			fs.Answer = answer
			if g, ok := ParseGrade(answer, f.Scale()); ok {
				fs.Score = g
			} else {
				fs.Malformed = true
				res.Malformed = append(res.Malformed, "grade "+f.String())
			}
		}
		if fs.Score > 0 && m.opts.Weights[f] > 0 {
			num += m.opts.Weights[f] * fs.Normalized()
			den += m.opts.Weights[f]
		}
		res.Facets = append(res.Facets, fs)
	}
	if den == 0 {
		res.Skipped = "no facet of the reference could be scored"
		return res, nil
	}
	res.Overall, res.Defined = num/den, true
	return res, nil
}

func (m *Metric) request(prompt string) llm.Request {
	t := m.opts.Temperature
	return llm.Request{Messages: []llm.Message{{Role: "user", Content: prompt}}, Temperature: &t, MaxTokens: m.opts.MaxTokens}
}

// extract asks for the segments of text; ok is false when the answer is malformed.
func (m *Metric) extract(ctx context.Context, text string) (Segments, string, bool, error) {
	answer, err := ask(ctx, m.client, m.request(ExtractPrompt(text)))
	if err != nil {
		return Segments{}, "", false, err
	}
	s, ok := ParseSegments(answer)
	return s, answer, ok, nil
}

// ask sends req and returns the answer. A refusal that persists after the client's retries is
// returned as an answer (the parser then finds it malformed), not as an error.
func ask(ctx context.Context, c Chatter, req llm.Request) (string, error) {
	answer, err := c.Chat(ctx, req, nil)
	if errors.Is(err, llm.ErrUnusable) {
		return answer, nil
	}
	return answer, err
}

// ExtractPrompt asks for the four facet segments of text as a JSON object: the extraction prompt
// of the paper's section 3.3 as printed, followed by the text (the paper does not print how the
// input is attached).
func ExtractPrompt(text string) string {
	return "What is the background/method/result/conclusion of this work?\n" +
		"Extract the segment of the input as the answer.\n" +
		"Return the answer in JSON format, where the key is background/method/result/conclusion.\n" +
		"If any category is not represented in the input, its value should be left empty.\n\n" +
		"Input:\n" + strings.TrimSpace(text) + "\n"
}

// GradePrompt asks for the grade of candidate's segment (Input2) against reference's (Input1)
// for facet f, zero-shot. The paper prints the rubrics in section 3.2, which section 3.3 says
// guide the LLM, and its few-shot grading prompts; we take the rubrics of 3.2 as printed (their
// lowest grade covers "lacks relevant content", the rule an empty candidate facet is scored by),
// and the few-shot prompts' first line, answer instruction and input layout, without their
// examples: Background and Conclusion are graded "using a less strict criterion" on 1-3, Method
// and Result on 1-4. The prompt does not name the facet, as the paper's does not.
func GradePrompt(f Facet, reference, candidate string) string {
	var head, rubric string
	if f.Scale() == 3 {
		head = "Using a less strict criterion, assess the alignment (1-3) between the two inputs.\n"
		rubric = "- 3: Input2 is generally consistent with Input1.\n" +
			"- 2: Input1 is not mentioned in Input2.\n" +
			"- 1: Input2 contradicts Input1, or Input2 lacks relevant content in this aspect.\n"
	} else {
		head = "Assess the alignment (1-4) between the two inputs.\n"
		rubric = "- 4: Input2 generally includes Input1’s information, or omits minor details from Input1.\n" +
			"- 3: Input2 generally includes Input1’s information, but omits a part of the key information from Input1.\n" +
			"- 2: Input2 is not empty, but it does not mention any key information in Input1.\n" +
			"- 1: Input2 contradicts Input1, or Input2 lacks relevant content in this aspect.\n"
	}
	return head + rubric +
		"Only return the number.\n\n" +
		"Input1: " + strings.TrimSpace(reference) + "\n" +
		"Input2: " + strings.TrimSpace(candidate) + "\n" +
		"Number:"
}

// facetKeys maps the answer keys accepted for each facet (case-insensitive).
var facetKeys = map[string]Facet{
	"background": Background, "backgrounds": Background, "objective": Background,
	"method": Method, "methods": Method,
	"result": Result, "results": Result,
	"conclusion": Conclusion, "conclusions": Conclusion,
}

// labelLine matches "Background: text" (optionally bulleted or bold).
var labelLine = regexp.MustCompile(`(?i)^\s*[-*•]?\s*\**\s*(background|objective|methods?|results?|conclusions?)\s*\**\s*:\s*\**\s*(.*)$`)

// ParseSegments reads an extraction answer: a JSON object (possibly in a code block or after some
// text) whose values are strings, lists of strings or null; else lines "Facet: text". ok is false
// when neither form is found (an answer with no facet key at all).
func ParseSegments(answer string) (Segments, bool) {
	var s Segments
	if i, k := strings.Index(answer, "{"), strings.LastIndex(answer, "}"); i >= 0 && k > i {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(answer[i:k+1]), &raw); err == nil {
			found := false
			for key, v := range raw {
				f, ok := facetKeys[strings.ToLower(strings.TrimSpace(key))]
				if !ok {
					continue
				}
				found = true
				text, ok := segmentValue(v)
				if !ok {
					return Segments{}, false
				}
				if s[f] == "" {
					s[f] = text
				} else if text != "" {
					s[f] += " " + text
				}
			}
			if found {
				return s, true
			}
		}
	}
	found := false
	for _, line := range strings.Split(answer, "\n") {
		m := labelLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := facetKeys[strings.ToLower(m[1])]
		v := strings.TrimSpace(strings.Trim(strings.TrimSpace(m[2]), "*\""))
		if strings.EqualFold(v, "none") || strings.EqualFold(v, "n/a") || v == "-" {
			v = ""
		}
		s[f] = v
		found = true
	}
	return s, found
}

// segmentValue reads a JSON string, list of strings or null.
func segmentValue(v json.RawMessage) (string, bool) {
	if string(v) == "null" {
		return "", true
	}
	var str string
	if json.Unmarshal(v, &str) == nil {
		return strings.TrimSpace(str), true
	}
	var list []string
	if json.Unmarshal(v, &list) == nil {
		var parts []string
		for _, p := range list {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		return strings.Join(parts, " "), true
	}
	return "", false
}

// ParseGrade reads a grade answer: the first number of the answer ("3", "Grade: 3", "**3**",
// "1."), which must be an integer in 1..scale ("2.5" is malformed).
func ParseGrade(answer string, scale int) (int, bool) {
	isDigit := func(i int) bool { return i >= 0 && i < len(answer) && answer[i] >= '0' && answer[i] <= '9' }
	for i := 0; i < len(answer); i++ {
		if !isDigit(i) {
			continue
		}
		j := i
		for isDigit(j) {
			j++
		}
		if j < len(answer) && answer[j] == '.' && isDigit(j+1) {
			return 0, false // a decimal number
		}
		n, err := strconv.Atoi(answer[i:j])
		if err != nil || n < 1 || n > scale {
			return 0, false
		}
		return n, true
	}
	return 0, false
}
