package subword

import "unicode/utf8"

// UTF8Guard is a decoding constraint for byte-level BPE: a model that generates pieces one at a
// time may start a multi-byte character (the first byte of an emoji, say) and continue with
// anything else, which Decode can only render as U+FFFD. The guard tracks the bytes of the
// character left incomplete by the pieces fed so far and lets through only the pieces that
// continue it validly (and no end of sequence until it is complete); with no character pending it
// forbids pieces that start with a continuation byte. WordPiece vocabularies hold whole
// characters, so their guard allows everything. A UTF8Guard is read-only and safe for concurrent
// use; the per-hypothesis state is a UTF8State value.
type UTF8Guard struct {
	bytes [][]byte // the bytes of each token (nil for special tokens)
	// alone[id]: the token is allowed when no character is pending: it starts with no
	// continuation byte and is valid UTF-8 up to at most one incomplete final character.
	alone []bool
	// contIDs lists the tokens that start with a continuation byte: the only candidates while a
	// character is pending.
	contIDs []int32
	off     bool
}

// UTF8State holds the bytes of the incomplete character at the end of the pieces fed so far
// (N == 0: none). The zero value is the state of an empty sequence.
type UTF8State struct {
	B [utf8.UTFMax]byte
	N int8
}

// NewUTF8Guard builds the guard of the tokenizer's vocabulary.
func (t *Tokenizer) NewUTF8Guard() *UTF8Guard {
	v := t.vocab
	g := &UTF8Guard{bytes: make([][]byte, len(v.tokens)), alone: make([]bool, len(v.tokens)), off: v.kind != KindBPE}
	for id := v.nSpecial; id < len(v.tokens); id++ {
		var b []byte
		for _, r := range v.tokens[id] {
			c, ok := charBytes[r]
			if !ok {
				b = utf8.AppendRune(b, r) // not a byte-level token: its text as is
				continue
			}
			b = append(b, c)
		}
		g.bytes[id] = b
		if len(b) > 0 && isContinuation(b[0]) {
			g.contIDs = append(g.contIDs, int32(id))
			continue
		}
		_, ok := completeUTF8(UTF8State{}, b)
		g.alone[id] = ok
	}
	return g
}

func isContinuation(c byte) bool { return c&0xC0 == 0x80 }

// completeUTF8 appends b to the pending bytes of s and reports whether the result is valid UTF-8
// up to at most one incomplete (but so far valid) final character, returned as the new state.
func completeUTF8(s UTF8State, b []byte) (UTF8State, bool) {
	buf := make([]byte, 0, int(s.N)+len(b))
	buf = append(buf, s.B[:s.N]...)
	buf = append(buf, b...)
	for len(buf) > 0 {
		r, size := utf8.DecodeRune(buf)
		if r != utf8.RuneError || size > 1 {
			buf = buf[size:]
			continue
		}
		// An error: valid only as the prefix of a character cut by the end of buf.
		if len(buf) >= utf8.UTFMax || !validPrefix(buf) {
			return UTF8State{}, false
		}
		var out UTF8State
		out.N = int8(copy(out.B[:], buf))
		return out, true
	}
	return UTF8State{}, true
}

// validPrefix reports whether p (shorter than a full character) can be completed into a valid
// UTF-8 encoding: some continuation makes it decode as one rune of its full length.
func validPrefix(p []byte) bool {
	var n int
	switch c := p[0]; {
	case c >= 0xC2 && c <= 0xDF:
		n = 2
	case c >= 0xE0 && c <= 0xEF:
		n = 3
	case c >= 0xF0 && c <= 0xF4:
		n = 4
	default:
		return false
	}
	if len(p) >= n {
		return false
	}
	// Try the smallest and largest continuations: the valid second-byte range of each lead byte
	// (overlongs, surrogates, > U+10FFFF excluded) is an interval within 0x80-0xBF.
	for _, fill := range [...]byte{0x80, 0xBF, 0x90, 0x9F, 0xA0, 0x8F} {
		full := append([]byte(nil), p...)
		for len(full) < n {
			full = append(full, fill)
		}
		if r, size := utf8.DecodeRune(full); r != utf8.RuneError && size == n {
			return true
		}
	}
	return false
}

// Next returns the state after feeding token id (special tokens leave it unchanged; an invalid
// continuation, which the guard's Apply never lets through, resets it).
func (g *UTF8Guard) Next(s UTF8State, id int32) UTF8State {
	if g.off || int(id) < 0 || int(id) >= len(g.bytes) || g.bytes[id] == nil {
		return s
	}
	out, ok := completeUTF8(s, g.bytes[id])
	if !ok {
		return UTF8State{}
	}
	return out
}

// Allowed reports whether token id may follow state s; eos is the end-of-sequence id.
func (g *UTF8Guard) Allowed(s UTF8State, id, eos int32) bool {
	if g.off || int(id) < 0 || int(id) >= len(g.bytes) {
		return true
	}
	if g.bytes[id] == nil {
		return id != eos || s.N == 0
	}
	if s.N == 0 {
		return g.alone[id]
	}
	_, ok := completeUTF8(s, g.bytes[id])
	return ok && isContinuation(g.bytes[id][0])
}

// Apply zeroes in probs (a distribution over the vocabulary) the tokens that may not follow state
// s and renormalises. When every allowed token already has probability 0 (the model puts no mass
// on any valid continuation), probs is left as it was: a forced choice among impossible tokens
// would be arbitrary, and Decode then marks the broken character with U+FFFD.
func (g *UTF8Guard) Apply(probs []float32, s UTF8State, eos int32) {
	if g.off {
		return
	}
	if s.N == 0 {
		var kept float64
		for id, p := range probs {
			if p != 0 && g.Allowed(s, int32(id), eos) {
				kept += float64(p)
			}
		}
		if kept <= 0 {
			return
		}
		for id, p := range probs {
			if p != 0 && !g.Allowed(s, int32(id), eos) {
				probs[id] = 0
			}
		}
		scale(probs, kept)
		return
	}
	var kept float64
	for _, id := range g.contIDs {
		if int(id) < len(probs) && probs[id] != 0 && g.Allowed(s, id, eos) {
			kept += float64(probs[id])
		}
	}
	if kept <= 0 {
		return
	}
	for id, p := range probs {
		if p != 0 && !g.Allowed(s, int32(id), eos) {
			probs[id] = 0
		}
	}
	scale(probs, kept)
}

// scale multiplies probs by 1/sum.
func scale(probs []float32, sum float64) {
	f := float32(1 / sum)
	for i := range probs {
		probs[i] *= f
	}
}
