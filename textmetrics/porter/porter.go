// Package porter is a port of NLTK's PorterStemmer in its default mode
// (NLTK_EXTENSIONS), the stemmer Google's rouge-score applies when
// use_stemmer=True. It reproduces NLTK 3.8 (Debian python3-nltk) exactly on
// the golden vocabulary in testdata/; keep it byte-compatible rather than
// "improving" it, since ROUGE parity depends on every quirk.
//
// # Example
//
//	porter.Stem("hospitalizations") // "hospit"
//	porter.Stem("dying")            // "die"
package porter

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// irregular is NLTK's pool of irregular forms: a word found here (before
// lowercasing, as NLTK checks it) maps straight to its value.
var irregular = map[string]string{
	"sky": "sky", "skies": "sky",
	"dying": "die", "lying": "lie", "tying": "tie",
	"news":    "news",
	"innings": "inning", "inning": "inning",
	"outings": "outing", "outing": "outing",
	"cannings": "canning", "canning": "canning",
	"howe":    "howe",
	"proceed": "proceed", "exceed": "exceed", "succeed": "succeed",
}

// Stem returns the Porter stem of word exactly as NLTK's
// PorterStemmer().stem(word) does: the word is lowercased, words of one or
// two characters are returned lowercased but otherwise unchanged.
//
// NLTK works on Python characters; this port works on runes and lowercases
// like Python's str.lower (see pyLower).
func Stem(word string) string {
	lower := pyLower(word)
	if v, ok := irregular[word]; ok {
		return v
	}
	if utf8.RuneCountInString(word) <= 2 {
		return lower
	}
	w := stemmer{b: []rune(lower)}
	w.step1a()
	w.step1b()
	w.step1c()
	w.step2()
	w.step3()
	w.step4()
	w.step5a()
	w.step5b()
	return string(w.b)
}

// pyLower is Python's str.lower: Go's simple case mapping plus the two
// places where Python differs, U+0130 (capital I with dot) becoming "i" and
// U+0307, and a capital sigma in the Final_Sigma context becoming "ς".
func pyLower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	out := make([]rune, 0, len(rs)+1)
	for i, r := range rs {
		switch r {
		case 0x130:
			out = append(out, 'i', 0x307)
		case 0x3a3:
			if finalSigma(rs, i) {
				out = append(out, 0x3c2)
			} else {
				out = append(out, 0x3c3)
			}
		default:
			out = append(out, unicode.ToLower(r))
		}
	}
	return string(out)
}

// finalSigma is CPython's handle_capital_sigma: a cased letter before
// (skipping case-ignorable characters) and none after.
func finalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && caseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !cased(rs[j]) {
		return false
	}
	j = i + 1
	for j < len(rs) && caseIgnorable(rs[j]) {
		j++
	}
	return j == len(rs) || !cased(rs[j])
}

func cased(r rune) bool {
	return unicode.IsLower(r) || unicode.IsUpper(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// caseIgnorable is Unicode's Case_Ignorable: categories Mn, Me, Cf, Lm, Sk
// and the Word_Break classes MidLetter, MidNumLet and Single_Quote (listed,
// as Go has no Word_Break tables).
func caseIgnorable(r rune) bool {
	switch r {
	case 0x27, 0x2e, 0x3a, 0xb7, 0x387, 0x55f, 0x5f4, 0x2018, 0x2019, 0x2024, 0x2027,
		0xfe13, 0xfe52, 0xfe55, 0xff07, 0xff0e, 0xff1a:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// stemmer holds the word being stemmed; b shrinks and grows as the steps
// replace suffixes.
type stemmer struct {
	b []rune
}

func isVowelRune(r rune) bool {
	return r == 'a' || r == 'e' || r == 'i' || r == 'o' || r == 'u'
}

// isConsonant reports whether w[i] is a consonant: not a vowel, and a 'y' is
// a consonant only at the start or after a vowel (NLTK's recursive rule,
// unrolled).
func isConsonant(w []rune, i int) bool {
	switch {
	case isVowelRune(w[i]):
		return false
	case w[i] != 'y' || i == 0:
		return true
	default:
		return !isConsonant(w, i-1)
	}
}

// measure counts the "vc" transitions of w, Porter's m.
func measure(w []rune) int {
	m := 0
	prevVowel := false
	// Track consonant-ness incrementally: y's status depends on the
	// previous letter only.
	prevCons := false
	for i, r := range w {
		var cons bool
		switch {
		case isVowelRune(r):
			cons = false
		case r == 'y':
			cons = i == 0 || !prevCons
		default:
			cons = true
		}
		if cons && prevVowel {
			m++
		}
		prevVowel = !cons
		prevCons = cons
	}
	return m
}

func containsVowel(w []rune) bool {
	for i := range w {
		if !isConsonant(w, i) {
			return true
		}
	}
	return false
}

func endsDoubleConsonant(w []rune) bool {
	n := len(w)
	return n >= 2 && w[n-1] == w[n-2] && isConsonant(w, n-1)
}

// endsCVC is condition *o, with NLTK's extension that a two-letter
// vowel-consonant word also counts (without the w/x/y exclusion).
func endsCVC(w []rune) bool {
	n := len(w)
	if n >= 3 && isConsonant(w, n-3) && !isConsonant(w, n-2) && isConsonant(w, n-1) &&
		w[n-1] != 'w' && w[n-1] != 'x' && w[n-1] != 'y' {
		return true
	}
	return n == 2 && !isConsonant(w, 0) && isConsonant(w, 1)
}

func hasSuffix(w []rune, suffix string) bool {
	if len(suffix) > len(w) {
		return false
	}
	off := len(w) - len(suffix)
	for i := 0; i < len(suffix); i++ {
		if w[off+i] != rune(suffix[i]) {
			return false
		}
	}
	return true
}

// replace returns w without suffix (which it must end with) plus repl. It
// reuses w's array: every caller discards the old word.
func replace(w []rune, suffix, repl string) []rune {
	w = w[:len(w)-len(suffix)]
	for i := 0; i < len(repl); i++ {
		w = append(w, rune(repl[i]))
	}
	return w
}

// rule is one (suffix, replacement, condition) triple of NLTK's rule lists;
// cond receives the stem (word minus suffix) and the whole word.
type rule struct {
	suffix, repl string
	cond         func(stem, word []rune) bool
}

func positiveMeasure(stem, _ []rune) bool { return measure(stem) > 0 }
func measureGT1(stem, _ []rune) bool      { return measure(stem) > 1 }

// applyRules applies the first rule whose suffix matches; if its condition
// fails no further rule is tried (NLTK's _apply_rule_list).
func applyRules(w []rune, rules []rule) []rune {
	for _, r := range rules {
		if hasSuffix(w, r.suffix) {
			stem := w[:len(w)-len(r.suffix)]
			if r.cond == nil || r.cond(stem, w) {
				return replace(w, r.suffix, r.repl)
			}
			return w
		}
	}
	return w
}

var step1aRules = []rule{
	{"sses", "ss", nil},
	{"ies", "i", nil},
	{"ss", "ss", nil},
	{"s", "", nil},
}

func (s *stemmer) step1a() {
	// NLTK: 'dies' -> 'die' but 'flies' -> 'fli'.
	if hasSuffix(s.b, "ies") && len(s.b) == 4 {
		s.b = replace(s.b, "ies", "ie")
		return
	}
	s.b = applyRules(s.b, step1aRules)
}

func (s *stemmer) step1b() {
	w := s.b
	// NLTK: 'died' -> 'die' but 'spied' -> 'spi'.
	if hasSuffix(w, "ied") {
		if len(w) == 4 {
			s.b = replace(w, "ied", "ie")
		} else {
			s.b = replace(w, "ied", "i")
		}
		return
	}
	if hasSuffix(w, "eed") {
		if measure(w[:len(w)-3]) > 0 {
			s.b = replace(w, "eed", "ee")
		}
		return
	}
	var stem []rune
	ok := false
	for _, suf := range [...]string{"ed", "ing"} {
		if hasSuffix(w, suf) {
			stem = w[:len(w)-len(suf)]
			if containsVowel(stem) {
				ok = true
				break
			}
		}
	}
	if !ok {
		return
	}
	switch {
	case hasSuffix(stem, "at"):
		s.b = replace(stem, "at", "ate")
	case hasSuffix(stem, "bl"):
		s.b = replace(stem, "bl", "ble")
	case hasSuffix(stem, "iz"):
		s.b = replace(stem, "iz", "ize")
	case endsDoubleConsonant(stem):
		last := stem[len(stem)-1]
		if last != 'l' && last != 's' && last != 'z' {
			s.b = stem[:len(stem)-1]
		} else {
			s.b = stem
		}
	case measure(stem) == 1 && endsCVC(stem):
		s.b = append(stem, 'e')
	default:
		s.b = stem
	}
}

func (s *stemmer) step1c() {
	w := s.b
	// NLTK: y -> i only after a consonant that is not the whole stem.
	if hasSuffix(w, "y") {
		stem := w[:len(w)-1]
		if len(stem) > 1 && isConsonant(stem, len(stem)-1) {
			s.b = replace(w, "y", "i")
		}
	}
}

var step2Rules = []rule{
	{"ational", "ate", positiveMeasure},
	{"tional", "tion", positiveMeasure},
	{"enci", "ence", positiveMeasure},
	{"anci", "ance", positiveMeasure},
	{"izer", "ize", positiveMeasure},
	{"bli", "ble", positiveMeasure},
	{"alli", "al", positiveMeasure},
	{"entli", "ent", positiveMeasure},
	{"eli", "e", positiveMeasure},
	{"ousli", "ous", positiveMeasure},
	{"ization", "ize", positiveMeasure},
	{"ation", "ate", positiveMeasure},
	{"ator", "ate", positiveMeasure},
	{"alism", "al", positiveMeasure},
	{"iveness", "ive", positiveMeasure},
	{"fulness", "ful", positiveMeasure},
	{"ousness", "ous", positiveMeasure},
	{"aliti", "al", positiveMeasure},
	{"iviti", "ive", positiveMeasure},
	{"biliti", "ble", positiveMeasure},
	{"fulli", "ful", positiveMeasure},
	// The 'l' of 'logi' stays with the stem for the measure test, so that
	// short stems like 'geo' work like 'archaeo'.
	{"logi", "log", func(_, word []rune) bool { return measure(word[:len(word)-3]) > 0 }},
}

func (s *stemmer) step2() {
	for {
		w := s.b
		// NLTK applies ALLI -> AL first and re-runs step 2 on the result.
		if hasSuffix(w, "alli") && measure(w[:len(w)-4]) > 0 {
			s.b = replace(w, "alli", "al")
			continue
		}
		s.b = applyRules(w, step2Rules)
		return
	}
}

var step3Rules = []rule{
	{"icate", "ic", positiveMeasure},
	{"ative", "", positiveMeasure},
	{"alize", "al", positiveMeasure},
	{"iciti", "ic", positiveMeasure},
	{"ical", "ic", positiveMeasure},
	{"ful", "", positiveMeasure},
	{"ness", "", positiveMeasure},
}

func (s *stemmer) step3() { s.b = applyRules(s.b, step3Rules) }

var step4Rules = []rule{
	{"al", "", measureGT1},
	{"ance", "", measureGT1},
	{"ence", "", measureGT1},
	{"er", "", measureGT1},
	{"ic", "", measureGT1},
	{"able", "", measureGT1},
	{"ible", "", measureGT1},
	{"ant", "", measureGT1},
	{"ement", "", measureGT1},
	{"ment", "", measureGT1},
	{"ent", "", measureGT1},
	{"ion", "", func(stem, _ []rune) bool {
		return measure(stem) > 1 && (stem[len(stem)-1] == 's' || stem[len(stem)-1] == 't')
	}},
	{"ou", "", measureGT1},
	{"ism", "", measureGT1},
	{"ate", "", measureGT1},
	{"iti", "", measureGT1},
	{"ous", "", measureGT1},
	{"ive", "", measureGT1},
	{"ize", "", measureGT1},
}

func (s *stemmer) step4() { s.b = applyRules(s.b, step4Rules) }

func (s *stemmer) step5a() {
	w := s.b
	// Both rules of 5a are tried (unlike _apply_rule_list).
	if hasSuffix(w, "e") {
		stem := w[:len(w)-1]
		m := measure(stem)
		if m > 1 || (m == 1 && !endsCVC(stem)) {
			s.b = stem
		}
	}
}

func (s *stemmer) step5b() {
	w := s.b
	if hasSuffix(w, "ll") && measure(w[:len(w)-1]) > 1 {
		s.b = w[:len(w)-1]
	}
}
