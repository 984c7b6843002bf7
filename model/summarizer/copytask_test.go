package summarizer

import (
	"slices"
	"strings"
	"testing"
)

func TestCopyExamples(t *testing.T) {
	h := toyHyper() // sep 3
	h.MaxSummaryLen = 5
	abstracts := [][][]int32{{{10, 11}, {12}, {13, 14, 15}}, nil, {{20}}}
	exs := CopyExamples(h, abstracts, 50, 7)
	if len(exs) != 50 {
		t.Fatalf("%d examples, want 50", len(exs))
	}
	for i, ex := range exs {
		if ex.Src[0] != h.SepID {
			t.Errorf("example %d: source %v does not start with the aspect-free [SEP]", i, ex.Src)
		}
		var body []int32
		for _, id := range ex.Src[1:] {
			if id != h.SepID {
				body = append(body, id)
			}
		}
		// The target is the copied sentences, cut to MaxSummaryLen-1 tokens.
		if !slices.Equal(ex.Tgt, body[:min(len(body), h.MaxSummaryLen-1)]) {
			t.Errorf("example %d: target %v is not a copy of source %v", i, ex.Tgt, ex.Src)
		}
	}
	if again := CopyExamples(h, abstracts, 50, 7); !slices.EqualFunc(exs, again, func(a, b Example) bool { return slices.Equal(a.Src, b.Src) }) {
		t.Error("same seed, different examples")
	}
	if got := CopyExamples(h, nil, 5, 7); got != nil {
		t.Errorf("no abstracts: %d examples", len(got))
	}
}

func TestMinLenFor(t *testing.T) {
	tests := []struct {
		desc                string
		cited               int
		ratio               float64
		maxLen, floor, want int
	}{
		{desc: "ratio of the tracked tokens", cited: 40, ratio: 0.6, maxLen: 64, floor: 1, want: 24},
		{desc: "capped below max length", cited: 200, ratio: 0.6, maxLen: 64, floor: 1, want: 63},
		{desc: "at least the floor", cited: 1, ratio: 0.2, maxLen: 64, floor: 1, want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := MinLenFor(tc.cited, tc.ratio, tc.maxLen, tc.floor); got != tc.want {
				t.Errorf("MinLenFor = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAddChain feeds a source's tokens one by one: once two tokens match, only the position
// continuing the longest copied span gets the bonus, even where the last token occurs twice.
func TestAddChain(t *testing.T) {
	src := &Source{IDs: []int32{5, 6, 7, 9, 6, 8}}
	st := &DecState{Src: src}
	tests := []struct {
		desc string
		tok  int32
		want []float32
	}{
		{desc: "one token: no chain yet", tok: 5, want: []float32{0, 0, 0, 0, 0, 0}},
		{desc: "two tokens: continue after the span 5 6, not after the other 6", tok: 6, want: []float32{0, 0, 1, 0, 0, 0}},
		{desc: "three tokens", tok: 7, want: []float32{0, 0, 0, 1, 0, 0}},
		{desc: "span broken", tok: 8, want: []float32{0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		a := make([]float32, len(src.IDs))
		st.addChain(a, tc.tok, 1, 3)
		if !slices.Equal(a, tc.want) {
			t.Errorf("%s: bonus %v, want %v", tc.desc, a, tc.want)
		}
	}
}

// TestAddChainAcrossSeparator checks that a span reaching the end of a tracked sentence continues
// with the first token of the next one, not with the [SEP] (id 3 here) between them.
func TestAddChainAcrossSeparator(t *testing.T) {
	st := &DecState{Src: &Source{IDs: []int32{5, 6, 3, 7, 8}}}
	a := make([]float32, 5)
	for _, tok := range []int32{5, 6} {
		clear(a)
		st.addChain(a, tok, 1, 3)
	}
	if want := []float32{0, 0, 0, 1, 0}; !slices.Equal(a, want) {
		t.Errorf("bonus after copying 5 6 = %v, want %v (the sentence after [SEP])", a, want)
	}
}

// TestAddStart: the first token of each tracked sentence gets the bonus until its token has been
// fed once, so that a start copied without its sentence is not offered again (the loop
// "Overall CONCLUSIONS Overall ..." seen on the TracSum dev parts with a bonus of 4 or more).
func TestAddStart(t *testing.T) {
	// aspect 10, [SEP]=3, sentence 5 6, [SEP], sentence 7 8
	st := &DecState{Src: &Source{IDs: []int32{10, 3, 5, 6, 3, 7, 8}, starts: []int{2, 5}}}
	tests := []struct {
		desc string
		tok  int32
		want []float32
	}{
		{desc: "[BOS]: both starts", tok: 1, want: []float32{0, 0, 1, 0, 0, 1, 0}},
		{desc: "a generated token: both starts", tok: 11, want: []float32{0, 0, 1, 0, 0, 1, 0}},
		{desc: "start 7 fed: only start 5 left", tok: 7, want: []float32{0, 0, 1, 0, 0, 0, 0}},
		{desc: "start 5 fed: none left", tok: 5, want: []float32{0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		a := make([]float32, len(st.Src.IDs))
		st.addStart(a, tc.tok, 1)
		if !slices.Equal(a, tc.want) {
			t.Errorf("%s: bonus %v, want %v", tc.desc, a, tc.want)
		}
	}
}

// TestLabelLen: the section label of a structured abstract's sentence is skipped by the start
// bonus when it ends on a token boundary.
func TestLabelLen(t *testing.T) {
	words := map[int32]string{10: "PATIENTS", 11: " AND", 12: " METHODS", 13: ":", 14: " Patients", 15: " were",
		16: "RESULTS:", 17: " The", 18: "RES", 19: "ULTS: Forty"}
	detok := func(ids []int32) string {
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(words[id])
		}
		return b.String()
	}
	labelLen := LabelLen(detok)
	tests := []struct {
		desc string
		sent []int32
		want int
	}{
		{desc: "label of four tokens", sent: []int32{10, 11, 12, 13, 14, 15}, want: 4},
		{desc: "label of one token", sent: []int32{16, 17, 15}, want: 1},
		{desc: "no label", sent: []int32{14, 15}, want: 0},
		{desc: "label not on a token boundary", sent: []int32{18, 19, 15}, want: 0},
		{desc: "label alone (nothing after it)", sent: []int32{16}, want: 0},
	}
	for _, tc := range tests {
		if got := labelLen(tc.sent); got != tc.want {
			t.Errorf("%s: LabelLen = %d, want %d", tc.desc, got, tc.want)
		}
	}
	// In a source: aspect 20 [SEP]=3 labelled sentence [SEP] plain sentence.
	n := &Net{H: toyHyper(), LabelLen: labelLen}
	if got, want := n.sentenceStarts([]int32{20, 3, 10, 11, 12, 13, 14, 15, 3, 14, 15}), []int{6, 9}; !slices.Equal(got, want) {
		t.Errorf("sentenceStarts = %v, want %v", got, want)
	}
}
