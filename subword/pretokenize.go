package subword

import (
	"unicode"
	"unicode/utf8"
)

// This file re-implements, without regular expressions or allocations, the pre-tokenizers that
// sugarme/tokenizer applies for the tokenizer.json files we write. Training must split words exactly
// as the library does at encoding time, and the native encoder must produce the library's ids; the
// tests compare both against the library on varied text.

// byteLevelPieces calls yield with each byte-level pre-token of s, after adding the prefix space
// (ByteLevel pre-tokenizer with add_prefix_space=true). The pieces are the matches of GPT-2's regexp
// as sugarme writes it (Go RE2 syntax, leftmost-first alternation)
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
//
// and the unmatched gaps between them (Isolated split behaviour). In RE2, \s is ASCII whitespace
// only. A piece may be a sub-slice of an internal " "+s copy, so yield must not retain it past the
// call unless it copies it.
func byteLevelPieces(s string, yield func(piece string)) {
	if len(s) == 0 || s[0] != ' ' {
		s = " " + s
	}
	gapStart := -1
	for i := 0; i < len(s); {
		n := matchByteLevel(s, i)
		if n == 0 {
			if gapStart < 0 {
				gapStart = i
			}
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			continue
		}
		if gapStart >= 0 {
			yield(s[gapStart:i])
			gapStart = -1
		}
		yield(s[i : i+n])
		i += n
	}
	if gapStart >= 0 {
		yield(s[gapStart:])
	}
}

// matchByteLevel returns the length of the GPT-2 regexp match starting at s[i], or 0.
func matchByteLevel(s string, i int) int {
	if s[i] == '\'' {
		rest := s[i+1:]
		for _, c := range [...]string{"s", "t", "re", "ve", "m", "ll", "d"} {
			if len(rest) >= len(c) && rest[:len(c)] == c {
				return 1 + len(c)
			}
		}
	}
	j := i
	if s[j] == ' ' {
		j++
		if j == len(s) {
			return 0
		}
	}
	r, size := utf8.DecodeRuneInString(s[j:])
	var class func(rune) bool
	switch {
	case unicode.IsLetter(r):
		class = unicode.IsLetter
	case unicode.IsNumber(r):
		class = unicode.IsNumber
	case isOtherByteLevel(r):
		class = isOtherByteLevel
	default:
		return 0
	}
	j += size
	for j < len(s) {
		r, size = utf8.DecodeRuneInString(s[j:])
		if !class(r) {
			break
		}
		j += size
	}
	return j - i
}

// isOtherByteLevel is [^\s\p{L}\p{N}] in RE2 syntax.
func isOtherByteLevel(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\f', '\r':
		return false
	}
	return !unicode.IsLetter(r) && !unicode.IsNumber(r)
}

// bertPieces calls yield with each word of s as the BERT normaliser (clean_text,
// handle_chinese_chars, cased, accents kept) and BertPreTokenizer produce them: split on whitespace
// (removed) and isolate every punctuation character and CJK ideograph. Pieces are sub-slices of s.
func bertPieces(s string, yield func(piece string)) {
	start := -1
	flush := func(end int) {
		if start >= 0 {
			yield(s[start:end])
			start = -1
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0 || r == utf8.RuneError || isBertControl(r):
			// The BERT normaliser removes these. Clean has already dropped them all, so a word is
			// never split around a removed character in practice.
			flush(i)
		case r == ' ' || r == '\t' || r == '\n' || r == '\f' || r == '\r':
			flush(i)
		case isBertPunctuation(r) || isCJK(r):
			flush(i)
			yield(s[i : i+size])
		default:
			if start < 0 {
				start = i
			}
		}
		i += size
	}
	flush(len(s))
}

// isBertControl mirrors sugarme's normalizer.isControl.
func isBertControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	if r < 0x7f {
		return r < 0x20
	}
	return unicode.In(r, unicode.Cc, unicode.Cf)
}

// isBertPunctuation mirrors sugarme's normalizer.IsBertPunctuation: ASCII punctuation and symbols
// plus Unicode category P.
func isBertPunctuation(r rune) bool {
	if (r >= 0x21 && r <= 0x2f) || (r >= 0x3a && r <= 0x40) || (r >= 0x5b && r <= 0x60) || (r >= 0x7b && r <= 0x7e) {
		return true
	}
	if r < 0x80 {
		return false
	}
	return unicode.Is(unicode.P, r)
}

// isCJK mirrors sugarme's handle_chinese_chars test, including its table (a verbatim copy): the
// ranges are not sorted, and unicode.In stops scanning at the first range above the rune, so CJK
// Extension A (U+3400-U+4DBF) is never matched. Matching the library matters more than the intent.
func isCJK(r rune) bool {
	return r >= 0x3400 && unicode.In(r, sugarmeCJK)
}

var sugarmeCJK = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x4e00, Hi: 0x9fff, Stride: 1},
		{Lo: 0x3400, Hi: 0x4dbf, Stride: 1},
		{Lo: 0xf900, Hi: 0xfaff, Stride: 1},
	},
	R32: []unicode.Range32{
		{Lo: 0x20000, Hi: 0x2a6df, Stride: 1},
		{Lo: 0x2a700, Hi: 0x2b73f, Stride: 1},
		{Lo: 0x2b740, Hi: 0x2b81f, Stride: 1},
		{Lo: 0x2b820, Hi: 0x2ceaf, Stride: 1},
		{Lo: 0x2f800, Hi: 0x2fa1f, Stride: 1},
	},
}

// byteChars maps each byte to the printable rune that stands for it in byte-level BPE vocabularies
// (GPT-2's bytes_to_unicode): printable Latin-1 bytes map to themselves, the others to U+0100 and up.
var byteChars, charBytes = func() ([256]string, map[rune]byte) {
	var bc [256]string
	cb := make(map[rune]byte, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) {
			r = next
			next++
		}
		bc[b] = string(r)
		cb[r] = byte(b)
	}
	return bc, cb
}()
