package config

import (
	"strings"
	"testing"
)

// TestParseBytes: sizes with their unit; issue 35 item 7: 0.5B and 1e-7B truncated to 0 bytes,
// which --plan read as no verdict, while 0 was refused. Anything under one byte is refused.
func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		desc, in string
		want     int64 // 0: refused
	}{
		{"GiB", "80GiB", 80 << 30},
		{"GB", "80GB", 80e9},
		{"fraction of a unit", "0.5GiB", 1 << 29},
		{"bytes", "512B", 512},
		{"one byte", "1B", 1},
		{"half a byte", "0.5B", 0},
		{"a tiny fraction", "1e-7B", 0},
		{"a tiny fraction of a kB", "1e-4kB", 0},
		{"zero", "0", 0},
		{"zero with a unit", "0GiB", 0},
		{"negative", "-1GiB", 0},
		{"no unit", "80", 0},
		{"NaN", "NaNGB", 0},
		{"too large", "1e10TB", 0},
	} {
		got, err := ParseBytes(tc.in)
		if tc.want == 0 {
			if err == nil || !strings.Contains(err.Error(), "want at least 1 byte") {
				t.Errorf("%s: ParseBytes(%q) = %d, %v; want a refusal", tc.desc, tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: ParseBytes(%q) = %d, %v; want %d", tc.desc, tc.in, got, err, tc.want)
		}
	}
}

// TestResolveAttention: auto is flash only on a CUDA backend in bf16 (the go backend keeps the
// decomposed graph, its results unchanged); flash elsewhere is a one-line error.
func TestResolveAttention(t *testing.T) {
	for _, tc := range []struct {
		desc, attention, precision, backend string
		want                                bool
		err                                 string
	}{
		{desc: "auto on go", attention: AttentionAuto, precision: PrecisionF32, backend: "go"},
		{desc: "auto in bf16 on go", attention: AttentionAuto, precision: PrecisionBF16, backend: "go"},
		{desc: "auto in f32 on cuda", attention: AttentionAuto, precision: PrecisionF32, backend: "xla:cuda"},
		{desc: "auto in bf16 on cuda", attention: AttentionAuto, precision: PrecisionBF16, backend: "xla:/opt/jax_plugins/xla_cuda13/xla_cuda_plugin.so", want: true},
		{desc: "eager on cuda", attention: AttentionEager, precision: PrecisionBF16, backend: "xla:cuda"},
		{desc: "flash on cuda", attention: AttentionFlash, precision: PrecisionBF16, backend: "xla:cuda", want: true},
		{desc: "flash on go", attention: AttentionFlash, precision: PrecisionBF16, backend: "go",
			err: "flash needs cuDNN's fused attention, which backend go lacks: use auto or eager"},
		{desc: "flash in f32", attention: AttentionFlash, precision: PrecisionF32, backend: "xla:cuda",
			err: "flash needs precision bf16 (cuDNN's fused attention is half precision), got f32"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ResolveAttention(tc.attention, tc.precision, tc.backend)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	loop := DefaultTrainLoop()
	loop.Attention = "sdpa"
	if err := loop.Validate("tracker.train"); err == nil || !strings.Contains(err.Error(), `tracker.train.attention: must be one of [auto eager flash], got "sdpa"`) {
		t.Errorf("Validate: %v", err)
	}
}

// TestFromScratchUnread: the keys issue 36 added for the pretrained models only stay out of the
// cross-validations' settings records, so that a cross-validation finished before them is not
// refused; the from-scratch models' keys stay in.
func TestFromScratchUnread(t *testing.T) {
	for key, want := range map[string]bool{
		"summarizer.max_new_tokens": true, "summarizer.temperature": true, "summarizer.top_p": true, "summarizer.top_k": true,
		"tracker.chat_template": true, "summarizer.chat_template": true, "tracker.train.precision": true,
		"summarizer.beam_size": false, "summarizer.max_decode_len": false, "tracker.train.learning_rate": false,
	} {
		if got := FromScratchUnread(key); got != want {
			t.Errorf("FromScratchUnread(%s) = %v, want %v", key, got, want)
		}
	}
}
