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

// TestUTF8GuardNeverBreaksCharacters is the decoding side of issue 10 item 14 (emoji): the
// summarizer generated the first byte of an emoji and went on with another piece, which Decode
// rendered as U+FFFD. A random walk that only takes pieces the guard allows, over a vocabulary
// learned without any emoji, never produces U+FFFD; the guard allows an emoji's own pieces in
// order and forbids [EOS] in the middle of it.
func TestUTF8GuardNeverBreaksCharacters(t *testing.T) {
	v, err := Train(slices.Values(append(genCorpus(5, 300), "émigré naïve", "中文字符")), TrainOptions{VocabSize: 500})
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
	g := tok.NewUTF8Guard()
	eos, _ := tok.SpecialID("[SEP]")
	// An emoji's own pieces are allowed one after the other; [EOS] and a new word are not.
	ids := tok.Encode("x 😀")
	if len(ids) != 7 {
		t.Fatalf("%d pieces for \"x 😀\", want 7 (a vocabulary without emoji merges)", len(ids))
	}
	var s UTF8State
	for k, id := range ids {
		if !g.Allowed(s, id, eos) {
			t.Fatalf("piece %d (%q) of the emoji refused", k, tok.TokenString(id))
		}
		s = g.Next(s, id)
		// ids are "Ġ" "x" "Ġ" and the emoji's 4 bytes: after its 1st, 2nd and 3rd byte it is open.
		if k >= len(ids)-4 && k < len(ids)-1 {
			if g.Allowed(s, eos, eos) || g.Allowed(s, ids[1], eos) {
				t.Fatalf("after piece %d of the emoji, [EOS] or a new word is allowed", k)
			}
		}
	}
	if s.N != 0 {
		t.Fatalf("state after the whole emoji: %d pending bytes", s.N)
	}
	// Random walk under Apply with uniform probabilities.
	probs := make([]float32, tok.VocabSize())
	var seq []int32
	s = UTF8State{}
	rng := uint64(1)
	for step := 0; step < 3000 || s.N != 0; step++ {
		for i := range probs {
			probs[i] = 1 / float32(len(probs))
		}
		g.Apply(probs, s, eos)
		var allowed []int32
		for id, p := range probs {
			if p > 0 && int32(id) != eos {
				allowed = append(allowed, int32(id))
			}
		}
		rng = rng*6364136223846793005 + 1442695040888963407
		id := allowed[int(rng>>33)%len(allowed)]
		seq = append(seq, id)
		s = g.Next(s, id)
	}
	if d := tok.Decode(seq); strings.ContainsRune(d, '\uFFFD') {
		t.Fatalf("guarded walk decodes with U+FFFD: %.200q", d)
	}
	// Without the guard the same walk breaks characters: the test can fail.
	var bad []int32
	for id := tok.NumSpecial(); id < tok.VocabSize(); id++ {
		if b := g.bytes[id]; len(b) > 0 && b[0] >= 0xF0 {
			bad = append(bad, int32(id), int32(tok.NumSpecial()+'a'))
			break
		}
	}
	if len(bad) > 0 && !strings.ContainsRune(tok.Decode(bad), '\uFFFD') {
		t.Error("an unguarded broken character should decode with U+FFFD")
	}
}
