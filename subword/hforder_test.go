package subword

import (
	"container/heap"
	"slices"
	"testing"
)

// hfMergeWord applies BPE merges in Hugging Face tokenizers' order (lowest rank first, then
// leftmost position), which sugarme does not follow on ties.
func hfMergeWord(e *bpeEncoder, piece string) []int32 {
	type sym struct{ c, prev, next int32 }
	n := int32(len(piece))
	syms := make([]sym, n)
	for i := range syms {
		syms[i] = sym{c: e.byteID[piece[i]], prev: int32(i) - 1, next: int32(i) + 1}
	}
	syms[n-1].next = -1
	q := &hfQueue{}
	for i := int32(0); i+1 < n; i++ {
		if m, ok := e.merges[pairKey(syms[i].c, syms[i+1].c)]; ok {
			heap.Push(q, bpeQueued{pos: i, rank: m.rank, id: m.id})
		}
	}
	alive := make([]bool, n)
	for i := range alive {
		alive[i] = true
	}
	for q.Len() > 0 {
		top := heap.Pop(q).(bpeQueued)
		cur := &syms[top.pos]
		if !alive[top.pos] || cur.next == -1 {
			continue
		}
		right := syms[cur.next]
		if m, ok := e.merges[pairKey(cur.c, right.c)]; !ok || m.id != top.id {
			continue
		}
		alive[cur.next] = false
		cur.c, cur.next = top.id, right.next
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if m, ok := e.merges[pairKey(syms[cur.prev].c, cur.c)]; ok {
				heap.Push(q, bpeQueued{pos: cur.prev, rank: m.rank, id: m.id})
			}
		}
		if cur.next >= 0 {
			if m, ok := e.merges[pairKey(cur.c, syms[cur.next].c)]; ok {
				heap.Push(q, bpeQueued{pos: top.pos, rank: m.rank, id: m.id})
			}
		}
	}
	var out []int32
	for i, s := range syms {
		if alive[i] {
			out = append(out, s.c)
		}
	}
	return out
}

type hfQueue []bpeQueued

func (q hfQueue) Len() int { return len(q) }
func (q hfQueue) Less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].pos < q[j].pos
}
func (q hfQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *hfQueue) Push(x any)   { *q = append(*q, x.(bpeQueued)) }
func (q *hfQueue) Pop() any {
	x := (*q)[len(*q)-1]
	*q = (*q)[:len(*q)-1]
	return x
}

// TestHFMergeOrder measures how often sugarme's BPE ids (which Encode reproduces) differ from what
// Hugging Face tokenizers would produce from the same tokenizer.json: only words in which one merge
// applies at three or more overlapping positions (digit runs like "100000", "aaaa") can differ.
// Both segmentations spell the same bytes, so decoding is unaffected.
func TestHFMergeOrder(t *testing.T) {
	tok := sharedTokenizer(t, KindBPE)
	e := tok.native.(*bpeEncoder)
	texts := append(genCorpus(31, 3000), corpusHostile...)
	if real, err := loadRealSentences(); err == nil {
		texts = append(texts, real...)
	}
	differ := 0
	for _, s := range texts {
		var hf []int32
		byteLevelPieces(Clean(s), func(p string) { hf = append(hf, hfMergeWord(e, p)...) })
		ours := tok.Encode(s)
		if !slices.Equal(hf, ours) {
			differ++
			if tok.Decode(hf) != tok.Decode(ours) {
				t.Errorf("%q: segmentations spell different text", s)
			}
		}
	}
	t.Logf("%d of %d texts segment differently under Hugging Face's merge order", differ, len(texts))
	for _, tt := range []struct{ desc, in string }{
		{desc: "five equal letters", in: "aaaaa"},
		{desc: "long zero run", in: "1000000000"},
	} {
		var hf []int32
		byteLevelPieces(Clean(tt.in), func(p string) { hf = append(hf, hfMergeWord(e, p)...) })
		t.Logf("%s %q: sugarme %v, HF order %v", tt.desc, tt.in, tok.Encode(tt.in), hf)
	}
}
