package pretrained

import (
	"testing"

	"github.com/tracksum/tracksum/model"
)

// The padded lengths of the pretrained batches (model.BucketLen). In this package, not in model's
// own tests: asking CompilesPerShape creates the process-wide backend, which model's
// TestBackendHonoursEnvironment must create first.

func TestPaddedLengths(t *testing.T) {
	tests := []struct {
		n, step       int
		roundUp, pow2 int
	}{
		{n: 1, step: 16, roundUp: 16, pow2: 16},
		{n: 16, step: 16, roundUp: 16, pow2: 16},
		{n: 17, step: 16, roundUp: 32, pow2: 32},
		{n: 33, step: 16, roundUp: 48, pow2: 64},
		{n: 100, step: 16, roundUp: 112, pow2: 128},
		{n: 1025, step: 16, roundUp: 1040, pow2: 2048},
		{n: 5, step: 4, roundUp: 8, pow2: 8},
		{n: 0, step: 4, roundUp: 4, pow2: 4},
		{n: 130, step: 64, roundUp: 192, pow2: 256},
	}
	for _, tt := range tests {
		if got := model.BucketLenFor(tt.n, tt.step, false); got != tt.roundUp {
			t.Errorf("model.BucketLenFor(%d, %d, false) = %d, want %d", tt.n, tt.step, got, tt.roundUp)
		}
		if got := model.BucketLenFor(tt.n, tt.step, true); got != tt.pow2 {
			t.Errorf("model.BucketLenFor(%d, %d, true) = %d, want %d", tt.n, tt.step, got, tt.pow2)
		}
		want := tt.roundUp
		if model.CompilesPerShape() {
			want = tt.pow2
		}
		if got := model.BucketLen(tt.n, tt.step); got != want {
			t.Errorf("BucketLen(%d, %d) = %d, want %d (compiles per shape: %v)", tt.n, tt.step, got, want, model.CompilesPerShape())
		}
	}
}

// TestMaxNewTokens: a pretrained summarizer's generation cap is summarizer.max_new_tokens when
// set, else the longest training answer, at least 128 (issue 36 item 1: it was max_summary_len,
// 64 in configs/paper.yaml, below 12% of the dev references).
func TestMaxNewTokens(t *testing.T) {
	answer := func(prompt, turn int) Example {
		return AnswerExample(make([]int32, prompt), make([]int32, turn))
	}
	for _, tc := range []struct {
		desc       string
		configured int
		train      []Example
		want       int
	}{
		{"configured", 256, []Example{answer(10, 300)}, 256},
		{"short answers: at least 128", 0, []Example{answer(10, 20), answer(5, 64)}, 128},
		{"the longest answer", 0, []Example{answer(10, 20), answer(40, 200), answer(3, 150)}, 200},
		{"no examples", 0, nil, 128},
	} {
		if got := maxNewTokens(tc.configured, tc.train); got != tc.want {
			t.Errorf("%s: maxNewTokens = %d, want %d", tc.desc, got, tc.want)
		}
	}
}
