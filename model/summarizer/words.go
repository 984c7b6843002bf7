package summarizer

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/subword"
)

// WordRule is a decoding constraint that keeps the summarizer from gluing subword pieces into
// words that exist nowhere. A word-internal piece (BPE: no leading space marker; WordPiece: "##")
// may only extend the word being written when the extended piece sequence occurs contiguously
// in the source, or is (the start of) a word of the training summaries. Without it the copy
// attention, which scores each piece on its own, jumped between occurrences of frequent pieces and
// wrote "theective", "in-1-1)" or "hyperg, 46". Punctuation that can end any word (". , ; :")
// is always allowed. The rule also forbids writing the piece just written again ("to to", "study
// study", which the minimum length pushed the model into) unless the source repeats it too. A
// WordRule is read-only and safe for concurrent use.
type WordRule struct {
	cont []bool // id is a word-internal piece
	free []bool // id is word-ending punctuation, allowed after anything
	// contIDs lists the ids with cont && !free: the ones the rule may forbid.
	contIDs []int32
	// known holds the keys (pieceKey) of every prefix of two pieces or more of the multi-piece
	// words of the training summaries.
	known map[string]bool
}

// NewWordRule classifies the tokenizer's pieces and indexes the known words (piece sequences of
// two or more pieces, from KnownWords).
func NewWordRule(tok *subword.Tokenizer, known [][]int32) *WordRule {
	n := tok.VocabSize()
	r := &WordRule{cont: make([]bool, n), free: make([]bool, n), known: map[string]bool{}}
	for id := tok.NumSpecial(); id < n; id++ {
		s := tok.TokenString(int32(id))
		if tok.Kind() == subword.KindWordPiece {
			s, r.cont[id] = strings.CutPrefix(s, "##")
		} else {
			// Byte-level BPE marks a preceding space with "Ġ".
			r.cont[id] = !strings.HasPrefix(s, "Ġ")
			s = strings.TrimPrefix(s, "Ġ")
		}
		r.free[id] = s != "" && strings.Trim(s, ".,;:") == ""
		if r.cont[id] && !r.free[id] {
			r.contIDs = append(r.contIDs, int32(id))
		}
	}
	for _, w := range known {
		for k := 2; k <= len(w); k++ {
			r.known[string(pieceKey(nil, w[:k]))] = true
		}
	}
	return r
}

// KnownWords returns the distinct multi-piece words of the summaries (sorted), for NewWordRule.
// A word is a piece that is not word-internal followed by the word-internal pieces after it.
func KnownWords(tok *subword.Tokenizer, summaries [][]int32) [][]int32 {
	r := NewWordRule(tok, nil)
	seen := map[string]bool{}
	var out [][]int32
	add := func(w []int32) {
		if len(w) < 2 {
			return
		}
		if k := string(pieceKey(nil, w)); !seen[k] {
			seen[k] = true
			out = append(out, slices.Clone(w))
		}
	}
	for _, s := range summaries {
		start := 0
		for i, id := range s {
			if i > 0 && !r.isCont(id) {
				add(s[start:i])
				start = i
			}
		}
		if len(s) > 0 {
			add(s[start:])
		}
	}
	slices.SortFunc(out, slices.Compare)
	return out
}

func (r *WordRule) isCont(id int32) bool { return int(id) < len(r.cont) && r.cont[id] }

// next returns the word being written after feeding tok to a hypothesis whose current word is
// word: a new word for a piece that starts one, word+tok for a word-internal piece.
func (r *WordRule) next(word []int32, tok, bos int32) []int32 {
	switch {
	case tok == bos:
		return word[:0]
	case r.isCont(tok):
		return append(word, tok)
	default:
		return append(word[:0], tok)
	}
}

// apply zeroes in probs (a distribution over the vocabulary) the word-internal pieces that would
// make the current word a sequence found neither in src nor among the known words, and
// renormalises. An empty word (start of the summary) admits no word-internal piece.
func (r *WordRule) apply(probs []float32, word, src []int32) {
	var allowed []int32
	if w := len(word); w > 0 {
		for j := w - 1; j+1 < len(src); j++ {
			if slices.Equal(src[j-w+1:j+1], word) {
				allowed = append(allowed, src[j+1])
			}
		}
	}
	key := pieceKey(make([]byte, 0, 4*(len(word)+1)), word)
	var removed float64
	// The piece just written again ("to to", "study study") only when the source repeats it too.
	if w := len(word); w > 0 && !repeatsIn(src, word[w-1]) {
		removed += float64(probs[word[w-1]])
		probs[word[w-1]] = 0
	}
	for _, id := range r.contIDs {
		p := probs[id]
		if p == 0 || slices.Contains(allowed, id) {
			continue
		}
		if len(word) > 0 && r.known[string(binary.LittleEndian.AppendUint32(key, uint32(id)))] {
			continue
		}
		removed += float64(p)
		probs[id] = 0
	}
	if removed == 0 {
		return
	}
	var sum float64
	for _, p := range probs {
		sum += float64(p)
	}
	if sum <= 0 {
		return
	}
	scale := float32(1 / sum)
	for i := range probs {
		probs[i] *= scale
	}
}

// repeatsIn reports whether id occurs twice in a row in src.
func repeatsIn(src []int32, id int32) bool {
	for j := 1; j < len(src); j++ {
		if src[j] == id && src[j-1] == id {
			return true
		}
	}
	return false
}

// pieceKey appends the little-endian bytes of ids to dst: a map key for a piece sequence.
func pieceKey(dst []byte, ids []int32) []byte {
	for _, id := range ids {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(id))
	}
	return dst
}
