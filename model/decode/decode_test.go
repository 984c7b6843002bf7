package decode

import (
	"slices"
	"testing"
)

// tableModel is a hand-built model: the next-token distribution is looked up from the prefix fed
// so far (as a string of token ids); unknown prefixes predict [EOS] with certainty.
type tableModel struct {
	vocab int
	table map[string][]float32
	steps int
}

type prefix struct{ fed []int32 }

func key(fed []int32) string {
	b := make([]byte, len(fed))
	for i, t := range fed {
		b[i] = byte('0' + t)
	}
	return string(b)
}

func (m *tableModel) Step(states []*prefix, tokens []int32, probs [][]float32) {
	m.steps++
	for i, st := range states {
		st.fed = append(st.fed, tokens[i])
		p, ok := m.table[key(st.fed)]
		clear(probs[i])
		if !ok {
			probs[i][eos] = 1
			continue
		}
		copy(probs[i], p)
	}
}

func (m *tableModel) Clone(s *prefix) *prefix { return &prefix{fed: slices.Clone(s.fed)} }
func (m *tableModel) VocabSize() int          { return m.vocab }

const (
	bos = 0
	eos = 1
	tA  = 2
	tB  = 3
	tC  = 4
)

// trap: greedy takes A (0.6) and then can only stop at 0.4 (total 0.24), while B (0.4) is followed
// by [EOS] with 0.9 (total 0.36), the most probable sequence.
func trap() *tableModel {
	return &tableModel{vocab: 5, table: map[string][]float32{
		key([]int32{bos}):     {0, 0, 0.6, 0.4, 0},
		key([]int32{bos, tA}): {0, 0.4, 0.35, 0, 0.25},
		key([]int32{bos, tB}): {0, 0.9, 0.05, 0, 0.05},
	}}
}

func TestSearch(t *testing.T) {
	tests := []struct {
		desc string
		opts Options
		want []int32
	}{
		{desc: "greedy takes the locally best first token", opts: Options{BeamSize: 1, MaxLen: 5}, want: []int32{tA}},
		{desc: "beam search finds the most probable sequence", opts: Options{BeamSize: 2, MaxLen: 5}, want: []int32{tB}},
		{desc: "max length truncates", opts: Options{BeamSize: 1, MaxLen: 1}, want: []int32{tA}},
		// After A, [EOS] (0.4) is the most probable token; MinLen 2 forces a second token.
		{desc: "min length delays EOS (greedy)", opts: Options{BeamSize: 1, MaxLen: 5, MinLen: 2}, want: []int32{tA, tA}},
		{desc: "min length delays EOS (beam)", opts: Options{BeamSize: 2, MaxLen: 5, MinLen: 2}, want: []int32{tA, tA}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			m := trap()
			tc.opts.BOS, tc.opts.EOS = bos, eos
			got := Search[*prefix](m, []*prefix{{}}, tc.opts)
			if !slices.Equal(got[0].Tokens, tc.want) {
				t.Errorf("tokens = %v, want %v", got[0].Tokens, tc.want)
			}
		})
	}
}

// TestPerInputMinLen decodes two copies of the trap model's input together: MinLens applies to
// each input its own minimum, in greedy and beam search alike.
func TestPerInputMinLen(t *testing.T) {
	for _, beam := range []int{1, 2} {
		m := trap()
		o := Options{BeamSize: beam, MaxLen: 5, MinLen: 2, MinLens: []int{0}, BOS: bos, EOS: eos}
		got := Search[*prefix](m, []*prefix{{}, {}}, o)
		// Input 0 has no minimum (MinLens[0] = 0); input 1 is beyond MinLens and uses MinLen 2.
		want0 := []int32{tA}
		if beam > 1 {
			want0 = []int32{tB}
		}
		if !slices.Equal(got[0].Tokens, want0) || !slices.Equal(got[1].Tokens, []int32{tA, tA}) {
			t.Errorf("beam %d: tokens %v and %v, want %v and [%d %d]", beam, got[0].Tokens, got[1].Tokens, want0, tA, tA)
		}
	}
}

func TestPerInputSources(t *testing.T) {
	// Always prefers A; input 0's source holds the bigram A A twice, input 1 has no source.
	m := &tableModel{vocab: 5, table: map[string][]float32{}}
	seq := []int32{bos}
	for range 8 {
		m.table[key(seq)] = []float32{0, 0.1, 0.5, 0.4, 0}
		seq = append(seq, tA)
	}
	o := Options{BeamSize: 1, MaxLen: 6, NoRepeatNgram: 2, Sources: [][]int32{{tA, tA, tB, tA, tA}}, BOS: bos, EOS: eos}
	got := Search[*prefix](m, []*prefix{{}, {}}, o)
	if want0, want1 := []int32{tA, tA, tA, tB}, []int32{tA, tA, tB}; !slices.Equal(got[0].Tokens, want0) || !slices.Equal(got[1].Tokens, want1) {
		t.Errorf("tokens %v and %v, want %v and %v", got[0].Tokens, got[1].Tokens, want0, want1)
	}
}

func TestBeamScoreIsLogProbOfBest(t *testing.T) {
	m := trap()
	got := Search[*prefix](m, []*prefix{{}, {}}, Options{BeamSize: 3, MaxLen: 5, BOS: bos, EOS: eos})
	for i, h := range got {
		if !slices.Equal(h.Tokens, []int32{tB}) {
			t.Errorf("input %d: tokens = %v, want [B]", i, h.Tokens)
		}
		// log(0.4 * 0.9)
		if want := -1.0216512475319814; h.LogProb-want > 1e-6 || want-h.LogProb > 1e-6 {
			t.Errorf("input %d: log-prob = %g, want %g", i, h.LogProb, want)
		}
	}
}

func TestNoRepeatNgram(t *testing.T) {
	// A model that always prefers A: without blocking it repeats A until the max length.
	m := &tableModel{vocab: 5, table: map[string][]float32{}}
	seq := []int32{bos}
	for range 8 {
		m.table[key(seq)] = []float32{0, 0.1, 0.5, 0.4, 0}
		seq = append(seq, tA)
	}
	tests := []struct {
		desc   string
		n      int
		source []int32
		want   []int32
	}{
		{desc: "no blocking", n: 0, want: []int32{tA, tA, tA, tA}},
		{desc: "bigrams blocked", n: 2, want: []int32{tA, tA, tB}},
		{desc: "unigrams blocked", n: 1, want: []int32{tA, tB}},
		{desc: "bigram the source holds once", n: 2, source: []int32{tC, tA, tA, tC}, want: []int32{tA, tA, tB}},
		{desc: "bigram the source holds twice", n: 2, source: []int32{tA, tA, tC, tA, tA}, want: []int32{tA, tA, tA, tB}},
		{desc: "overlapping bigrams in the source", n: 2, source: []int32{tA, tA, tA}, want: []int32{tA, tA, tA, tB}},
		{desc: "unigram the source holds three times", n: 1, source: []int32{tA, tC, tA, tA}, want: []int32{tA, tA, tA, tB}},
		{desc: "source without the n-gram", n: 2, source: []int32{tB, tC}, want: []int32{tA, tA, tB}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := Options{BeamSize: 1, MaxLen: 4, NoRepeatNgram: tc.n, BOS: bos, EOS: eos}
			if tc.source != nil {
				o.Sources = [][]int32{tc.source}
			}
			got := Search[*prefix](m, []*prefix{{}}, o)
			if !slices.Equal(got[0].Tokens, tc.want) {
				t.Errorf("tokens = %v, want %v", got[0].Tokens, tc.want)
			}
		})
	}
}

// TestNoRepeatNeverPicksImpossibleToken is the regression test of the broken emoji: when the
// no-repeat ban leaves no token of non-zero probability, decoding stops instead of writing a token
// the model gave probability zero (a stray byte of a character, for the summarizer).
func TestNoRepeatNeverPicksImpossibleToken(t *testing.T) {
	m := &tableModel{vocab: 5, table: map[string][]float32{
		key([]int32{bos}):     {0, 0, 1, 0, 0},
		key([]int32{bos, tA}): {0, 0, 1, 0, 0},
	}}
	for _, beam := range []int{1, 2} {
		got := Search[*prefix](m, []*prefix{{}}, Options{BeamSize: beam, MaxLen: 4, NoRepeatNgram: 1, BOS: bos, EOS: eos})
		if !slices.Equal(got[0].Tokens, []int32{tA}) {
			t.Errorf("beam %d: tokens = %v, want [%d]", beam, got[0].Tokens, tA)
		}
	}
}

func TestLengthPenaltyFavoursLonger(t *testing.T) {
	// Stopping now: 0.5. Continuing with C then stopping: 0.45*1. With alpha = 0 the short
	// sequence wins; a strong length penalty prefers the longer one.
	m := &tableModel{vocab: 5, table: map[string][]float32{
		key([]int32{bos}):         {0, 0, 0, 0, 1},
		key([]int32{bos, tC}):     {0, 0.5, 0, 0.05, 0.45},
		key([]int32{bos, tC, tC}): {0, 1, 0, 0, 0},
	}}
	short := Search[*prefix](m, []*prefix{{}}, Options{BeamSize: 2, MaxLen: 6, BOS: bos, EOS: eos})
	long := Search[*prefix](m, []*prefix{{}}, Options{BeamSize: 2, MaxLen: 6, LengthPenalty: 2, BOS: bos, EOS: eos})
	if !slices.Equal(short[0].Tokens, []int32{tC}) {
		t.Errorf("alpha=0: tokens = %v, want [C]", short[0].Tokens)
	}
	if !slices.Equal(long[0].Tokens, []int32{tC, tC}) {
		t.Errorf("alpha=2: tokens = %v, want [C C]", long[0].Tokens)
	}
}

// TestDone: Options.Done ends a hypothesis as [EOS] would, keeping its tokens, in greedy and beam
// search, and decoding stops there instead of running on to MaxLen (issue 35 item 10: a chat
// model's end marker spelt in ordinary tokens).
func TestDone(t *testing.T) {
	for _, beam := range []int{1, 2} {
		m := &tableModel{vocab: 5, table: map[string][]float32{}}
		seq := []int32{bos}
		for range 12 {
			m.table[key(seq)] = []float32{0, 0.01, 0.9, 0.09, 0}
			seq = append(seq, tA)
		}
		done := func(_ int, tokens []int32) bool { return len(tokens) >= 3 && tokens[len(tokens)-1] == tA }
		got := Search[*prefix](m, []*prefix{{}}, Options{BeamSize: beam, MaxLen: 10, BOS: bos, EOS: eos, Done: done})
		if !slices.Equal(got[0].Tokens, []int32{tA, tA, tA}) || m.steps > 4 {
			t.Errorf("beam %d: tokens %v after %d steps, want [A A A] after at most 4", beam, got[0].Tokens, m.steps)
		}
	}
}
