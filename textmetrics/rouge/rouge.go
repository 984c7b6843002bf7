// Package rouge is a port of Google's rouge-score (rouge_scorer.py with its
// DefaultTokenizer): ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum, each with
// precision, recall and F-measure, optionally with NLTK Porter stemming.
// Scores match rouge-score to 1e-9 on the golden pairs in testdata/ (in
// practice bit for bit: the arithmetic is the same).
//
// # Example
//
//	s := rouge.New(rouge.Options{Stem: true})
//	sc := s.Score("The patients were randomized.", "Patients randomised.")
//	fmt.Println(sc.RL.F)
package rouge

import (
	"slices"
	"sync"

	"github.com/tracksum/tracksum/textmetrics/porter"
)

// Score is one ROUGE variant's precision, recall and F-measure (the harmonic
// mean, rouge-score's fmeasure; 0 when both are 0).
type Score struct {
	Precision, Recall, F float64
}

// Scores holds the four variants the evaluator reports.
type Scores struct {
	R1, R2, RL, RLsum Score
}

// Options configures a Scorer.
type Options struct {
	// Stem applies the Porter stemmer to tokens of 4+ characters
	// (rouge-score's use_stemmer=True).
	Stem bool
}

// maxVocab bounds the scorer's token cache: past it, new tokens get ids that
// live only for one Score call, so memory stays bounded on adversarial input
// (e.g. millions of distinct numbers) at some speed cost.
const maxVocab = 1 << 20

// bigMap is the size past which a pooled per-call map is replaced instead of
// cleared.
const bigMap = 4096

// Scorer computes ROUGE scores. It is safe for concurrent use: tokens are
// interned (and stemmed once) in a shared cache, and per-call buffers come
// from a pool, so steady-state scoring does not allocate.
type Scorer struct {
	stem     bool
	maxVocab int // cache bound; a field so tests can exercise the overflow path

	mu    sync.RWMutex
	ids   map[string]int32 // raw lowercase token -> id of its (stemmed) form
	forms map[string]int32 // stemmed form -> id

	pool sync.Pool // *scratch
}

// New returns a Scorer with the given options.
func New(opts Options) *Scorer {
	s := &Scorer{
		stem:     opts.Stem,
		maxVocab: maxVocab,
		ids:      make(map[string]int32),
		forms:    make(map[string]int32),
	}
	s.pool.New = func() any { return &scratch{local: make(map[int32]int32), overflow: make(map[string]int32)} }
	return s
}

// scratch holds the buffers of one Score call.
type scratch struct {
	buf      []byte
	local    map[int32]int32  // scorer id -> dense id for this call
	overflow map[string]int32 // forms beyond maxVocab, negative ids
	nLocal   int32

	ref, pred         text
	cntRef, cntPred   []int32
	keysRef, keysPred []int64
	row               []int32
	table             []int32
	mark              []bool
}

// text is one tokenized input: dense token ids and, for ROUGE-Lsum, the end
// offset of each non-empty line's tokens.
type text struct {
	toks  []int32
	lines []int
}

// id returns the scorer-wide id of the token in tok (lowercase ASCII),
// interning it (and its stem) on first sight.
func (s *Scorer) id(tok []byte, sc *scratch) int32 {
	s.mu.RLock()
	id, ok := s.ids[string(tok)] // no allocation: map index by converted []byte
	s.mu.RUnlock()
	if ok {
		return id
	}
	key := string(tok)
	form := key
	if s.stem && len(key) >= minStemLen {
		form = porter.Stem(key)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.ids[key]; ok {
		return id
	}
	fid, ok := s.forms[form]
	if !ok {
		if len(s.forms) >= s.maxVocab {
			if id, ok := sc.overflow[form]; ok {
				return id
			}
			id := -int32(len(sc.overflow)) - 1
			sc.overflow[form] = id
			return id
		}
		fid = int32(len(s.forms))
		s.forms[form] = fid
	}
	if len(s.ids) < s.maxVocab {
		s.ids[key] = fid
	}
	return fid
}

// tokenize fills t with dense ids of str's tokens and its line ends.
func (s *Scorer) tokenize(str string, t *text, sc *scratch) {
	t.toks = t.toks[:0]
	t.lines = t.lines[:0]
	sc.buf = sc.buf[:0]
	lineStart := 0
	end := func(newline bool) {
		if len(sc.buf) > 0 {
			gid := s.id(sc.buf, sc)
			lid, ok := sc.local[gid]
			if !ok {
				lid = sc.nLocal
				sc.nLocal++
				sc.local[gid] = lid
			}
			t.toks = append(t.toks, lid)
			sc.buf = sc.buf[:0]
		}
		// Lines without tokens add nothing to ROUGE-Lsum (their LCS is
		// empty and they count 0 tokens), so only non-empty ones are kept.
		if newline && len(t.toks) > lineStart {
			t.lines = append(t.lines, len(t.toks))
			lineStart = len(t.toks)
		}
	}
	scanTokens(str, &sc.buf, end)
	end(true)
}

// Score returns ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum of prediction
// against reference (rouge-score's score(target, prediction)). ROUGE-Lsum
// treats each newline-separated line as a sentence; ROUGE-L and ROUGE-N see
// the whole text as one sequence.
func (s *Scorer) Score(reference, prediction string) Scores {
	sc := s.pool.Get().(*scratch)
	defer s.pool.Put(sc)
	// Clearing a map costs its capacity, not its length: after a rare long
	// text, start afresh rather than pay for the big map on every call.
	if len(sc.local) > bigMap {
		sc.local = make(map[int32]int32)
	} else {
		clear(sc.local)
	}
	if len(sc.overflow) > bigMap {
		sc.overflow = make(map[string]int32)
	} else {
		clear(sc.overflow)
	}
	sc.nLocal = 0
	s.tokenize(reference, &sc.ref, sc)
	s.tokenize(prediction, &sc.pred, sc)

	sc.cntRef = counts(sc.cntRef, sc.ref.toks, int(sc.nLocal))
	sc.cntPred = counts(sc.cntPred, sc.pred.toks, int(sc.nLocal))

	var out Scores
	out.R1 = sc.rouge1()
	out.R2 = sc.rouge2()
	out.RL = sc.rougeL()
	out.RLsum = sc.rougeLsum()
	return out
}

func counts(dst []int32, toks []int32, n int) []int32 {
	dst = slices.Grow(dst[:0], n)[:n]
	clear(dst)
	for _, t := range toks {
		dst[t]++
	}
	return dst
}

// fmeasure is rouge-score's scoring.fmeasure, same operation order so the
// result is bit-identical.
func fmeasure(p, r float64) float64 {
	if p+r > 0 {
		return 2 * p * r / (p + r)
	}
	return 0
}

func ngramScore(overlap, nRef, nPred int) Score {
	p := float64(overlap) / float64(max(nPred, 1))
	r := float64(overlap) / float64(max(nRef, 1))
	return Score{Precision: p, Recall: r, F: fmeasure(p, r)}
}

func (sc *scratch) rouge1() Score {
	overlap := 0
	for id, c := range sc.cntRef {
		overlap += int(min(c, sc.cntPred[id]))
	}
	return ngramScore(overlap, len(sc.ref.toks), len(sc.pred.toks))
}

// rouge2 counts clipped bigram overlap by sorting bigram keys and merging.
func (sc *scratch) rouge2() Score {
	n := int64(sc.nLocal)
	bigrams := func(dst []int64, toks []int32) []int64 {
		dst = dst[:0]
		for i := 1; i < len(toks); i++ {
			dst = append(dst, int64(toks[i-1])*n+int64(toks[i]))
		}
		slices.Sort(dst)
		return dst
	}
	sc.keysRef = bigrams(sc.keysRef, sc.ref.toks)
	sc.keysPred = bigrams(sc.keysPred, sc.pred.toks)
	a, b := sc.keysRef, sc.keysPred
	overlap := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			overlap++
			i++
			j++
		}
	}
	return ngramScore(overlap, len(a), len(b))
}

// lcsLen is the LCS length of a and b with one DP row.
func (sc *scratch) lcsLen(a, b []int32) int {
	row := slices.Grow(sc.row[:0], len(b)+1)[:len(b)+1]
	clear(row)
	for _, x := range a {
		diag := int32(0)
		for j, y := range b {
			up := row[j+1]
			switch {
			case x == y:
				row[j+1] = diag + 1
			case row[j] > up:
				row[j+1] = row[j]
			}
			diag = up
		}
	}
	sc.row = row
	return int(row[len(b)])
}

func (sc *scratch) rougeL() Score {
	ref, pred := sc.ref.toks, sc.pred.toks
	if len(ref) == 0 || len(pred) == 0 {
		return Score{}
	}
	l := sc.lcsLen(ref, pred)
	p := float64(l) / float64(len(pred))
	r := float64(l) / float64(len(ref))
	return Score{Precision: p, Recall: r, F: fmeasure(p, r)}
}

// markLCS marks in mark the positions of ref on the LCS of ref and can that
// rouge-score's _backtrack_norec reads out (its tie-breaking matters: the
// union of these positions decides ROUGE-Lsum).
func (sc *scratch) markLCS(ref, can []int32, mark []bool) {
	cols := len(can) + 1
	t := slices.Grow(sc.table[:0], (len(ref)+1)*cols)[:(len(ref)+1)*cols]
	clear(t[:cols])
	for i := 1; i <= len(ref); i++ {
		t[i*cols] = 0
		x := ref[i-1]
		for j := 1; j <= len(can); j++ {
			switch {
			case x == can[j-1]:
				t[i*cols+j] = t[(i-1)*cols+j-1] + 1
			default:
				t[i*cols+j] = max(t[(i-1)*cols+j], t[i*cols+j-1])
			}
		}
	}
	sc.table = t
	for i, j := len(ref), len(can); i > 0 && j > 0; {
		switch {
		case ref[i-1] == can[j-1]:
			mark[i-1] = true
			i--
			j--
		case t[i*cols+j-1] > t[(i-1)*cols+j]:
			j--
		default:
			i--
		}
	}
}

// rougeLsum is rouge-score's _summary_level_lcs: for each reference
// sentence, the union of its LCS positions with every predicted sentence,
// counted at most as often as the token occurs in both texts.
func (sc *scratch) rougeLsum() Score {
	m, n := len(sc.ref.toks), len(sc.pred.toks)
	if m == 0 || n == 0 {
		return Score{}
	}
	// The token counters are consumed below; cntRef/cntPred are not needed
	// any more after ROUGE-1.
	cr, cp := sc.cntRef, sc.cntPred
	hits := 0
	start := 0
	for _, end := range sc.ref.lines {
		r := sc.ref.toks[start:end]
		mark := slices.Grow(sc.mark[:0], len(r))[:len(r)]
		clear(mark)
		cstart := 0
		for _, cend := range sc.pred.lines {
			sc.markLCS(r, sc.pred.toks[cstart:cend], mark)
			cstart = cend
		}
		for i, ok := range mark {
			if !ok {
				continue
			}
			if t := r[i]; cp[t] > 0 && cr[t] > 0 {
				hits++
				cp[t]--
				cr[t]--
			}
		}
		sc.mark = mark
		start = end
	}
	p := float64(hits) / float64(n)
	r := float64(hits) / float64(m)
	return Score{Precision: p, Recall: r, F: fmeasure(p, r)}
}
