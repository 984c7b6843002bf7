package llmmethods

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tracksum/tracksum/dataset"
)

// Problems found in an answer. An answer with a problem is still used as well as it can be read,
// counted under the problem's name in the run's stats and marked in its prediction.
const (
	// ProblemNoSummary: no "Summary:" and no text that could be the summary.
	ProblemNoSummary = "no_summary"
	// ProblemNoCitations: a summary without any "Citations:"/"Indices:" field.
	ProblemNoCitations = "no_citations"
	// ProblemBadCitations: a citation field with no index and not "Null."/"[]".
	ProblemBadCitations = "bad_citations"
	// ProblemIndexOutOfRange: a cited index that is not a sentence of the abstract (dropped).
	ProblemIndexOutOfRange = "index_out_of_range"
	// ProblemUnknownWithCitations: "Unknown." with citations (read as negative, citations dropped).
	ProblemUnknownWithCitations = "unknown_with_citations"
	// ProblemNoPhrases: no "Key phrases:" field where the method asks for one.
	ProblemNoPhrases = "no_phrases"
	// ProblemRefused: the model refused or answered nothing, even after the retries (read as
	// "Unknown." with no citation).
	ProblemRefused = "refused"
)

// labelRe finds the fields of an answer, wherever they are (models put them on one line, in bold,
// as headings, or number them as the PCoA prompts do).
var labelRe = regexp.MustCompile(`(?i)(?:^|[\s*#>_(])(?:\d[.)]\s*)?(summary|citations?|cited sentences|indices(?: of (?:the )?(?:involved|cited|relevant) sentences)?|sentence indices|key phrases|contributory phrases|phrases)\s*[*_]*\s*:`)

// fields splits an answer into its labelled fields: the canonical label ("summary", "citations"
// or "phrases") -> the text after the label's first occurrence, up to the next label. before is
// the text before the first label.
func fields(answer string) (f map[string]string, before string) {
	f = map[string]string{}
	locs := labelRe.FindAllStringSubmatchIndex(answer, -1)
	if len(locs) == 0 {
		return f, answer
	}
	before = answer[:locs[0][0]]
	for i, loc := range locs {
		end := len(answer)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		name := canonicalLabel(answer[loc[2]:loc[3]])
		if _, seen := f[name]; !seen {
			f[name] = answer[loc[1]:end]
		}
	}
	return f, before
}

func canonicalLabel(l string) string {
	l = strings.ToLower(l)
	switch {
	case l == "summary":
		return "summary"
	case strings.Contains(l, "phrases"):
		return "phrases"
	}
	return "citations"
}

// cleanText trims markdown decoration, quotes and white space from a field's text.
func cleanText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Trim(s, " *_#`")
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}

// isUnknown reports whether a summary says that the aspect is absent ("Unknown.", "Null", "N/A").
func isUnknown(summary string) bool {
	s := strings.ToLower(strings.Trim(cleanText(summary), " .!\"'[]"))
	switch s {
	case "unknown", "null", "none", "n/a", "na", "not reported", "not mentioned", "":
		return true
	}
	return strings.HasPrefix(s, "unknown")
}

var (
	indexRe = regexp.MustCompile(`\d+(?:\s*[-–]\s*\d+)?`)
	emptyRe = regexp.MustCompile(`(?i)^[\s\[\]().*"'_-]*(null|none|n/?a|unknown|no sentences?|empty)?[\s\[\]().*"'_-]*$`)
)

// parseIndices reads a citation field: "[2, 3]", "2, 3", "[S2][S3]", "2-4", "Null.", "[]". ok is
// false when the field has no index and does not say "none" either. Indices outside [0, n) are
// dropped and reported by outOfRange. The result is sorted and without repeats, never nil.
func parseIndices(field string, n int) (idx []int, outOfRange, ok bool) {
	idx = []int{}
	field = strings.TrimSpace(field)
	// Only the field's first line counts: models sometimes explain their choice below it.
	if i := strings.IndexByte(field, '\n'); i >= 0 && strings.ContainsAny(field[:i], "0123456789") {
		field = field[:i]
	}
	ms := indexRe.FindAllString(field, -1)
	if len(ms) == 0 {
		return idx, false, emptyRe.MatchString(field)
	}
	for _, m := range ms {
		lo, hi := m, m
		if k := strings.IndexAny(m, "-–"); k >= 0 {
			lo, hi = strings.TrimSpace(m[:k]), strings.TrimSpace(strings.TrimLeft(m[k:], "-–"))
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || b < a || b-a > n {
			outOfRange = true
			continue
		}
		for k := a; k <= b; k++ {
			if k >= n {
				outOfRange = true
				continue
			}
			if !slices.Contains(idx, k) {
				idx = append(idx, k)
			}
		}
	}
	slices.Sort(idx)
	return idx, outOfRange, true
}

var quotedRe = regexp.MustCompile(`"([^"\n]+)"|“([^”\n]+)”`)

// parsePhrases reads a phrase field: a JSON list, quoted strings, or one phrase per line or per
// semicolon. The result has no repeats and is never nil.
func parsePhrases(field string) []string {
	out := []string{}
	add := func(p string) {
		p = cleanText(strings.TrimLeft(strings.TrimSpace(p), "-*•0123456789.) "))
		p = strings.TrimRight(p, ",;")
		if p != "" && !slices.Contains(out, p) && !isUnknown(p) {
			out = append(out, p)
		}
	}
	if i, k := strings.Index(field, "["), strings.LastIndex(field, "]"); i >= 0 && k > i {
		var list []string
		if json.Unmarshal([]byte(field[i:k+1]), &list) == nil {
			for _, p := range list {
				add(p)
			}
			return out
		}
	}
	if ms := quotedRe.FindAllStringSubmatch(field, -1); len(ms) > 0 {
		for _, m := range ms {
			add(m[1] + m[2])
		}
		return out
	}
	for _, line := range strings.FieldsFunc(field, func(r rune) bool { return r == '\n' || r == ';' }) {
		add(strings.Trim(strings.TrimSpace(line), "[]"))
	}
	return out
}

// Answer is a parsed answer: the prediction's parts and the problems found.
type Answer struct {
	Summary  string
	Indexes  []int
	Phrases  []string
	Problems []string
}

func (a *Answer) problem(p string) {
	if !slices.Contains(a.Problems, p) {
		a.Problems = append(a.Problems, p)
	}
}

// negative makes the answer the negative prediction: "Unknown." with no citation or phrase.
func (a *Answer) negative() {
	a.Summary, a.Indexes = dataset.UnknownSummary, []int{}
	if a.Phrases != nil {
		a.Phrases = []string{}
	}
}

// summaryOf reads the summary of an answer: the "Summary:" field, else the text before the first
// field, else the whole answer when it has no field at all ("Unknown." alone is an answer).
func summaryOf(f map[string]string, before string) (string, bool) {
	if s, ok := f["summary"]; ok {
		// A summary is one sentence: anything after a blank line is commentary.
		if i := strings.Index(strings.TrimSpace(s), "\n\n"); i >= 0 {
			s = strings.TrimSpace(s)[:i]
		}
		return cleanText(s), cleanText(s) != ""
	}
	if b := cleanText(before); b != "" {
		return b, true
	}
	return "", false
}

// ParseSummaryCitations reads an answer of TracSum's prompt: "Summary: ..." and "Citations: [...]"
// (or "Unknown." and "Null."), for an abstract of n sentences.
func ParseSummaryCitations(answer string, n int) Answer {
	var a Answer
	f, before := fields(answer)
	summary, ok := summaryOf(f, before)
	if !ok {
		a.problem(ProblemNoSummary)
		a.negative()
		return a
	}
	a.Summary = summary
	a.readCitations(f, n)
	return a
}

// ParseEvidence reads an answer of PCoA's prompts: "Indices: [...]", "Key phrases: [...]" and,
// when withSummary, "Summary: ...", for an abstract of n sentences. Without a summary, Summary is
// left empty and a missing index list is a problem.
func ParseEvidence(answer string, n int, withSummary bool) Answer {
	a := Answer{Phrases: []string{}}
	f, before := fields(answer)
	if withSummary {
		summary, ok := summaryOf(f, "")
		if !ok {
			// Without the label, a lone "Unknown." is still an answer.
			if isUnknown(before) && len(f) == 0 {
				a.negative()
				return a
			}
			a.problem(ProblemNoSummary)
			a.negative()
			return a
		}
		a.Summary = summary
	}
	if p, ok := f["phrases"]; ok {
		a.Phrases = parsePhrases(p)
	} else if !(withSummary && isUnknown(a.Summary)) {
		a.problem(ProblemNoPhrases)
	}
	if !withSummary {
		a.Summary = "-" // not a negative: readCitations only needs to know that
	}
	a.readCitations(f, n)
	if !withSummary {
		a.Summary = ""
	}
	return a
}

// readCitations fills Indexes from the citation field and makes the answer consistent: a negative
// summary has no citation.
func (a *Answer) readCitations(f map[string]string, n int) {
	neg := isUnknown(a.Summary)
	field, ok := f["citations"]
	switch {
	case !ok:
		a.Indexes = []int{}
		if !neg {
			a.problem(ProblemNoCitations)
		}
	default:
		idx, out, good := parseIndices(field, n)
		a.Indexes = idx
		if out {
			a.problem(ProblemIndexOutOfRange)
		}
		if !good {
			a.problem(ProblemBadCitations)
		}
	}
	if neg {
		if len(a.Indexes) > 0 {
			a.problem(ProblemUnknownWithCitations)
		}
		a.negative()
	}
}

// ParseSummary reads a summary-only answer ("Summary: ...", or the bare text).
func ParseSummary(answer string) Answer {
	var a Answer
	f, before := fields(answer)
	s, ok := summaryOf(f, before)
	if !ok {
		a.problem(ProblemNoSummary)
		a.negative()
		return a
	}
	a.Summary, a.Indexes = s, []int{}
	if isUnknown(s) {
		a.negative()
	}
	return a
}
