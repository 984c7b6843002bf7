// Package wordtok is a port of NLTK's word_tokenize(text,
// preserve_line=True): the NLTKWordTokenizer ("improved Treebank") rules for
// quotes, clitics and contractions, punctuation, parentheses, ellipses and
// dashes. Sentence splitting is NOT applied: Debian's NLTK ships without the
// punkt model, so the golden files were made with preserve_line=True and the
// whole input is treated as one sentence (a period is split off only at the
// very end of the text, as NLTK does for one sentence).
//
// NLTK runs Python regular expressions with Unicode \w, \s, \d and \b and
// case-insensitive groups; Go's regexp is ASCII-only for those classes and
// has no lookahead, so every rule is a hand-written scanner that emulates
// Python's re.sub (leftmost, non-overlapping matches). \w is Unicode
// letters, numbers and '_' (Go's tables are Unicode 15, CPython 3.11's are
// 14: only characters new in Unicode 15 differ).
//
// # Example
//
//	wordtok.Tokenize(`He said "don't" (twice).`)
//	// ["He" "said" "``" "do" "n't" "''" "(" "twice" ")" "."]
package wordtok

import (
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Tokenize returns NLTK's word_tokenize(text, preserve_line=True).
func Tokenize(text string) []string {
	z := statePool.Get().(*state)
	defer statePool.Put(z)
	t := z.out(len(text) + 8)
	for _, r := range text {
		t = append(t, r)
	}
	t = z.set(t)
	// STARTING_QUOTES
	t = z.set(z.padRunesOrBackticks(t))
	if len(t) > 0 && t[0] == '"' {
		t = z.set(append(append(z.out(len(t)+1), '`', '`'), t[1:]...))
	}
	t = z.set(z.padLiteral(t, "``", setBacktick))
	t = z.set(z.openingDoubleQuote(t))
	t = z.set(z.splitLeadingQuote(t))
	// PUNCTUATION
	t = z.set(z.finalPeriod(t, closersWithSpace, true))
	t = z.set(z.colonComma(t))
	t = z.set(z.colonCommaAtEnd(t))
	t = z.set(z.padRuns(t, '.', 2))
	t = z.set(z.padSet(t, setSymbols))
	t = z.set(z.finalPeriod(t, closersASCII, false))
	t = z.set(z.padSet(t, setQuestionBang))
	t = z.set(z.quoteSpace(t))
	t = z.set(z.padSet(t, setStar))
	// PARENS_BRACKETS, DOUBLE_DASHES
	t = z.set(z.padSet(t, setBrackets))
	t = z.set(z.padLiteral(t, "--", setDash))
	t = z.set(append(append(append(z.out(len(t)+2), ' '), t...), ' '))
	// ENDING_QUOTES
	t = z.set(z.padSet(t, setCloseQuotes))
	t = z.set(z.padLiteral(t, "''", setQuote))
	t = z.set(z.replaceRune(t, '"', " '' "))
	t = z.set(z.clitics(t, cliticsSMD))
	t = z.set(z.clitics(t, cliticsLong))
	// CONTRACTIONS2 and CONTRACTIONS3
	for _, c := range contractions {
		t = z.set(z.splitContraction(t, c))
	}
	return strings.FieldsFunc(string(t), isSpace)
}

// state holds two rune buffers that the rules write into alternately: a
// rule reads the text from one and writes to the other, so a call allocates
// little once the pooled buffers have grown.
type state struct {
	bufs    [2][]rune
	cur     int  // index of the buffer holding the current text
	pending bool // out was called: the next set receives a new text
}

var statePool = sync.Pool{New: func() any { return new(state) }}

// out returns the buffer not holding the current text, emptied, with room
// for n runes. A rule calls it only when it will return the new text.
func (z *state) out(n int) []rune {
	z.pending = true
	return slices.Grow(z.bufs[1-z.cur][:0], n)
}

// set records t, a rule's result, as the current text: either the rule's
// input unchanged, or a new text written to the out buffer (perhaps
// regrown), which then becomes current.
func (z *state) set(t []rune) []rune {
	if z.pending {
		z.cur = 1 - z.cur
		z.pending = false
	}
	z.bufs[z.cur] = t
	return t
}

// isWord is Python's Unicode \w.
func isWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// isSpace is Python's str.isspace (also \s): Go's unicode.IsSpace plus the
// information separators U+001C..U+001F.
func isSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// foldEq reports whether r matches the ASCII lowercase letter c under
// Python's re.IGNORECASE, which also folds U+0130/U+0131 to i, U+017F to s
// and U+212A to k.
func foldEq(r rune, c byte) bool {
	if r == rune(c) || r == rune(c-'a'+'A') {
		return true
	}
	switch c {
	case 'i':
		return r == 0x130 || r == 0x131
	case 's':
		return r == 0x17f
	case 'k':
		return r == 0x212a
	}
	return false
}

// containsAny reports whether t contains any rune of set: most rules need
// a rare character, and skipping the copy when it is absent makes the
// common case several times faster.
func containsAny(t []rune, set *runeSet) bool {
	return slices.ContainsFunc(t, set.has)
}

// runeSet is a set of runes with a table for ASCII: membership tests are
// the inner loop of every rule.
type runeSet struct {
	ascii [utf8.RuneSelf]bool
	other []rune
}

func newRuneSet(s string) *runeSet {
	rs := &runeSet{}
	for _, r := range s {
		if r < utf8.RuneSelf {
			rs.ascii[r] = true
		} else {
			rs.other = append(rs.other, r)
		}
	}
	return rs
}

func (rs *runeSet) has(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 0 && rs.ascii[r]
	}
	return slices.Contains(rs.other, r)
}

var (
	setOpenQuotes    = newRuneSet("«“‘„`")
	setBacktick      = newRuneSet("`")
	setDash          = newRuneSet("-")
	setQuote         = newRuneSet("'")
	setQuotes        = newRuneSet("\"'")
	setColonComma    = newRuneSet(":,")
	setSymbols       = newRuneSet(";@#$%&")
	setQuestionBang  = newRuneSet("?!")
	setStar          = newRuneSet("*")
	setBrackets      = newRuneSet("][(){}<>")
	setCloseQuotes   = newRuneSet("»”’")
	setOpenBrackets  = newRuneSet(" ([{<")
	closersWithSpace = newRuneSet("])}>\"'»”’ ")
	closersASCII     = newRuneSet("])}>\"'")
)

func pad(out []rune, s ...rune) []rune {
	out = append(out, ' ')
	out = append(out, s...)
	return append(out, ' ')
}

// padRunesOrBackticks is ([«“‘„]|[`]+) -> " \1 ".
func (z *state) padRunesOrBackticks(t []rune) []rune {
	if !containsAny(t, setOpenQuotes) {
		return t
	}
	out := z.out(len(t) + 8)
	for i := 0; i < len(t); {
		switch r := t[i]; {
		case r == '«' || r == '“' || r == '‘' || r == '„':
			out = pad(out, r)
			i++
		case r == '`':
			j := i
			for j < len(t) && t[j] == '`' {
				j++
			}
			out = pad(out, t[i:j]...)
			i = j
		default:
			out = append(out, r)
			i++
		}
	}
	return out
}

// padLiteral surrounds each non-overlapping occurrence of lit with spaces.
// first holds lit's first rune: without it there is nothing to do.
func (z *state) padLiteral(t []rune, lit string, first *runeSet) []rune {
	if !containsAny(t, first) {
		return t
	}
	l := []rune(lit) // once per call, not per position
	out := z.out(len(t) + 8)
	for i := 0; i < len(t); {
		if hasAt(t, i, l) {
			out = pad(out, l...)
			i += len(l)
			continue
		}
		out = append(out, t[i])
		i++
	}
	return out
}

func hasAt(t []rune, i int, l []rune) bool {
	if i+len(l) > len(t) {
		return false
	}
	for k, r := range l {
		if t[i+k] != r {
			return false
		}
	}
	return true
}

// padSet surrounds every rune of set with spaces.
func (z *state) padSet(t []rune, set *runeSet) []rune {
	if !containsAny(t, set) {
		return t
	}
	out := z.out(len(t) + 8)
	for _, r := range t {
		if set.has(r) {
			out = pad(out, r)
		} else {
			out = append(out, r)
		}
	}
	return out
}

// padRuns is c{min,} -> " \g<0> ".
func (z *state) padRuns(t []rune, c rune, minRun int) []rune {
	if !slices.Contains(t, c) {
		return t
	}
	out := z.out(len(t) + 8)
	for i := 0; i < len(t); {
		if t[i] != c {
			out = append(out, t[i])
			i++
			continue
		}
		j := i
		for j < len(t) && t[j] == c {
			j++
		}
		if j-i >= minRun {
			out = pad(out, t[i:j]...)
		} else {
			out = append(out, t[i:j]...)
		}
		i = j
	}
	return out
}

func (z *state) replaceRune(t []rune, c rune, repl string) []rune {
	if !slices.Contains(t, c) {
		return t
	}
	out := z.out(len(t) + 8)
	for _, r := range t {
		if r == c {
			out = append(out, []rune(repl)...)
		} else {
			out = append(out, r)
		}
	}
	return out
}

// openingDoubleQuote is ([ \(\[{<])(\"|\'{2}) -> "\1 “ ".
func (z *state) openingDoubleQuote(t []rune) []rune {
	if !containsAny(t, setQuotes) {
		return t
	}
	out := z.out(len(t) + 8)
	for i := 0; i < len(t); {
		r := t[i]
		if setOpenBrackets.has(r) && i+1 < len(t) {
			n := 0
			if t[i+1] == '"' {
				n = 2
			} else if i+2 < len(t) && t[i+1] == '\'' && t[i+2] == '\'' {
				n = 3
			}
			if n > 0 {
				out = append(out, r)
				out = append(out, []rune(" `` ")...)
				i += n
				continue
			}
		}
		out = append(out, r)
		i++
	}
	return out
}

// splitLeadingQuote is (?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b -> "\1 \2": a
// quote before a one-character word is split off unless it starts a clitic.
// The two-letter lookaheads (re, ve, ll) can never matter: they would make
// the character after the word character a word character, failing \b.
func (z *state) splitLeadingQuote(t []rune) []rune {
	if !slices.Contains(t, '\'') {
		return t
	}
	out := z.out(len(t) + 8)
	for i := 0; i < len(t); {
		if t[i] == '\'' && i+1 < len(t) && isWord(t[i+1]) && (i+2 == len(t) || !isWord(t[i+2])) {
			c := t[i+1]
			if !foldEq(c, 'm') && !foldEq(c, 't') && !foldEq(c, 's') && !foldEq(c, 'd') && !foldEq(c, 'n') {
				out = append(out, '\'', ' ', c)
				i += 2
				continue
			}
		}
		out = append(out, t[i])
		i++
	}
	return out
}

// closersWithSpace and closersASCII are the characters allowed between a
// final period and the end of text by the two final-period rules.

// finalPeriod emulates ([^\.])(\.)([closers]*)\s*$: a period that is not
// part of an ellipsis, followed only by closing characters and whitespace up
// to the end of the text, is split off. padded selects the replacement:
// "\1 \2 \3 " (the first rule) or "\1 \2\3 " (the second). The pattern is
// anchored at the end, so at most one position matches.
func (z *state) finalPeriod(t []rune, closers *runeSet, padded bool) []rune {
	for s := 0; s+1 < len(t); s++ {
		if t[s] == '.' || t[s+1] != '.' {
			continue
		}
		j := s + 2
		for j < len(t) && closers.has(t[j]) {
			j++
		}
		k := j
		for k < len(t) && isSpace(t[k]) {
			k++
		}
		if k != len(t) {
			continue
		}
		out := z.out(len(t) + 4)
		out = append(out, t[:s+1]...)
		out = append(out, ' ', '.')
		if padded {
			out = append(out, ' ')
		}
		out = append(out, t[s+2:j]...)
		return append(out, ' ')
	}
	return t
}

// colonComma is ([:,])([^\d])  -> " \1 \2".
func (z *state) colonComma(t []rune) []rune {
	if !containsAny(t, setColonComma) {
		return t
	}
	out := z.out(len(t) + 8)
	for i := 0; i < len(t); {
		if (t[i] == ':' || t[i] == ',') && i+1 < len(t) && !unicode.IsDigit(t[i+1]) {
			out = append(out, ' ', t[i], ' ', t[i+1])
			i += 2
			continue
		}
		out = append(out, t[i])
		i++
	}
	return out
}

// colonCommaAtEnd is ([:,])$ -> " \1 ", with Python's $ (end of text, or
// before a final newline).
func (z *state) colonCommaAtEnd(t []rune) []rune {
	n := len(t)
	for i := 0; i < n; i++ {
		if (t[i] == ':' || t[i] == ',') && (i == n-1 || (i == n-2 && t[n-1] == '\n')) {
			out := z.out(n + 2)
			out = append(out, t[:i]...)
			out = pad(out, t[i])
			return append(out, t[i+1:]...)
		}
	}
	return t
}

// quoteSpace is ([^'])' -> "\1 ' ".
func (z *state) quoteSpace(t []rune) []rune {
	if !slices.Contains(t, '\'') {
		return t
	}
	out := z.out(len(t) + 8)
	for i := 0; i < len(t); {
		if t[i] != '\'' && i+2 < len(t) && t[i+1] == '\'' && t[i+2] == ' ' {
			out = append(out, t[i], ' ', '\'', ' ')
			i += 3
			continue
		}
		out = append(out, t[i])
		i++
	}
	return out
}

// Clitic alternatives of the ENDING_QUOTES rules, in regex order; "'" alone
// is the last alternative of the first rule.
var (
	cliticsSMD  = runeLists("'s", "'S", "'m", "'M", "'d", "'D", "'")
	cliticsLong = runeLists("'ll", "'LL", "'re", "'RE", "'ve", "'VE", "n't", "N'T")
)

func runeLists(s ...string) [][]rune {
	out := make([][]rune, len(s))
	for i, x := range s {
		out[i] = []rune(x)
	}
	return out
}

// clitics is ([^' ])(alt1|alt2|...)<space> -> "\1 \2 ".
func (z *state) clitics(t []rune, alts [][]rune) []rune {
	if !slices.Contains(t, '\'') {
		return t
	}
	out := z.out(len(t) + 8)
	for i := 0; i < len(t); {
		if t[i] != '\'' && t[i] != ' ' {
			matched := false
			for _, l := range alts {
				if hasAt(t, i+1, l) && i+1+len(l) < len(t) && t[i+1+len(l)] == ' ' {
					out = append(out, t[i], ' ')
					out = append(out, l...)
					out = append(out, ' ')
					i += 2 + len(l)
					matched = true
					break
				}
			}
			if matched {
				continue
			}
		}
		out = append(out, t[i])
		i++
	}
	return out
}

// contraction is one MacIntyre contraction rule: case-insensitive parts a
// and b. lead is a literal space before a (CONTRACTIONS3) instead of \b;
// spaceAfter replaces the trailing \b with the lookahead (?=\s).
type contraction struct {
	a, b       string
	lead       bool
	spaceAfter bool
}

var contractions = []contraction{
	{a: "can", b: "not"},
	{a: "d", b: "'ye"},
	{a: "gim", b: "me"},
	{a: "gon", b: "na"},
	{a: "got", b: "ta"},
	{a: "lem", b: "me"},
	{a: "more", b: "'n"},
	{a: "wan", b: "na", spaceAfter: true},
	{a: "'t", b: "is", lead: true},
	{a: "'t", b: "was", lead: true},
}

func foldAt(t []rune, i int, s string) bool {
	if i+len(s) > len(t) {
		return false
	}
	for k := 0; k < len(s); k++ {
		c := s[k]
		if c >= 'a' && c <= 'z' {
			if !foldEq(t[i+k], c) {
				return false
			}
		} else if t[i+k] != rune(c) {
			return false
		}
	}
	return true
}

// splitContraction rewrites each match of the rule as " a b " (keeping the
// original letters).
func (z *state) splitContraction(t []rune, c contraction) []rune {
	// Every rule's second part ends in a letter that must be present.
	if !slices.ContainsFunc(t, func(r rune) bool { return foldEq(r, c.b[len(c.b)-1]) }) {
		return t
	}
	out := z.out(len(t) + 8)
	na, nb := len(c.a), len(c.b)
	for i := 0; i < len(t); {
		start := i
		if c.lead {
			start = i + 1
		}
		// Cheap test first: the rule's first letter (or the lead space).
		if start >= len(t) || (c.lead && t[i] != ' ') || !foldAt(t, start, c.a[:1]) ||
			(!c.lead && i > 0 && isWord(t[i-1])) {
			out = append(out, t[i])
			i++
			continue
		}
		end := start + na + nb
		ok := foldAt(t, start, c.a) && foldAt(t, start+na, c.b)
		if ok {
			if c.spaceAfter {
				ok = end < len(t) && isSpace(t[end])
			} else {
				ok = end == len(t) || !isWord(t[end])
			}
		}
		if !ok {
			out = append(out, t[i])
			i++
			continue
		}
		out = append(out, ' ')
		out = append(out, t[start:start+na]...)
		out = append(out, ' ')
		out = append(out, t[start+na:end]...)
		out = append(out, ' ')
		i = end
	}
	return out
}
