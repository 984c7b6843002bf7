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
// The prompts are ours (the paper's wording is not copied), zero-shot, and golden-tested.
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
	"fmt"
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
	// Malformed lists the steps whose answers could not be parsed, e.g. "extract reference".
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

// ExtractPrompt asks for the four facet segments of text as a JSON object (the paper's
// extraction step, in our words).
func ExtractPrompt(text string) string {
	return "Instructions:\n" +
		"Read the text below, a summary of a scientific study. Copy out the part of the text that states each of " +
		"these four facets:\n" +
		"- background: the context and the objective of the work;\n" +
		"- method: how the study was done (design, participants, interventions, comparisons, measures);\n" +
		"- result: what was observed and measured, with its numbers;\n" +
		"- conclusion: what the authors conclude, limitations and future directions.\n" +
		"Use the text's own words. A facet the text does not state gets an empty string.\n" +
		"Reply with one JSON object only, with exactly the keys \"background\", \"method\", \"result\" and " +
		"\"conclusion\", and no other text.\n\n" +
		"Text:\n" + strings.TrimSpace(text) + "\n\n" +
		"JSON:\n"
}

// GradePrompt asks for the grade of candidate's segment against reference's for facet f, on the
// facet's scale (the paper's rubrics, in our words).
func GradePrompt(f Facet, reference, candidate string) string {
	var rubric string
	if f.Scale() == 3 {
		rubric = "3: Text 2 agrees with Text 1 overall.\n" +
			"2: Text 2 does not mention what Text 1 says.\n" +
			"1: Text 2 contradicts Text 1, or has nothing relevant to this facet.\n"
	} else {
		rubric = "4: Text 2 contains the information of Text 1, possibly without minor details.\n" +
			"3: Text 2 contains the information of Text 1 but leaves out some of its key information.\n" +
			"2: Text 2 is not empty but mentions none of the key information of Text 1.\n" +
			"1: Text 2 contradicts Text 1, or has nothing relevant to this facet.\n"
	}
	return "Instructions:\n" +
		fmt.Sprintf("Text 1 is the %s of a reference summary of a study; Text 2 is the %s of a generated summary "+
			"of the same study. Grade how well Text 2 matches Text 1 on this scale (1-%d):\n", f, f, f.Scale()) +
		rubric +
		"Key information is what a reader needs to understand the main message of Text 1; minor details are " +
		"supplementary elements whose absence does not change it. Reply with the grade only, a single number.\n\n" +
		"Text 1:\n" + strings.TrimSpace(reference) + "\n\n" +
		"Text 2:\n" + strings.TrimSpace(candidate) + "\n\n" +
		"Grade:\n"
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
