package dataset

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tracksum/tracksum/subword"
)

// SectionLabel matches a structured abstract's section label at the start of a sentence, with the
// whitespace after it ("RESULTS: ", "PATIENTS AND METHODS: "): part of the layout, not of what the
// sentence says.
var SectionLabel = regexp.MustCompile(`^[A-Z][A-Z0-9 ,/&()-]*[A-Z)]:\s+`)

// SplitSentences splits a raw abstract into sentences the way TracSum's documents are split: at
// '.', '!' or '?' followed by a space and a sentence start (capital letter, digit, bracket), but not
// after abbreviations ("e.g.", "vs.", "et al.", "Fig.", "approx."), inside decimals ("12.1",
// "P = .001") or before a lower-case word. A section heading such as "RESULTS:" or "DESIGN,
// SETTING, AND PARTICIPANTS:" always starts a new sentence and stays attached to it, as in the
// benchmark; "95% CI: 1.2-3.4" is not a heading. Whitespace (newlines included) is collapsed.
func SplitSentences(text string) []string {
	out, _ := splitSentences(text)
	return out
}

// MaxWordBytes is the longest word (run of bytes without a space) that SplitSentences returns:
// longer runs are broken with a space, as the tokenizer's Clean does (the same limit), so that an
// unbroken multi-megabyte "word" costs linear time and bounded memory downstream.
const MaxWordBytes = subword.MaxWordBytes

// splitSentences is SplitSentences that also returns the number of words it broke because they
// were longer than MaxWordBytes, for callers that warn about them.
func splitSentences(text string) ([]string, int) {
	text, broken := subword.BreakLongWords(collapseSpaces(CleanText(text)))
	var out []string
	emit := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	start := 0
	for i := 0; i < len(text); i++ {
		if i == 0 || text[i-1] == ' ' {
			if end := headingEnd(text, i); end > 0 {
				if i > start {
					emit(text[start:i])
					start = i
				}
				i = end
				continue
			}
		}
		c := text[i]
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		j := i + 1
		for j < len(text) && strings.IndexByte(`"')]`, text[j]) >= 0 {
			j++
		}
		if j >= len(text) || text[j] != ' ' || j+1 >= len(text) {
			continue
		}
		next := text[j+1:]
		if !startsSentence(next) {
			continue
		}
		if c == '.' && isAbbreviation(lastWord(text[start:i+1]), next) {
			continue
		}
		emit(text[start:j])
		start = j + 1
		i = j
	}
	emit(text[start:])
	return out, broken
}

// abbreviations never end a sentence when followed by a capital ("et al. Smith", "vs. Placebo").
var abbreviations = map[string]bool{
	"al.": true, "vs.": true, "v.": true, "e.g.": true, "i.e.": true, "etc.": true, "cf.": true,
	"fig.": true, "figs.": true, "approx.": true, "dr.": true, "mr.": true, "mrs.": true, "ms.": true,
	"prof.": true, "st.": true, "jr.": true, "inc.": true, "ltd.": true, "co.": true, "corp.": true,
	"resp.": true, "ref.": true, "refs.": true, "eq.": true, "vol.": true, "ca.": true,
}

// isAbbreviation reports whether word (ending with '.') is an abbreviation rather than the end of
// a sentence. "No." and "p." count only before a number ("No. 5", "p. 599"), since they also end
// sentences.
func isAbbreviation(word, next string) bool {
	w := strings.ToLower(strings.TrimLeft(word, `("'[`))
	if abbreviations[w] {
		return true
	}
	if (w == "no." || w == "nos." || w == "p." || w == "pp.") && next != "" && next[0] >= '0' && next[0] <= '9' {
		return true
	}
	// Dotted initialisms: "U.S.", "e.g.", "a.m.".
	if len(w) >= 4 {
		dotted := true
		for k := 0; k < len(w); k += 2 {
			if k+1 >= len(w) || w[k+1] != '.' || !unicode.IsLetter(rune(w[k])) {
				dotted = false
				break
			}
		}
		if dotted {
			return true
		}
	}
	return false
}

func lastWord(s string) string {
	if k := strings.LastIndexByte(s, ' '); k >= 0 {
		return s[k+1:]
	}
	return s
}

// startsSentence reports whether s can begin a sentence: a capital, a digit, a bullet, or an
// opening bracket/quote followed by one.
func startsSentence(s string) bool {
	if strings.HasPrefix(s, "•") {
		return true
	}
	s = strings.TrimLeft(s, `("'[`)
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r) || unicode.IsDigit(r) || (r > unicode.MaxASCII && unicode.IsLetter(r) && !unicode.IsLower(r))
}

// headingEnd returns the index of the colon when a section heading ("RESULTS:", "DESIGN, SETTING,
// AND PARTICIPANTS:") starts at text[i], else -1. A heading is upper-case words ending in a colon,
// with at least 4 letters so that abbreviations like "CI:" or "HR:" do not count, and not inside
// brackets.
func headingEnd(text string, i int) int {
	if i >= 2 && (text[i-2] == '(' || text[i-2] == '[') {
		return -1
	}
	letters := 0
	for k := i; k < len(text); {
		r, size := utf8.DecodeRuneInString(text[k:])
		switch {
		case unicode.IsUpper(r):
			letters++
		case r == '.' && k+1 < len(text) && text[k+1] >= 'A' && text[k+1] <= 'Z':
			// "CLINICALTRIALS.GOV IDENTIFIER:"
		case r == ' ' || r == ',' || r == '&' || r == '/' || r == '-':
			if letters == 0 {
				return -1
			}
		case r == ':':
			if letters >= 4 && (k+1 == len(text) || text[k+1] == ' ') {
				return k
			}
			return -1
		default:
			return -1
		}
		k += size
		if k-i > 80 {
			return -1
		}
	}
	return -1
}

// collapseSpaces turns runs of ASCII white space into one space and trims the ends. Unicode spaces
// (no-break, thin) are kept: the benchmark's sentences contain them ("3\u00a0mg/kg").
func collapseSpaces(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteByte(c)
	}
	return b.String()
}

// CleanText removes what breaks tokenizers and splitters: a byte-order mark, control characters
// (tabs and newlines become spaces), and invalid UTF-8. Combining marks are kept.
func CleanText(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || r == '\ufeff' || (unicode.IsControl(r) && r != ' ') || r == '\u2028' || r == '\u2029' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1, r == '\ufeff':
		case r == '\t' || r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029' || r == '\v' || r == '\f':
			b.WriteByte(' ')
		case unicode.IsControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
