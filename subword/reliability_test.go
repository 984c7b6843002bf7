package subword

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestUnbrokenMultiMegabyteToken is the tokenizer's part of the regression test of issue 10 item
// 12: an unbroken 50 MB token cost prepare 50 s and 5.9 GB (BPE merging and vocabulary counting
// per word). Clean now breaks words longer than MaxWordBytes, so encoding and training see pieces
// of bounded length; the test asserts on the pieces, not on time.
func TestUnbrokenMultiMegabyteToken(t *testing.T) {
	token := strings.Repeat("xyz", 1<<20) // 3 MiB without a space
	c := Clean("before " + token + " after")
	words := strings.Fields(c)
	if want := 2 + (len(token)+MaxWordBytes-1)/MaxWordBytes; len(words) != want {
		t.Fatalf("%d words after Clean, want %d", len(words), want)
	}
	for _, w := range words {
		if len(w) > MaxWordBytes {
			t.Fatalf("word of %d bytes after Clean", len(w))
		}
	}
	if Clean(c) != c {
		t.Error("Clean is not idempotent on a broken word")
	}
	tok := sharedTokenizer(t, KindBPE)
	ids := tok.Encode("before " + token + " after")
	if d := tok.Decode(ids); d != c {
		t.Errorf("Decode(Encode) differs from Clean (lengths %d, %d)", len(d), len(c))
	}
	// Training counts pre-tokens of at most MaxWordBytes+1 bytes (the prefix space).
	counts := countWords(slices.Values([]string{token, "a b"}), byteLevelPieces)
	for w := range counts {
		if len(w) > MaxWordBytes+1 {
			t.Fatalf("training counted a word of %d bytes", len(w))
		}
	}
	// The first piece, the 3 phases of "xyz" in 256-byte pieces, the tail, "a" and "b".
	if len(counts) > 7 {
		t.Errorf("%d distinct words, want at most 7", len(counts))
	}
}

// TestBreakLongWords pins where words are broken: at MaxWordBytes, never inside a UTF-8 character,
// and not before a combining mark when another boundary is near.
func TestBreakLongWords(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		in     string
		pieces []int // byte lengths of the words of the result
		broken int
	}{
		{"short words untouched", "a bb ccc", []int{1, 2, 3}, 0},
		{"exactly the limit", strings.Repeat("a", MaxWordBytes), []int{MaxWordBytes}, 0},
		{"one byte over", strings.Repeat("a", MaxWordBytes+1), []int{MaxWordBytes, 1}, 1},
		{"multi-byte runes never split", strings.Repeat("é", MaxWordBytes), []int{MaxWordBytes, MaxWordBytes}, 1},
		{"4-byte emoji", "x" + strings.Repeat("😀", 100), []int{253, 148}, 1},
		{"not before a combining mark", strings.Repeat("a", MaxWordBytes-1) + "e\u0301" + "zz", []int{MaxWordBytes - 1, 5}, 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, broken := BreakLongWords(tc.in)
			var lens []int
			for _, w := range strings.Split(got, " ") {
				lens = append(lens, len(w))
			}
			if !slices.Equal(lens, tc.pieces) || broken != tc.broken {
				t.Errorf("pieces %v (%d broken), want %v (%d)", lens, broken, tc.pieces, tc.broken)
			}
			if strings.ReplaceAll(got, " ", "") != strings.ReplaceAll(tc.in, " ", "") {
				t.Error("text changed beyond the inserted spaces")
			}
		})
	}
}

// TestEmojiRoundTrip is the tokenizer's part of issue 10 item 14 (emoji): a byte-level BPE learned
// from text without a single emoji must still encode and decode emoji (and ZWJ-free sequences with
// skin tones and variation selectors) exactly.
func TestEmojiRoundTrip(t *testing.T) {
	v, err := Train(slices.Values(genCorpus(3, 500)), TrainOptions{VocabSize: 600})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := v.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Pain fell 😀.", "👍🏽 thumbs", "heart ❤️ and 🩺 stethoscope", "🇺🇸 flag"} {
		ids := tok.Encode(s)
		if got := tok.Decode(ids); got != Clean(s) || strings.ContainsRune(got, '\uFFFD') {
			t.Errorf("Decode(Encode(%q)) = %q", s, got)
		}
		if got := tok.Decode(tok.encodeReference(s)); got != Clean(s) {
			t.Errorf("library encoding of %q decodes to %q", s, got)
		}
	}
}
