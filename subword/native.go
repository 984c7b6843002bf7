package subword

import (
	"fmt"
	"hash/maphash"
	"sync"
	"unicode/utf8"
)

// Native encoders for the two tokenizer.json layouts written by WriteFile. They reproduce
// sugarme/tokenizer's ids exactly (TestNativeMatchesLibrary, FuzzNativeMatchesLibrary), including
// its BPE merge order, which differs from Hugging Face's when one merge applies at several
// positions of a word: sugarme's binary heap does not order equal ranks by position.

// wordCache memoises word -> ids. Abstracts repeat their words heavily, so most pieces hit. It is
// sharded to keep lock contention low, and stops growing at a fixed size so that memory stays
// bounded on an endless stream of novel words.
type wordCache struct {
	seed   maphash.Seed
	shards [64]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
}

const cacheShardMax = 1 << 14 // 64 shards: about a million words in all

func newWordCache() *wordCache {
	c := &wordCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = map[string][]int32{}
	}
	return c
}

func (c *wordCache) shard(w string) *cacheShard {
	return &c.shards[maphash.String(c.seed, w)%uint64(len(c.shards))]
}

func (c *wordCache) get(w string) ([]int32, bool) {
	s := c.shard(w)
	s.mu.RLock()
	ids, ok := s.m[w]
	s.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	s := c.shard(w)
	s.mu.Lock()
	if len(s.m) < cacheShardMax {
		s.m[string([]byte(w))] = ids // copy: w may alias a reused buffer
	}
	s.mu.Unlock()
}

// appendIDs appends the ids of w to dst: the cached ones, or else those that encode appends to the
// dst it is given, which are then cached (as a copy: dst is the caller's buffer).
func (c *wordCache) appendIDs(dst []int32, w string, encode func(dst []int32) []int32) []int32 {
	if ids, ok := c.get(w); ok {
		return append(dst, ids...)
	}
	start := len(dst)
	dst = encode(dst)
	c.put(w, append([]int32(nil), dst[start:]...))
	return dst
}

func newNativeEncoder(v *Vocab) (encoder, error) {
	index := v.index()
	unk, ok := index[unkToken]
	if !ok {
		return nil, fmt.Errorf("model.vocab has no %s token", unkToken)
	}
	switch v.kind {
	case KindBPE:
		e := &bpeEncoder{merges: make(map[uint64]bpeMerge, len(v.merges)), cache: newWordCache(), unk: unk}
		for b := 0; b < 256; b++ {
			id, ok := index[byteChars[b]]
			if !ok {
				// sugarme would use [UNK] for this byte; keep the native path identical.
				id = unk
			}
			e.byteID[b] = id
		}
		rank := int32(0)
		for _, m := range v.merges {
			a, okA := index[m[0]]
			b, okB := index[m[1]]
			if !okA || !okB {
				continue // sugarme skips merges of unknown tokens without consuming a rank
			}
			id, ok := index[m[0]+m[1]]
			if !ok {
				return nil, fmt.Errorf("model.merges: %q %q: merged token not in the vocabulary", m[0], m[1])
			}
			// A repeated pair keeps its last rank, as in sugarme's map assignment.
			e.merges[pairKey(a, b)] = bpeMerge{rank: rank, id: id}
			rank++
		}
		return e, nil
	case KindWordPiece:
		return &wordPieceEncoder{vocab: index, unk: unk, cache: newWordCache()}, nil
	}
	return nil, fmt.Errorf("unknown kind %q", v.kind)
}

type bpeMerge struct{ rank, id int32 }

type bpeEncoder struct {
	byteID [256]int32
	merges map[uint64]bpeMerge
	unk    int32
	cache  *wordCache
}

func (e *bpeEncoder) encode(dst []int32, text string) []int32 {
	var syms []bpeSymbol
	var queue []bpeQueued
	byteLevelPieces(text, func(piece string) {
		dst = e.cache.appendIDs(dst, piece, func(dst []int32) []int32 {
			dst, syms, queue = e.mergeWord(dst, piece, syms, queue)
			return dst
		})
	})
	return dst
}

type bpeSymbol struct{ c, prev, next, len int32 }

type bpeQueued struct{ pos, rank, id int32 }

// mergeWord applies the merges to one pre-token exactly as sugarme's bpe.Word.MergeAll does,
// including its heap (emirpasic/gods binaryheap ordered by rank only) so that ties between equal
// ranks at different positions resolve the same way.
func (e *bpeEncoder) mergeWord(dst []int32, piece string, syms []bpeSymbol, q []bpeQueued) ([]int32, []bpeSymbol, []bpeQueued) {
	syms = syms[:0]
	n := int32(len(piece))
	for i := int32(0); i < n; i++ {
		next := i + 1
		if next == n {
			next = -1
		}
		syms = append(syms, bpeSymbol{c: e.byteID[piece[i]], prev: i - 1, next: next, len: 1})
	}
	q = q[:0]
	for i := int32(0); i+1 < n; i++ {
		if m, ok := e.merges[pairKey(syms[i].c, syms[i+1].c)]; ok {
			q = heapPush(q, bpeQueued{pos: i, rank: m.rank, id: m.id})
		}
	}
	for len(q) > 0 {
		var top bpeQueued
		top, q = heapPop(q)
		cur := &syms[top.pos]
		if cur.len == 0 || cur.next == -1 {
			continue
		}
		nextPos := cur.next
		right := syms[nextPos]
		if m, ok := e.merges[pairKey(cur.c, right.c)]; !ok || m.id != top.id {
			continue
		}
		cur.c = top.id
		cur.len += right.len
		cur.next = right.next
		syms[nextPos].len = 0
		if right.next > -1 && right.next < n {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if m, ok := e.merges[pairKey(syms[cur.prev].c, cur.c)]; ok {
				q = heapPush(q, bpeQueued{pos: cur.prev, rank: m.rank, id: m.id})
			}
		}
		if cur.next > -1 && cur.next < n {
			if m, ok := e.merges[pairKey(cur.c, syms[cur.next].c)]; ok {
				q = heapPush(q, bpeQueued{pos: top.pos, rank: m.rank, id: m.id})
			}
		}
	}
	for _, s := range syms {
		if s.len != 0 {
			dst = append(dst, s.c)
		}
	}
	return dst, syms, q
}

// heapPush and heapPop replicate github.com/emirpasic/gods/trees/binaryheap with a comparator on
// rank alone: sift-up stops at equal ranks, pop moves the last element to the root and sifts it down
// towards the smaller child (the left one on ties).
func heapPush(q []bpeQueued, x bpeQueued) []bpeQueued {
	q = append(q, x)
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) >> 1
		if q[p].rank <= q[i].rank {
			break
		}
		q[p], q[i] = q[i], q[p]
		i = p
	}
	return q
}

func heapPop(q []bpeQueued) (bpeQueued, []bpeQueued) {
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	size := len(q)
	i := 0
	for {
		l := 2*i + 1
		if l >= size {
			break
		}
		s := l
		if r := l + 1; r < size && q[l].rank > q[r].rank {
			s = r
		}
		if q[i].rank > q[s].rank {
			q[i], q[s] = q[s], q[i]
			i = s
		} else {
			break
		}
	}
	return top, q
}

type wordPieceEncoder struct {
	vocab map[string]int32
	unk   int32
	cache *wordCache
}

func (e *wordPieceEncoder) encode(dst []int32, text string) []int32 {
	var buf []byte
	bertPieces(text, func(word string) {
		dst = e.cache.appendIDs(dst, word, func(dst []int32) []int32 {
			dst, buf = e.encodeWord(dst, word, buf)
			return dst
		})
	})
	return dst
}

// encodeWord is greedy longest-match-first WordPiece, as in sugarme's wordpiece.Tokenize: a word
// longer than max_input_chars_per_word runes, or with a part that matches nothing, is one [UNK].
func (e *wordPieceEncoder) encodeWord(dst []int32, word string, buf []byte) ([]int32, []byte) {
	if utf8.RuneCountInString(word) > maxWordPieceChars {
		return append(dst, e.unk), buf
	}
	start0 := len(dst)
	for start := 0; start < len(word); {
		end := len(word)
		found := false
		for end > start {
			buf = buf[:0]
			if start > 0 {
				buf = append(buf, continuationPrefix...)
			}
			buf = append(buf, word[start:end]...)
			if id, ok := e.vocab[string(buf)]; ok {
				dst = append(dst, id)
				found = true
				break
			}
			_, size := utf8.DecodeLastRuneInString(word[start:end])
			end -= size
		}
		if !found {
			return append(dst[:start0], e.unk), buf
		}
		start = end
	}
	return dst, buf
}
