package subword

import (
	"slices"
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
