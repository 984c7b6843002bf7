package rouge

import (
	"unicode/utf8"

	"github.com/tracksum/tracksum/textmetrics/porter"
)

// minStemLen is rouge-score's rule: only tokens longer than 3 characters are
// stemmed ("Only stem words more than 3 characters long").
const minStemLen = 4

// Tokenize splits text the way rouge-score's default tokenizer does:
// Python's str.lower(), every run of characters other than [a-z0-9] becomes a
// separator, and with stem set each token of 4 or more characters is replaced
// by its Porter stem (NLTK mode). Tokens are therefore ASCII only: accented
// letters, non-Latin scripts and symbols split words ("naïve" -> "na", "ve").
func Tokenize(text string, stem bool) []string {
	var toks []string
	var buf []byte
	emit := func() {
		if len(buf) == 0 {
			return
		}
		tok := string(buf)
		if stem && len(tok) >= minStemLen {
			tok = porter.Stem(tok)
		}
		if tok != "" {
			toks = append(toks, tok)
		}
		buf = buf[:0]
	}
	scanTokens(text, &buf, func(bool) { emit() })
	emit()
	return toks
}

// scanTokens appends the lowercase ASCII characters of text's tokens to
// *buf, calling end whenever a token may end (at every separator; newline
// reports true so callers can split sentences for ROUGE-Lsum). It mirrors
// rouge-score's text.lower() followed by re.sub(r"[^a-z0-9]+", " ", ...):
// the only non-ASCII characters whose Python lowercase contains [a-z0-9] are
// U+0130 ("i" + combining dot, so the dot then separates) and the Kelvin sign
// U+212A ("k"), measured on CPython 3.11 / Unicode 14.
func scanTokens(text string, buf *[]byte, end func(newline bool)) {
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
				*buf = append(*buf, c)
			case c >= 'A' && c <= 'Z':
				*buf = append(*buf, c+('a'-'A'))
			default:
				end(c == '\n')
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch r {
		case 0x130: // LATIN CAPITAL LETTER I WITH DOT ABOVE -> "i\u0307"
			*buf = append(*buf, 'i')
			end(false)
		case 0x212A: // KELVIN SIGN -> "k"
			*buf = append(*buf, 'k')
		default:
			end(false)
		}
	}
}
