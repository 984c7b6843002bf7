package judge

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/textmetrics/porter"
)

// LexicalOptions configures the lexical judge (config keys eval.lexical.*).
type LexicalOptions struct {
	// Threshold is the share of the hypothesis's distinct stemmed content words that must occur in
	// the premise.
	Threshold float64
	// MinClauseWords is the least number of content words (numbers included) each side of a clause
	// boundary must have for Decompose to split there.
	MinClauseWords int
	// Workers is the value returned by Concurrency (0: one per CPU is decided by the caller).
	Workers int
}

// Lexical is an offline, deterministic proxy for an NLI judge. It is NOT natural language inference.
//
// Decomposition: the summary is split into sentences (at . ! ? followed by a space and a capital
// letter, digit or parenthesis, except after abbreviations such as "vs." or "et al."), and each
// sentence into clauses at "; ", ", and ", ", but ", ", while ", "whereas", ", although ",
// ", though ", ", yet ", "who", "which" and finally any comma, outside parentheses and brackets,
// wherever both sides keep at least MinClauseWords clause words: content words of two or more
// letters that are not statistical markers (p, ci, hr, rr, or, sd, iqr, n, range, ...); numbers
// do not count. So a number, an interval, a p-value or a parenthetical stays with the clause it
// qualifies ("HR 0.59; 95% CI 0.40-0.87; P = .02" is one claim, not three), a list of single
// words ("vemurafenib, cobimetinib, and atezolizumab") stays one claim, and a prepositional
// phrase ("adults with melanoma") is never cut off; the items of a list of longer phrases are
// split at its commas, as an LLM's atomic subclaims would be.
//
// Entailment: premise entails hypothesis when
//  1. at least Threshold of the hypothesis's distinct content words (lowercased; stop words,
//     generic study words such as "study", "trial", "patients", and negation cues removed;
//     Porter-stemmed as NLTK does) occur in the premise;
//  2. every number of the hypothesis occurs in the premise, after normalisation ("1,000" = "1000",
//     "50 %" = "50%" = "50 percent", ".5" = "0.5" = "0.50", "two".."ninety-nine" = 2..99); a percentage
//     in the hypothesis needs a percentage in the premise, a bare number matches either;
//  3. negation agrees: among the premise's clauses that share the most content words and numbers
//     with the hypothesis, one has the same polarity as the hypothesis. A clause or hypothesis is
//     negated by a cue among no, not, n't, never, none, nor, neither, without, cannot, lack,
//     absence, absent, fail, failed, unable (not before "estimable", "reached", "evaluable" and
//     similar jargon); a premise clause's cue only counts when one of the three content words
//     after it (before it, at the end of a clause) occurs in the hypothesis, so "survival without
//     relapse" does not negate a claim about the drugs given.
//
// A hypothesis without content words or numbers ("It was.") is entailed when all its words occur
// in the premise. Known failures, by construction: word order and roles are ignored ("A was
// compared with B" entails "B was compared with A"), synonyms and paraphrases are missed
// ("randomised" vs "assigned", "RT" vs "radiation therapy"), arithmetic is not done ("23 + 27"
// does not entail "50"), hedges ("may", "suggest") and comparatives ("higher" vs "lower") are
// words like any other, and a long premise entails almost any short hypothesis built from its
// words.
type Lexical struct {
	opts     LexicalOptions
	stems    sync.Map // string -> string
	nStems   atomic.Int64
	analyses sync.Map // string -> *analysis
	nAnal    atomic.Int64
}

// cacheCap bounds each cache of the lexical judge; a full cache is dropped and refilled, which
// keeps memory bounded on arbitrarily long runs at a small cost in speed.
const cacheCap = 1 << 17

// NewLexical returns a lexical judge.
func NewLexical(opts LexicalOptions) *Lexical {
	if opts.MinClauseWords < 1 {
		opts.MinClauseWords = 1
	}
	return &Lexical{opts: opts}
}

// Name implements Judge.
func (l *Lexical) Name() string { return "lexical" }

// Concurrency implements Judge.
func (l *Lexical) Concurrency() int { return l.opts.Workers }

// Decompose implements Judge: sentences, then clauses. A negative summary ("Unknown.") or an empty
// one has no subclaims.
func (l *Lexical) Decompose(_ context.Context, summary string) ([]string, error) {
	if dataset.IsUnknownSummary(summary) {
		return nil, nil
	}
	return slices.Clone(l.analyze(summary).claims), nil
}

// Entails implements Judge.
func (l *Lexical) Entails(_ context.Context, premise, hypothesis string) (bool, error) {
	return l.entails(l.analyze(premise), l.analyze(hypothesis)), nil
}

func (l *Lexical) entails(p, h *analysis) bool {
	if len(h.content) == 0 && len(h.nums) == 0 {
		if len(h.words) == 0 {
			return false
		}
		for w := range h.words {
			if _, ok := p.words[w]; !ok {
				return false
			}
		}
		return l.negationAgrees(p, h)
	}
	for v, pct := range h.nums {
		ppct, ok := p.nums[v]
		if !ok || (pct && !ppct) {
			return false
		}
	}
	if len(h.content) > 0 {
		hit := 0
		for w := range h.content {
			if _, ok := p.content[w]; ok {
				hit++
			}
		}
		if float64(hit) < l.opts.Threshold*float64(len(h.content))-1e-9 {
			return false
		}
	}
	return l.negationAgrees(p, h)
}

// negationAgrees looks for a premise clause of the hypothesis's polarity among the clauses that
// overlap the hypothesis most: a negation elsewhere in a long premise must not veto a claim, and
// a negated claim must be backed by a negated clause about the same thing.
func (l *Lexical) negationAgrees(p, h *analysis) bool {
	best, agree := -1, false
	onlyWords := len(h.content) == 0 && len(h.nums) == 0
	for _, u := range p.units {
		o := 0
		if onlyWords {
			for _, w := range u.words {
				if _, ok := h.words[w]; ok {
					o++
				}
			}
		} else {
			for _, w := range u.content {
				if _, ok := h.content[w]; ok {
					o++
				}
			}
			for _, v := range u.nums {
				if _, ok := h.nums[v]; ok {
					o++
				}
			}
		}
		neg := u.neg && governs(u.negScope, h)
		switch {
		case o > best:
			best, agree = o, neg == h.neg
		case o == best && neg == h.neg:
			agree = true
		}
	}
	return agree
}

// governs reports whether a premise clause's negation is about the hypothesis: its scope shares a
// content word or a number with it ("survival without relapse" is not a negation of a claim about
// the drugs given). A cue with an empty scope always counts.
func governs(scope []string, h *analysis) bool {
	if len(scope) == 0 {
		return true
	}
	for _, x := range scope {
		if _, ok := h.content[x]; ok {
			return true
		}
		if _, ok := h.nums[x]; ok {
			return true
		}
	}
	return false
}

// analysis is what the judge knows of a text: the union of its clauses' features (sets, for
// lookups) and each clause's features (distinct items, for the negation check).
type analysis struct {
	content map[string]struct{} // stemmed content words
	nums    map[string]bool     // normalised number -> seen as a percentage
	words   map[string]struct{} // every lowercased word, stop words included
	neg     bool
	units   []unitFeatures
	claims  []string // the clause texts: what Decompose returns
}

type unitFeatures struct {
	content, nums, words []string
	neg                  bool
	// negScope holds the content stems and numbers a negation cue governs: the next negScopeLen
	// after it in the clause, or the previous ones when the cue ends the clause ("... did
	// neither"). Empty when the cue governs nothing.
	negScope []string
}

// negScopeLen is how many content tokens a negation cue governs.
const negScopeLen = 3

func (l *Lexical) analyze(text string) *analysis {
	if a, ok := l.analyses.Load(text); ok {
		return a.(*analysis)
	}
	sents := splitSentences(text)
	toksOf := make([][]token, len(sents))
	total := 0
	for i, sent := range sents {
		toksOf[i] = scan(sent)
		total += len(toksOf[i])
	}
	a := &analysis{content: make(map[string]struct{}, total), nums: map[string]bool{}, words: make(map[string]struct{}, total)}
	// One backing array for the per-clause lists: each clause takes at most its token count.
	backing := make([]string, 0, 4*total)
	take := func(n int) []string {
		s := backing[len(backing) : len(backing) : len(backing)+n]
		backing = backing[:len(backing)+n]
		return s
	}
	for i, sent := range sents {
		toks := toksOf[i]
		k := 0
		for _, span := range l.clauseSpans(sent, toks) {
			if c := trimUnit(sent[span[0]:span[1]]); c != "" {
				a.claims = append(a.claims, c)
			}
			m := 0 // tokens in this clause
			for q := k; q < len(toks) && toks[q].start < span[1]; q++ {
				m++
			}
			f := unitFeatures{content: take(m), nums: take(m), words: take(m)}
			keys := take(m) // content stems and numbers in order
			var cues []int  // len(keys) at each negation cue
			for ; k < len(toks) && toks[k].start < span[1]; k++ {
				t := toks[k]
				if t.start < span[0] {
					continue // inside the separator
				}
				switch {
				case t.num:
					if _, seen := a.nums[t.text]; !seen || t.pct {
						a.nums[t.text] = a.nums[t.text] || t.pct
					}
					f.nums = appendNew(f.nums, t.text)
					keys = append(keys, t.text)
				default:
					if negationCues[t.text] && !(k+1 < len(toks) && notNegated[toks[k+1].text]) {
						f.neg = true
						cues = append(cues, len(keys))
					}
					a.words[t.text] = struct{}{}
					f.words = appendNew(f.words, t.text)
					if !stopWords[t.text] && !negationCues[t.text] {
						st := l.stem(t.text)
						a.content[st] = struct{}{}
						f.content = appendNew(f.content, st)
						keys = append(keys, st)
					}
				}
			}
			for _, c := range cues {
				scope := keys[c:min(c+negScopeLen, len(keys))]
				if len(scope) == 0 {
					scope = keys[max(0, c-negScopeLen):c]
				}
				for _, x := range scope {
					f.negScope = appendNew(f.negScope, x)
				}
			}
			if len(f.words) > 0 || len(f.nums) > 0 {
				a.neg = a.neg || f.neg
				a.units = append(a.units, f)
			}
		}
	}
	if l.nAnal.Add(1) > cacheCap {
		l.analyses.Clear()
		l.nAnal.Store(0)
	}
	l.analyses.Store(text, a)
	return a
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func (l *Lexical) stem(w string) string {
	if s, ok := l.stems.Load(w); ok {
		return s.(string)
	}
	s := porter.Stem(w)
	if l.nStems.Add(1) > cacheCap {
		l.stems.Clear()
		l.nStems.Store(0)
	}
	l.stems.Store(w, s)
	return s
}

// abbreviations never end a sentence when followed by a period.
var abbreviations = map[string]bool{
	"vs": true, "e.g": true, "i.e": true, "al": true, "approx": true, "fig": true, "no": true,
	"nos": true, "dr": true, "mr": true, "ms": true, "st": true, "ca": true, "cf": true, "resp": true,
}

// splitSentences splits at . ! ? followed by white space and an upper-case letter, a digit or an
// opening parenthesis, unless the period closes an abbreviation or an initial.
func splitSentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		j := i + 1
		for j < len(text) && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r') {
			j++
		}
		if j == i+1 || j >= len(text) {
			continue
		}
		r, _ := utf8.DecodeRuneInString(text[j:])
		if !unicode.IsUpper(r) && !unicode.IsDigit(r) && r != '(' {
			continue
		}
		if c == '.' {
			k := i
			for k > start {
				pr, size := utf8.DecodeLastRuneInString(text[:k])
				if !unicode.IsLetter(pr) && pr != '.' {
					break
				}
				k -= size
			}
			word := strings.ToLower(text[k:i])
			if abbreviations[word] || (utf8.RuneCountInString(word) == 1 && unicode.IsUpper([]rune(text[k:i])[0])) {
				continue
			}
		}
		if s := trimUnit(text[start : i+1]); s != "" {
			out = append(out, s)
		}
		start = j
		i = j - 1
	}
	if s := trimUnit(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// clauseSeparators are the boundaries where a sentence may be split; the separator is dropped (the
// right clause starts after it). "and", "with", "including" and "followed by" are not among them:
// they join phrases far more often than clauses. A comma is, last, for the items of a list of
// phrases, each of which an LLM's decomposition makes a subclaim of its own.
var clauseSeparators = []string{
	"; ", ", and ", ", but ", ", while ", ", whereas ", " whereas ", ", although ", ", though ", ", yet ",
	", who ", " who ", ", which ", " which ", ", ",
}

// statMarkers are words of statistical reporting that do not make a clause of a number
// ("95% CI 0.40-0.87", "HR 0.59", "P = .02", "median 12 (range 3-40)").
var statMarkers = setOf("ci", "hr", "rr", "or", "sd", "se", "sem", "iqr", "range", "ratio", "interval",
	"confidence", "95", "aor", "ahr", "irr", "nnt", "vs", "versus")

// clauseWord reports whether t counts towards a clause's MinClauseWords.
func (t token) clauseWord() bool {
	return !t.num && t.content() && utf8.RuneCountInString(t.text) > 1 && !statMarkers[t.text]
}

// clauseSpans returns the byte spans of the clauses of a sentence whose tokens are toks: a cut at a
// separator outside parentheses and brackets is made, left to right, when the clause so far and
// the rest of the sentence both keep MinClauseWords clause words.
func (l *Lexical) clauseSpans(sentence string, toks []token) [][2]int {
	// cum[k] = clause words among toks[:k].
	cum := make([]int, len(toks)+1)
	for k, t := range toks {
		cum[k+1] = cum[k]
		if t.clauseWord() {
			cum[k+1]++
		}
	}
	// contentIn counts the content tokens lying entirely inside [from, to).
	contentIn := func(from, to int) int {
		a := sort.Search(len(toks), func(k int) bool { return toks[k].start >= from })
		b := sort.Search(len(toks), func(k int) bool { return toks[k].end > to })
		if b < a {
			return 0
		}
		return cum[b] - cum[a]
	}
	var spans [][2]int
	start, depth := 0, 0
	for pos := 0; pos < len(sentence); pos++ {
		switch sentence[pos] {
		case '(', '[':
			depth++
		case ')', ']':
			depth = max(0, depth-1)
		}
		if c := sentence[pos]; depth > 0 || (c != ',' && c != ';' && c != ' ') {
			continue // every separator starts with one of these, outside brackets
		}
		plen := 0
		for _, sep := range clauseSeparators {
			if hasPrefixFoldASCII(sentence[pos:], sep) {
				plen = len(sep)
				break
			}
		}
		if plen == 0 || pos < start {
			continue
		}
		// A bare comma separates list items: the item after it (up to the next comma) must be a
		// claim of its own, not one word of a list.
		itemEnd := len(sentence)
		if sentence[pos:pos+plen] == ", " {
			if k := strings.IndexByte(sentence[pos+plen:], ','); k >= 0 {
				itemEnd = pos + plen + k
			}
		}
		if contentIn(start, pos) >= l.opts.MinClauseWords && contentIn(pos+plen, len(sentence)) >= l.opts.MinClauseWords &&
			contentIn(pos+plen, itemEnd) >= l.opts.MinClauseWords {
			spans = append(spans, [2]int{start, pos})
			start = pos + plen
			pos = start - 1
		}
	}
	return append(spans, [2]int{start, len(sentence)})
}

// hasPrefixFoldASCII reports whether s starts with the lower-case ASCII prefix, ignoring the case
// of ASCII letters in s (byte offsets stay those of s).
func hasPrefixFoldASCII(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

func trimUnit(s string) string {
	return strings.TrimRight(strings.TrimSpace(s), " ,;:")
}

// token is a lowercased word or a normalised number, with its byte span in the scanned text.
type token struct {
	text       string
	num        bool
	pct        bool
	start, end int
}

func (t token) content() bool { return t.num || (!stopWords[t.text] && !negationCues[t.text]) }

// numberWords are spelled-out numbers read as digits ("one" is left out: "one of the" is not a
// count). Tens combine with a hyphenated unit: "twenty-five" is 25.
var numberWords = map[string]string{
	"two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
	"nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13", "fourteen": "14",
	"fifteen": "15", "sixteen": "16", "seventeen": "17", "eighteen": "18", "nineteen": "19",
	"twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
	"eighty": "80", "ninety": "90",
}

var tens = setOf("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")

var units = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}

// scan tokenizes text into lowercased words (letters and digits, starting with a letter: "v600e")
// and normalised numbers (digits not glued to a preceding letter: "1,000.50 %" -> "1000.5" pct).
// "n't" becomes the word "not"; "percent" after a number marks it as a percentage.
func scan(text string) []token {
	s := &scanner{text: text, n: len(text), out: make([]token, 0, len(text)/6+1)}
	for i := 0; i < s.n; {
		r, size := s.at(i)
		switch {
		case unicode.IsLetter(r):
			i = s.word(i)
		case s.isDigit(i) || (r == '.' && s.isDigit(i+1) && !s.isDigit(i-1)):
			i = s.number(i)
		default:
			i += size
		}
	}
	return s.out
}

// scanner is scan's state: the text, the tokens so far, and the digits of the number being read
// (a buffer reused from one number to the next).
type scanner struct {
	text string
	n    int
	out  []token
	num  []byte
}

// at decodes the rune at byte i (RuneError, 0 past the end).
func (s *scanner) at(i int) (rune, int) {
	if i >= s.n {
		return utf8.RuneError, 0
	}
	if c := s.text[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s.text[i:])
}

func (s *scanner) isDigit(i int) bool {
	return i >= 0 && i < s.n && s.text[i] >= '0' && s.text[i] <= '9'
}

func (s *scanner) isLetter(i int) bool { r, _ := s.at(i); return i < s.n && unicode.IsLetter(r) }

// word reads the word starting at byte i (a letter) and returns the byte after it: a word token,
// a number written in words, or a "percent" that marks the number before it.
func (s *scanner) word(i int) int {
	text, n := s.text, s.n
	j := i
	for j < n {
		r2, sz := s.at(j)
		if !unicode.IsLetter(r2) && !unicode.IsDigit(r2) {
			break
		}
		j += sz
	}
	w := strings.ToLower(text[i:j])
	// n't: "didn't" -> "didn" "not"; the apostrophe and t are consumed here.
	if r2, sz := s.at(j); (r2 == '\'' || r2 == '\u2019') && j+sz < n && (text[j+sz] == 't' || text[j+sz] == 'T') &&
		strings.HasSuffix(w, "n") && !s.isLetter(j+sz+1) {
		s.out = append(s.out, token{text: w, start: i, end: j}, token{text: "not", start: j, end: j + sz + 1})
		return j + sz + 1
	}
	switch {
	case (w == "percent" || w == "pct") && len(s.out) > 0 && s.out[len(s.out)-1].num:
		s.out[len(s.out)-1].pct = true
		s.out[len(s.out)-1].end = j
	case tens[w] && j+1 < n && text[j] == '-' && s.isLetter(j+1):
		e := j + 1
		for e < n {
			r2, sz := s.at(e)
			if !unicode.IsLetter(r2) {
				break
			}
			e += sz
		}
		if u, ok := units[strings.ToLower(text[j+1:e])]; ok {
			v := int(numberWords[w][0]-'0')*10 + u
			s.out = append(s.out, token{text: strconv.Itoa(v), num: true, start: i, end: e})
			j = e
		} else {
			s.out = append(s.out, token{text: numberWords[w], num: true, start: i, end: j})
		}
	case numberWords[w] != "":
		s.out = append(s.out, token{text: numberWords[w], num: true, start: i, end: j})
	default:
		s.out = append(s.out, token{text: w, start: i, end: j})
	}
	return j
}

// number reads the number starting at byte i (a digit, or a point before one) and returns the
// byte after it: thousands separators dropped, the fraction normalised, a "%" after it (spaces
// allowed) marking it as a percentage.
func (s *scanner) number(i int) int {
	text, n := s.text, s.n
	j := i
	s.num = s.num[:0]
	for s.isDigit(j) {
		j++
	}
	s.num = append(s.num, text[i:j]...)
	// Thousands separators: a comma followed by exactly three digits.
	for j > i && j+3 < n && text[j] == ',' && s.isDigit(j+1) && s.isDigit(j+2) && s.isDigit(j+3) && !s.isDigit(j+4) {
		s.num = append(s.num, text[j+1:j+4]...)
		j += 4
	}
	intLen := len(s.num)
	if j < n && text[j] == '.' && s.isDigit(j+1) {
		j++
		for s.isDigit(j) {
			s.num = append(s.num, text[j])
			j++
		}
	}
	k := j
	for k < n {
		r2, sz := s.at(k)
		if r2 != ' ' && r2 != '\u00a0' && r2 != '\u2009' && r2 != '\u202f' {
			break
		}
		k += sz
	}
	pct := false
	if r2, sz := s.at(k); r2 == '%' || r2 == '\uff05' {
		pct = true
		j = k + sz
	}
	s.out = append(s.out, token{text: normalizeNumber(string(s.num[:intLen]), string(s.num[intLen:])), num: true, pct: pct, start: i, end: j})
	return j
}

func normalizeNumber(intPart, frac string) string {
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	frac = strings.TrimRight(frac, "0")
	if frac == "" {
		return intPart
	}
	return intPart + "." + frac
}

// negationCues flip the polarity of the clause they occur in.
var negationCues = setOf("no", "not", "never", "none", "nor", "neither", "without", "cannot",
	"lack", "lacked", "lacking", "absence", "absent", "fail", "failed", "fails", "unable")

// notNegated are the words after which a cue is statistical jargon, not a negation: "not
// estimable", "not reached" (a median not reached), "not evaluable", ...
var notNegated = setOf("estimable", "estimated", "reached", "evaluable", "applicable", "available",
	"calculable", "assessable", "done")

// stopWords carry no content for the coverage test.
var stopWords = setOf(
	"a", "an", "the", "and", "or", "but", "if", "then", "than", "so", "as", "of", "in", "on", "at",
	"to", "for", "from", "by", "with", "within", "into", "onto", "over", "under", "about", "after",
	"before", "during", "between", "among", "through", "per", "via", "upon", "across", "against",
	"is", "are", "was", "were", "be", "been", "being", "am", "has", "have", "had", "having", "do",
	"does", "did", "doing", "done", "will", "would", "shall", "should", "can", "could", "may",
	"might", "must", "it", "its", "this", "that", "these", "those", "there", "here", "which", "who",
	"whom", "whose", "what", "when", "where", "while", "whereas", "how", "why", "they", "them",
	"their", "theirs", "he", "she", "his", "her", "hers", "him", "we", "our", "ours", "us", "i", "me",
	"my", "you", "your", "also", "both", "each", "either", "all", "any", "some", "such", "only",
	"other", "another", "same", "very", "more", "most", "s", "t", "well", "one", "overall", "respectively", "whether", "although",
	"though", "yet", "because", "since", "until", "further", "furthermore", "however", "thus",
	"therefore", "up", "out", "down", "off", "again", "once", "didn", "doesn", "don",
	"wasn", "weren", "isn", "aren", "hasn", "haven", "hadn", "couldn", "wouldn", "shouldn", "won",
	// Generic study words: summaries and abstracts use them interchangeably ("the study included"
	// vs "this trial enrolled"), so requiring them would reject good citations.
	"study", "studies", "patients", "patient", "participants", "participant", "subjects", "trial",
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
