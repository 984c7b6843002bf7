package subword

import (
	"slices"
	"strings"
	"testing"
)

// FuzzEncode checks, on arbitrary strings, that Encode never panics, returns ids in range, agrees
// with sugarme/tokenizer, that byte-level decoding returns exactly Clean(s), and that Clean is
// idempotent. Inputs that once failed live in testdata/fuzz/FuzzEncode and run with every
// `go test`. Fuzz with
//
//	go test ./subword -run '^$' -fuzz FuzzEncode -fuzztime 5m
func FuzzEncode(f *testing.F) {
	for _, s := range corpusHostile {
		f.Add(s, false)
		f.Add(s, true)
	}
	for _, s := range genCorpus(17, 20) {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, wordPiece bool) {
		kind := KindBPE
		if wordPiece {
			kind = KindWordPiece
		}
		tok := sharedTokenizer(t, kind)
		c := Clean(s)
		if Clean(c) != c {
			t.Fatalf("Clean not idempotent: %q -> %q -> %q", s, c, Clean(c))
		}
		got := tok.Encode(s)
		for _, id := range got {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("id %d out of range", id)
			}
		}
		if want := tok.encodeReference(s); !slices.Equal(got, want) {
			t.Fatalf("%s %q: native %v, library %v", kind, c, got, want)
		}
		if kind == KindBPE {
			if d := tok.Decode(got); d != c {
				t.Fatalf("Decode(Encode(%q)) = %q, want %q", s, d, c)
			}
		}
	})
}

// FuzzCleanLongWords repeats an arbitrary string until it is longer than MaxWordBytes, so that
// Clean has to break words (issue 10 item 12), and checks that Clean stays idempotent, leaves no
// word over MaxWordBytes, changes nothing but spaces, and that byte-level decoding returns it.
//
//	go test ./subword -run '^$' -fuzz '^FuzzCleanLongWords$' -fuzztime 60s
func FuzzCleanLongWords(f *testing.F) {
	for _, s := range []string{"x", "e\u0301", "😀", "中文", "a b", "\u0301", "ﬁ", "Ω", "\u1100\u1161"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return
		}
		long := strings.Repeat(s, MaxWordBytes/len(s)+2)
		c := Clean(long)
		if Clean(c) != c {
			t.Fatalf("Clean not idempotent on %q", s)
		}
		for _, w := range strings.Split(c, " ") {
			if len(w) > MaxWordBytes {
				t.Fatalf("word of %d bytes after Clean", len(w))
			}
		}
		unbroken, _ := BreakLongWords(c)
		if unbroken != c {
			t.Fatalf("Clean left a word to break")
		}
		tok := sharedTokenizer(t, KindBPE)
		if d := tok.Decode(tok.Encode(long)); d != c {
			t.Fatalf("Decode(Encode) differs from Clean for %q", s)
		}
	})
}
