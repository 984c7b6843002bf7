package subword

import (
	"container/heap"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"strings"
	"unicode/utf8"
)

// Vocab is a learned tokenizer: special tokens, base alphabet and learned tokens in id order, plus
// the BPE merges. Write it with WriteFile and use it through Load.
type Vocab struct {
	kind     string
	tokens   []string    // tokens[id]
	nSpecial int         // tokens[:nSpecial] are the special tokens
	merges   [][2]string // BPE merges by rank (empty for WordPiece)
}

// Kind returns KindBPE or KindWordPiece.
func (v *Vocab) Kind() string { return v.kind }

// Size returns the number of tokens, special tokens included.
func (v *Vocab) Size() int { return len(v.tokens) }

// Token returns the vocabulary string of id (byte-level form for BPE), or "" when out of range.
func (v *Vocab) Token(id int) string {
	if id < 0 || id >= len(v.tokens) {
		return ""
	}
	return v.tokens[id]
}

// NumMerges returns the number of BPE merges (0 for WordPiece).
func (v *Vocab) NumMerges() int { return len(v.merges) }

// maxWordPieceChars is max_input_chars_per_word: longer words encode to [UNK], so training skips them.
const maxWordPieceChars = 100

// Train learns a tokenizer from texts. Each text is cleaned (see Clean) and pre-tokenized exactly as
// the written tokenizer.json will pre-tokenize at encoding time; distinct words are counted in a map
// first, so memory grows with the vocabulary of the corpus, not its length. Merges are then learned on
// the word-count table with incremental pair-count updates. The result is deterministic: equal
// counts are broken by the byte order of the pair's tokens.
func Train(texts iter.Seq[string], opts TrainOptions) (*Vocab, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	split := byteLevelPieces
	if opts.Kind == KindWordPiece {
		split = bertPieces
	}
	counts := countWords(texts, split)
	if opts.Kind == KindWordPiece {
		return trainWordPiece(counts, opts)
	}
	return trainBPE(counts, opts)
}

// countWords cleans and pre-tokenizes texts and counts the distinct words. The texts are read in
// batches by the caller's goroutine and counted by one worker per CPU in private maps, merged at the
// end; the counts, hence the vocabulary, do not depend on the number of workers.
func countWords(texts iter.Seq[string], split func(string, func(string))) map[string]int64 {
	workers := min(runtime.GOMAXPROCS(0), 8)
	const batchSize = 256
	batches := make(chan []string, 2*workers)
	results := make(chan map[string]int64, workers)
	for range workers {
		go func() {
			counts := map[string]int64{}
			add := func(piece string) {
				if c, ok := counts[piece]; ok {
					counts[piece] = c + 1
				} else {
					counts[strings.Clone(piece)] = 1
				}
			}
			for batch := range batches {
				for _, text := range batch {
					split(Clean(text), add)
				}
			}
			results <- counts
		}()
	}
	batch := make([]string, 0, batchSize)
	for text := range texts {
		batch = append(batch, text)
		if len(batch) == batchSize {
			batches <- batch
			batch = make([]string, 0, batchSize)
		}
	}
	batches <- batch
	close(batches)
	counts := <-results
	for range workers - 1 {
		for w, c := range <-results {
			counts[w] += c
		}
	}
	return counts
}

// sortedWords returns the distinct words in byte order, so that every later step is independent of
// map iteration order.
func sortedWords(counts map[string]int64) []string {
	words := make([]string, 0, len(counts))
	for w := range counts {
		words = append(words, w)
	}
	slices.Sort(words)
	return words
}

func trainBPE(counts map[string]int64, opts TrainOptions) (*Vocab, error) {
	m := newMerger(opts, func(a, b string) string { return a + b })
	var byteID [256]int32
	for b := 0; b < 256; b++ {
		byteID[b] = m.addToken(byteChars[b])
	}
	for _, w := range sortedWords(counts) {
		syms := make([]int32, len(w))
		for i := 0; i < len(w); i++ {
			syms[i] = byteID[w[i]]
		}
		m.addWord(syms, counts[w])
	}
	m.run()
	return &Vocab{kind: KindBPE, tokens: m.tokens, nSpecial: len(opts.SpecialTokens), merges: m.merges}, nil
}

// trainWordPiece learns WordPiece tokens the way Hugging Face does: BPE merges over words whose
// non-initial characters carry the "##" prefix; the merges themselves are not kept, as WordPiece
// encodes by greedy longest match over the vocabulary.
func trainWordPiece(counts map[string]int64, opts TrainOptions) (*Vocab, error) {
	words := sortedWords(counts)
	// Alphabet: every initial and continuation character, most frequent first if it must be cut to
	// leave room for at least one learned token.
	charCount := map[string]int64{}
	for _, w := range words {
		if utf8.RuneCountInString(w) > maxWordPieceChars {
			continue
		}
		for i, r := range w {
			charCount[pieceSymbol(r, i > 0)] += counts[w]
		}
	}
	alphabet := make([]string, 0, len(charCount))
	for s := range charCount {
		alphabet = append(alphabet, s)
	}
	slices.SortFunc(alphabet, func(a, b string) int {
		if ca, cb := charCount[a], charCount[b]; ca != cb {
			if ca > cb {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	if room := opts.VocabSize - len(opts.SpecialTokens) - 1; len(alphabet) > room {
		alphabet = alphabet[:room]
	}
	slices.Sort(alphabet)

	m := newMerger(opts, func(a, b string) string { return a + strings.TrimPrefix(b, continuationPrefix) })
	for _, s := range alphabet {
		m.addToken(s)
	}
	syms := []int32{}
words:
	for _, w := range words {
		if utf8.RuneCountInString(w) > maxWordPieceChars {
			continue
		}
		syms = syms[:0]
		for i, r := range w {
			id, ok := m.index[pieceSymbol(r, i > 0)]
			if !ok {
				continue words // a character cut from the alphabet: the word encodes to [UNK]
			}
			syms = append(syms, id)
		}
		m.addWord(slices.Clone(syms), counts[w])
	}
	m.run()
	return &Vocab{kind: KindWordPiece, tokens: m.tokens, nSpecial: len(opts.SpecialTokens)}, nil
}

const continuationPrefix = "##"

func pieceSymbol(r rune, continuation bool) string {
	if continuation {
		return continuationPrefix + string(r)
	}
	return string(r)
}

// merger learns merges over a table of distinct words (symbol-id sequences with counts).
type merger struct {
	opts   TrainOptions
	join   func(a, b string) string
	tokens []string
	index  map[string]int32
	merges [][2]string

	words  [][]int32
	counts []int64
	pairs  map[uint64]int64   // current count of each adjacent pair over all words
	where  map[uint64][]int32 // words that contain (or once contained) each pair
	queue  pairQueue
	stamp  []int32 // per word: last merge step that processed it, to visit each word once per step

	scratch []uint64
}

func newMerger(opts TrainOptions, join func(a, b string) string) *merger {
	m := &merger{opts: opts, join: join, index: map[string]int32{}, pairs: map[uint64]int64{}, where: map[uint64][]int32{}}
	for _, s := range opts.SpecialTokens {
		m.addToken(s)
	}
	return m
}

func (m *merger) addToken(s string) int32 {
	if id, ok := m.index[s]; ok {
		return id
	}
	id := int32(len(m.tokens))
	m.tokens = append(m.tokens, s)
	m.index[s] = id
	return id
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func (m *merger) addWord(syms []int32, count int64) {
	wi := int32(len(m.words))
	m.words = append(m.words, syms)
	m.counts = append(m.counts, count)
	m.stamp = append(m.stamp, -1)
	for i := 0; i+1 < len(syms); i++ {
		k := pairKey(syms[i], syms[i+1])
		m.pairs[k] += count
		if l := m.where[k]; len(l) == 0 || l[len(l)-1] != wi {
			m.where[k] = append(l, wi)
		}
	}
}

// run merges the most frequent pair until the vocabulary is full or no pair reaches MinFrequency.
func (m *merger) run() {
	m.queue = pairQueue{tokens: &m.tokens}
	for k, c := range m.pairs {
		m.queue.items = append(m.queue.items, pairItem{count: c, key: k})
	}
	heap.Init(&m.queue)
	touched := map[uint64]bool{}
	for step := int32(0); len(m.tokens) < m.opts.VocabSize && m.queue.Len() > 0; {
		top := heap.Pop(&m.queue).(pairItem)
		if cur := m.pairs[top.key]; cur != top.count {
			// Stale entry: its count dropped since it was queued (increases are queued anew).
			if cur > 0 {
				heap.Push(&m.queue, pairItem{count: cur, key: top.key})
			}
			continue
		}
		if top.count < int64(m.opts.MinFrequency) {
			break
		}
		a, b := int32(top.key>>32), int32(uint32(top.key))
		m.merges = append(m.merges, [2]string{m.tokens[a], m.tokens[b]})
		id := m.addToken(m.join(m.tokens[a], m.tokens[b]))
		clear(touched)
		for _, wi := range m.where[top.key] {
			if m.stamp[wi] == step {
				continue
			}
			m.stamp[wi] = step
			m.mergeWord(wi, a, b, id, touched)
		}
		delete(m.where, top.key)
		delete(m.pairs, top.key)
		keys := make([]uint64, 0, len(touched))
		for k := range touched {
			keys = append(keys, k)
		}
		slices.Sort(keys) // heap layout must not depend on map order
		for _, k := range keys {
			if c := m.pairs[k]; c > 0 {
				heap.Push(&m.queue, pairItem{count: c, key: k})
			}
		}
		step++
	}
}

// mergeWord replaces every non-overlapping (a, b), left to right, by id in word wi and updates the
// pair counts; pairs that contain the new symbol are recorded in touched and indexed in where.
func (m *merger) mergeWord(wi int32, a, b, id int32, touched map[uint64]bool) {
	w := m.words[wi]
	found := false
	for i := 0; i+1 < len(w); i++ {
		if w[i] == a && w[i+1] == b {
			found = true
			break
		}
	}
	if !found {
		return
	}
	c := m.counts[wi]
	old := m.scratch[:0]
	for i := 0; i+1 < len(w); i++ {
		k := pairKey(w[i], w[i+1])
		m.pairs[k] -= c
		old = append(old, k)
	}
	m.scratch = old
	out := w[:0] // in place: the write index never passes the read index
	for i := 0; i < len(w); i++ {
		if i+1 < len(w) && w[i] == a && w[i+1] == b {
			out = append(out, id)
			i++
		} else {
			out = append(out, w[i])
		}
	}
	m.words[wi] = out
	for i := 0; i+1 < len(out); i++ {
		k := pairKey(out[i], out[i+1])
		m.pairs[k] += c
		if out[i] == id || out[i+1] == id {
			touched[k] = true
			if l := m.where[k]; len(l) == 0 || l[len(l)-1] != wi {
				m.where[k] = append(l, wi)
			}
		}
	}
	for _, k := range old {
		// Drop zero counts so the map only holds live pairs.
		if m.pairs[k] == 0 {
			delete(m.pairs, k)
		}
	}
}

type pairItem struct {
	count int64
	key   uint64
}

// pairQueue is a max-heap on count; ties go to the pair whose (left, right) token strings sort
// first bytewise, which makes training independent of id assignment details.
type pairQueue struct {
	items  []pairItem
	tokens *[]string
}

func (q *pairQueue) Len() int { return len(q.items) }
func (q *pairQueue) Less(i, j int) bool {
	x, y := q.items[i], q.items[j]
	if x.count != y.count {
		return x.count > y.count
	}
	t := *q.tokens
	xa, xb, ya, yb := t[int32(x.key>>32)], t[int32(uint32(x.key))], t[int32(y.key>>32)], t[int32(uint32(y.key))]
	if c := strings.Compare(xa, ya); c != 0 {
		return c < 0
	}
	return xb < yb
}
func (q *pairQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *pairQueue) Push(x any)    { q.items = append(q.items, x.(pairItem)) }
func (q *pairQueue) Pop() any {
	it := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return it
}

// String summarises the vocabulary for logs.
func (v *Vocab) String() string {
	return fmt.Sprintf("%s vocabulary: %d tokens (%d special), %d merges", v.kind, len(v.tokens), v.nSpecial, len(v.merges))
}
