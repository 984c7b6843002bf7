package subword

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Clean returns the text that Encode actually tokenizes: valid UTF-8 in Unicode NFC form, with
// control, format (BOM, zero-width, soft hyphen), private-use and unassigned code points dropped,
// every kind of Unicode whitespace turned into an ASCII space, runs of spaces collapsed and the ends
// trimmed. It is idempotent.
//
// Why: sugarme/tokenizer panics or calls log.Fatal on some inputs with control characters, a BOM
// or stray combining marks, and whitespace variants (tabs, no-break spaces, line separators) would
// otherwise become distinct tokens. Decoding a byte-level BPE encoding returns exactly Clean(text).
func Clean(s string) string {
	if isClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	space := true // drops leading spaces and collapses runs
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1:
			// Invalid byte: dropped rather than replaced, because U+FFFD is itself removed by the
			// BERT normaliser and would make the two kinds disagree.
		case isSpace(r):
			if !space {
				b.WriteByte(' ')
				space = true
			}
		case dropRune(r):
		default:
			b.WriteRune(r)
			space = false
		}
	}
	out := strings.TrimRight(b.String(), " ")
	if !norm.NFC.IsNormalString(out) {
		// Composition never creates spaces or dropped classes (NFC maps assigned characters to
		// assigned characters), so one pass keeps Clean idempotent.
		out = norm.NFC.String(out)
	}
	out, _ = BreakLongWords(out)
	return out
}

// MaxWordBytes is the longest run of non-space bytes that Clean lets through: longer runs are
// broken by a space every MaxWordBytes bytes or less. Byte-level BPE merging and vocabulary
// learning cost memory and time per word length (an unbroken 50 MB "word" in an input took 50 s and
// 5.9 GB in prepare), while no real word, chemical name or URL of an abstract comes near 256 bytes.
const MaxWordBytes = 256

// BreakLongWords inserts an ASCII space into every run of more than MaxWordBytes bytes without an
// ASCII space, at a rune boundary (before a combining mark only when a run of marks leaves no
// other choice), and returns the result with the number of runs it broke. Text without such a run
// is returned as is, without allocating.
func BreakLongWords(s string) (string, int) {
	run, long := 0, false
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			run = 0
		} else if run++; run > MaxWordBytes {
			long = true
			break
		}
	}
	if !long {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/MaxWordBytes + 1)
	broken := 0
	for len(s) > 0 {
		sp := strings.IndexByte(s, ' ')
		word := s
		if sp >= 0 {
			word = s[:sp+1]
		}
		s = s[len(word):]
		if len(strings.TrimSuffix(word, " ")) > MaxWordBytes {
			broken++
		}
		for len(strings.TrimSuffix(word, " ")) > MaxWordBytes {
			cut := wordCut(word)
			b.WriteString(word[:cut])
			b.WriteByte(' ')
			word = word[cut:]
		}
		b.WriteString(word)
	}
	return b.String(), broken
}

// wordCut returns where to break a word longer than MaxWordBytes: the last rune boundary at or
// before MaxWordBytes that does not put a combining mark at the start of the next piece (searched
// over the last 32 bytes), else the last rune boundary.
func wordCut(word string) int {
	cut := MaxWordBytes
	for cut > 0 && !utf8.RuneStart(word[cut]) {
		cut--
	}
	if cut == 0 {
		// Invalid UTF-8 (no rune start in MaxWordBytes bytes): cut at the byte limit.
		return MaxWordBytes
	}
	for c := cut; c > 0 && c > MaxWordBytes-32; {
		r, _ := utf8.DecodeRuneInString(word[c:])
		if !unicode.Is(unicode.M, r) {
			return c
		}
		_, size := utf8.DecodeLastRuneInString(word[:c])
		c -= size
	}
	return cut
}

// isClean reports whether s is printable ASCII without leading, trailing or double spaces and
// without a word longer than MaxWordBytes: the common case for English abstracts, which Clean then
// returns without allocating.
func isClean(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	prevSpace := false
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return false
		}
		if c == ' ' {
			if prevSpace {
				return false
			}
			prevSpace, run = true, 0
		} else if prevSpace, run = false, run+1; run > MaxWordBytes {
			return false
		}
	}
	return true
}

// isSpace reports Unicode whitespace: ASCII whitespace, U+0085, no-break and other Zs spaces, and
// the line/paragraph separators.
func isSpace(r rune) bool {
	return unicode.IsSpace(r) || unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp)
}

// dropRune reports code points that carry no visible text and that the tokenizer library mishandles:
// controls (Cc), format characters (Cf: BOM, zero-width joiners, soft hyphen, bidi marks),
// surrogates, private use, noncharacters, unassigned code points and U+FFFD.
func dropRune(r rune) bool {
	if r < 0x7f {
		return r < 0x20
	}
	if r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Cs, unicode.Co) {
		return true
	}
	if r&0xfffe == 0xfffe || (r >= 0xfdd0 && r <= 0xfdef) {
		return true
	}
	// Unassigned code points: no Unicode category contains them.
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}
