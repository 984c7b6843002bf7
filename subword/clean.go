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
	return out
}

// isClean reports whether s is printable ASCII without leading, trailing or double spaces: the
// common case for English abstracts, which Clean then returns without allocating.
func isClean(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	prevSpace := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return false
		}
		if c == ' ' {
			if prevSpace {
				return false
			}
			prevSpace = true
		} else {
			prevSpace = false
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
