package summarizer

import (
	"slices"
	"testing"
)

func TestBuildSource(t *testing.T) {
	h := toyHyper() // sep 3, ctx 4
	aspect := []int32{20, 21}
	cited := [][]int32{{30, 31}, {32}}
	doc := [][]int32{{40, 41}, {30, 31}, {32}}
	tests := []struct {
		desc     string
		full     bool
		maxLen   int
		wantIDs  []int32
		wantSegs []int32
	}{
		{desc: "tracked sentences only", maxLen: 24,
			wantIDs: []int32{20, 21, 3, 30, 31, 3, 32}, wantSegs: []int32{0, 0, 0, 0, 0, 0, 0}},
		{desc: "truncated to max_source_len", maxLen: 5,
			wantIDs: []int32{20, 21, 3, 30, 31}, wantSegs: []int32{0, 0, 0, 0, 0}},
		{desc: "full context after [CTX] in segment 1", full: true, maxLen: 24,
			wantIDs:  []int32{20, 21, 3, 30, 31, 3, 32, 4, 40, 41, 3, 30, 31, 3, 32},
			wantSegs: []int32{0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}},
		{desc: "full context: tracked part keeps half the budget", full: true, maxLen: 10,
			wantIDs:  []int32{20, 21, 3, 30, 31, 4, 40, 41, 3, 30},
			wantSegs: []int32{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h.FullContext, h.MaxSourceLen = tc.full, tc.maxLen
			ids, seg := BuildSource(h, aspect, cited, doc)
			if !slices.Equal(ids, tc.wantIDs) || !slices.Equal(seg, tc.wantSegs) {
				t.Errorf("ids %v seg %v\nwant %v seg %v", ids, seg, tc.wantIDs, tc.wantSegs)
			}
		})
	}
}

func TestSplitOn(t *testing.T) {
	tests := []struct {
		desc string
		ids  []int32
		want [][]int32
	}{
		{desc: "empty", ids: nil, want: nil},
		{desc: "one sentence", ids: []int32{5, 6}, want: [][]int32{{5, 6}}},
		{desc: "three sentences", ids: []int32{5, 3, 6, 7, 3, 8}, want: [][]int32{{5}, {6, 7}, {8}}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got := splitOn(tc.ids, 3)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if !slices.Equal(got[i], tc.want[i]) {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestGenVocabulary(t *testing.T) {
	h := toyHyper() // eos 2
	sums := [][]int32{{7, 8, 8, 9}, {8, 9, 10}, {11}}
	tests := []struct {
		desc string
		size int
		want []int32
	}{
		{desc: "disabled", size: 0, want: nil},
		{desc: "most frequent plus EOS, sorted", size: 3, want: []int32{2, 8, 9}},
		{desc: "ties broken by id", size: 4, want: []int32{2, 7, 8, 9}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := GenVocabulary(sums, tc.size, h); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
