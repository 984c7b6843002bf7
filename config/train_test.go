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
