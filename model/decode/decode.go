// Package decode generates token sequences from an autoregressive model: greedy decoding and beam
// search with a length penalty, a maximum length and no-repeat n-gram blocking. It is batched: all
// live hypotheses of all inputs advance together in one Model.Step call, and it never re-feeds a
// prefix: each hypothesis carries the model's state (e.g. a KV cache) and receives one new token
// per step, so the cost of a step does not grow with the prefix beyond attention over it.
//
// # Example
//
//	opts := decode.Options{BeamSize: 4, MaxLen: 64, LengthPenalty: 1, NoRepeatNgram: 3, BOS: bos, EOS: eos}
//	hyps := decode.Search(net, []*summarizer.DecState{net.NewState(src)}, opts)
//	fmt.Println(hyps[0].Tokens)
package decode

import (
	"cmp"
	"math"
	"slices"
)

// Model is what the decoder drives. S is the model's per-hypothesis state.
type Model[S any] interface {
	// Step feeds tokens[i] to states[i] (advancing it in place) and writes the probability
	// distribution of the next token into probs[i], a slice of VocabSize() values.
	Step(states []S, tokens []int32, probs [][]float32)
	// Clone returns an independent copy of a state (beam search forks hypotheses).
	Clone(state S) S
	// VocabSize is the length of each distribution Step writes.
	VocabSize() int
}

// Options configure a search.
type Options struct {
	// BeamSize is the number of hypotheses kept per input; 1 is greedy decoding.
	BeamSize int
	// MaxLen caps the generated tokens, [EOS] included.
	MaxLen int
	// MinLen forbids [EOS] before that many tokens were generated (1: never an empty output).
	MinLen int
	// MinLens, when set, is a per-input MinLen (input i uses MinLens[i]), for callers that scale the
	// minimum with each source's length; MinLen applies to inputs beyond its end.
	MinLens []int
	// LengthPenalty alpha normalises a finished hypothesis' log-probability by
	// ((5+len)/6)^alpha (Wu et al. 2016); 0 ranks by raw log-probability.
	LengthPenalty float64
	// NoRepeatNgram > 0 forbids any n-gram of that size from occurring twice in the output.
	NoRepeatNgram int
	// Sources, when set, relaxes NoRepeatNgram for input i (i < len(Sources)): an n-gram that
	// Sources[i] holds c times may occur c times. A summarizer that copies needs it: results
	// sections repeat 4-grams ("; 95 % CI ,"), and banning the second one pushed the decoder
	// off the sentence it was copying, into fragments ("P =, 0.96; 95%, 0., 0.").
	Sources [][]int32
	// BOS is fed first; EOS ends a hypothesis.
	BOS, EOS int32
	// Done, when set, ends input i's hypothesis after tokens as [EOS] would (tokens kept): an
	// end marker a chat model spells in several ordinary tokens, seen only in decoded text.
	Done func(input int, tokens []int32) bool
}

// done reports whether o.Done ends input i's hypothesis after tokens.
func (o Options) done(i int, tokens []int32) bool { return o.Done != nil && o.Done(i, tokens) }

// Hypothesis is a generated sequence.
type Hypothesis struct {
	// Tokens are the generated ids, without [BOS] and [EOS].
	Tokens []int32
	// LogProb is the sum of the log-probabilities of the generated tokens, [EOS] included.
	LogProb float64
	// Score is LogProb normalised by the length penalty: what beam search maximises.
	Score float64
}

// Search decodes one sequence per initial state (a state that has been fed nothing yet) and returns
// the best hypothesis of each, in order.
func Search[S any](m Model[S], inits []S, o Options) []Hypothesis {
	if o.BeamSize <= 1 {
		return greedy(m, inits, o)
	}
	return beam(m, inits, o)
}

// minLen is input i's minimum output length.
func (o Options) minLen(i int) int {
	if i < len(o.MinLens) {
		return o.MinLens[i]
	}
	return o.MinLen
}

// lengthNorm is the GNMT length penalty denominator.
func lengthNorm(n int, alpha float64) float64 {
	if alpha == 0 {
		return 1
	}
	return math.Pow((5+float64(n))/6, alpha)
}

// source is input i's n-gram allowance (nil: every n-gram at most once).
func (o Options) source(i int) []int32 {
	if i < len(o.Sources) {
		return o.Sources[i]
	}
	return nil
}

// banned returns the tokens that would repeat an n-gram of seq more often than src holds it (an
// n-gram src does not hold may occur once).
func banned(seq []int32, n int, src []int32) map[int32]bool {
	if n <= 0 || len(seq) < n-1 {
		return nil
	}
	prefix := seq[len(seq)-(n-1):]
	var seen map[int32]int
	for i := 0; i+n <= len(seq); i++ {
		if slices.Equal(seq[i:i+n-1], prefix) {
			if seen == nil {
				seen = map[int32]int{}
			}
			seen[seq[i+n-1]]++
		}
	}
	var out map[int32]bool
	for tok, c := range seen {
		if c >= max(1, count(src, prefix, tok)) {
			if out == nil {
				out = map[int32]bool{}
			}
			out[tok] = true
		}
	}
	return out
}

// count is the number of times prefix followed by tok occurs in src.
func count(src, prefix []int32, tok int32) int {
	n := 0
	for i := 0; i+len(prefix) < len(src); i++ {
		if src[i+len(prefix)] == tok && slices.Equal(src[i:i+len(prefix)], prefix) {
			n++
		}
	}
	return n
}

func greedy[S any](m Model[S], inits []S, o Options) []Hypothesis {
	n := len(inits)
	out := make([]Hypothesis, n)
	done := make([]bool, n)
	last := make([]int32, n)
	for i := range last {
		last[i] = o.BOS
	}
	probs := make([][]float32, n)
	for i := range probs {
		probs[i] = make([]float32, m.VocabSize())
	}
	for step := 0; step < o.MaxLen; step++ {
		var idx []int
		for i := range n {
			if !done[i] {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			break
		}
		states, tokens, ps := make([]S, len(idx)), make([]int32, len(idx)), make([][]float32, len(idx))
		for j, i := range idx {
			states[j], tokens[j], ps[j] = inits[i], last[i], probs[i]
		}
		m.Step(states, tokens, ps)
		for j, i := range idx {
			ban := banned(out[i].Tokens, o.NoRepeatNgram, o.source(i))
			early := len(out[i].Tokens) < o.minLen(i)
			best, bestP := int32(-1), float32(0)
			for w, p := range ps[j] {
				if p > bestP && !ban[int32(w)] && !(early && int32(w) == o.EOS) {
					best, bestP = int32(w), p
				}
			}
			if best < 0 {
				// Every token is banned or has probability zero: stop rather than write one the
				// model ruled out.
				best, bestP = o.EOS, 1e-30
			}
			out[i].LogProb += math.Log(max(float64(bestP), 1e-30))
			if best == o.EOS || step == o.MaxLen-1 {
				done[i] = true
				if best != o.EOS {
					out[i].Tokens = append(out[i].Tokens, best)
				}
				out[i].Score = out[i].LogProb / lengthNorm(len(out[i].Tokens)+1, o.LengthPenalty)
				continue
			}
			out[i].Tokens = append(out[i].Tokens, best)
			last[i] = best
			if o.done(i, out[i].Tokens) {
				done[i] = true
				out[i].Score = out[i].LogProb / lengthNorm(len(out[i].Tokens)+1, o.LengthPenalty)
			}
		}
	}
	return out
}

type beamHyp[S any] struct {
	tokens  []int32
	logProb float64
	state   S
}

type candidate struct {
	parent  int
	token   int32
	logProb float64
}

// beamItem is the beam search of one input: its alive hypotheses, the finished ones, and whether
// it is over.
type beamItem[S any] struct {
	alive    []beamHyp[S]
	finished []Hypothesis
	done     bool
}

func beam[S any](m Model[S], inits []S, o Options) []Hypothesis {
	items := make([]beamItem[S], len(inits))
	for i, s := range inits {
		items[i].alive = []beamHyp[S]{{state: s}}
	}
	var pool [][]float32
	for step := 0; step < o.MaxLen; step++ {
		states, tokens := stepInputs(items, o.BOS)
		if len(states) == 0 {
			break
		}
		for len(pool) < len(states) {
			pool = append(pool, make([]float32, m.VocabSize()))
		}
		probs := pool[:len(states)]
		m.Step(states, tokens, probs)

		row := 0
		last := step == o.MaxLen-1
		for i := range items {
			it := &items[i]
			if it.done {
				continue
			}
			n := len(it.alive)
			it.advance(m, o, i, probs[row:row+n], last)
			row += n
		}
	}
	out := make([]Hypothesis, len(items))
	for i, it := range items {
		slices.SortStableFunc(it.finished, func(a, b Hypothesis) int { return cmp.Compare(b.Score, a.Score) })
		if len(it.finished) > 0 {
			out[i] = it.finished[0]
		}
	}
	return out
}

// stepInputs returns the states and last tokens (bos for an empty hypothesis) of every alive
// hypothesis of the items not done, in order: one batched Step serves them all.
func stepInputs[S any](items []beamItem[S], bos int32) (states []S, tokens []int32) {
	for i := range items {
		if items[i].done {
			continue
		}
		for _, b := range items[i].alive {
			states = append(states, b.state)
			tok := bos
			if len(b.tokens) > 0 {
				tok = b.tokens[len(b.tokens)-1]
			}
			tokens = append(tokens, tok)
		}
	}
	return states, tokens
}

// advance moves item i one step on: probs are its alive hypotheses' next-token probabilities, in
// order; last is the step at o.MaxLen, which ends every hypothesis.
func (it *beamItem[S]) advance(m Model[S], o Options, i int, probs [][]float32, last bool) {
	k := o.BeamSize
	next := it.extend(m, o, i, it.candidates(o, i, probs))
	slices.SortStableFunc(it.finished, func(a, b Hypothesis) int { return cmp.Compare(b.Score, a.Score) })
	if len(it.finished) > k {
		it.finished = it.finished[:k]
	}
	it.alive = next
	if last || len(next) == 0 {
		for _, b := range next {
			it.finished = append(it.finished, Hypothesis{Tokens: b.tokens, LogProb: b.logProb,
				Score: b.logProb / lengthNorm(len(b.tokens), o.LengthPenalty)})
		}
		it.done = true
		return
	}
	if len(it.finished) >= k {
		best := next[0].logProb / lengthNorm(len(next[0].tokens), o.LengthPenalty)
		if it.finished[len(it.finished)-1].Score >= best {
			it.done = true
		}
	}
}

// candidates returns the 2k best continuations of each alive hypothesis (the banned n-grams, and
// [EOS] before the minimum length, left out), best first; a hypothesis nothing may continue is
// finished.
func (it *beamItem[S]) candidates(o Options, i int, probs [][]float32) []candidate {
	k := o.BeamSize
	var cands []candidate
	for bi, b := range it.alive {
		ban := banned(b.tokens, o.NoRepeatNgram, o.source(i))
		if len(b.tokens) < o.minLen(i) {
			if ban == nil {
				ban = map[int32]bool{}
			}
			ban[o.EOS] = true
		}
		c := topK(probs[bi], 2*k, ban, bi, b.logProb)
		if len(c) == 0 {
			// Nothing the model allows may follow (every possible token is banned): the
			// hypothesis ends here, as if [EOS] came next.
			it.finished = append(it.finished, Hypothesis{Tokens: slices.Clone(b.tokens), LogProb: b.logProb,
				Score: b.logProb / lengthNorm(len(b.tokens)+1, o.LengthPenalty)})
		}
		cands = append(cands, c...)
	}
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(b.logProb, a.logProb) })
	return cands
}

// extend takes the best candidates into the next beam (k hypotheses at most): an [EOS], or a
// continuation that completes the output, finishes its hypothesis instead when among the k best.
func (it *beamItem[S]) extend(m Model[S], o Options, i int, cands []candidate) []beamHyp[S] {
	k := o.BeamSize
	var next []beamHyp[S]
	used := make([]bool, len(it.alive))
	for rank, c := range cands {
		if len(next) == k {
			break
		}
		parent := it.alive[c.parent]
		if c.token == o.EOS {
			// Only an [EOS] among the k best continuations ends a hypothesis (as in
			// Hugging Face's BeamSearchScorer), so that a poor early stop cannot win.
			if rank < k {
				n := len(parent.tokens) + 1
				it.finished = append(it.finished, Hypothesis{Tokens: slices.Clone(parent.tokens),
					LogProb: c.logProb, Score: c.logProb / lengthNorm(n, o.LengthPenalty)})
			}
			continue
		}
		if tokens := append(slices.Clone(parent.tokens), c.token); o.done(i, tokens) {
			if rank < k { // as an [EOS] would end it
				it.finished = append(it.finished, Hypothesis{Tokens: tokens, LogProb: c.logProb,
					Score: c.logProb / lengthNorm(len(tokens)+1, o.LengthPenalty)})
			}
			continue
		}
		// The first child inherits its parent's state; later children clone it, which is
		// safe because no child has been stepped yet.
		st := parent.state
		if used[c.parent] {
			st = m.Clone(parent.state)
		}
		used[c.parent] = true
		next = append(next, beamHyp[S]{tokens: append(slices.Clone(parent.tokens), c.token), logProb: c.logProb, state: st})
	}
	return next
}

// topK returns the n most probable non-banned continuations of one hypothesis as candidates.
func topK(p []float32, n int, ban map[int32]bool, parent int, base float64) []candidate {
	type tp struct {
		tok int32
		p   float32
	}
	best := make([]tp, 0, n+1)
	for w, pw := range p {
		// A zero-probability token is never a continuation: the model (or a constraint such as
		// the UTF-8 guard) ruled it out, and picking it only because the ban left fewer than n
		// candidates writes garbage (e.g. a broken character).
		if pw <= 0 || ban[int32(w)] || (len(best) == n && pw <= best[n-1].p) {
			continue
		}
		pos, _ := slices.BinarySearchFunc(best, pw, func(a tp, t float32) int { return cmp.Compare(t, a.p) })
		best = slices.Insert(best, pos, tp{int32(w), pw})
		if len(best) > n {
			best = best[:n]
		}
	}
	out := make([]candidate, len(best))
	for i, b := range best {
		out[i] = candidate{parent: parent, token: b.tok, logProb: base + math.Log(max(float64(b.p), 1e-30))}
	}
	return out
}
