package porter

import (
	"testing"
	"unicode/utf8"
)

// FuzzStem checks that arbitrary input never panics, that the stem of a
// lowercase ASCII word is lowercase ASCII and never longer than the word
// plus one letter (step 1b may add an "e"). The seed corpus runs in every
// `go test`.
func FuzzStem(f *testing.F) {
	for _, s := range []string{"", "a", "hospitalizations", "ies", "ΣΟΦΟΣ", "İ", "\xff", "yyyy"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, w string) {
		st := Stem(w)
		lowerASCII := true
		for i := 0; i < len(w); i++ {
			if w[i] < 'a' || w[i] > 'z' {
				lowerASCII = false
			}
		}
		if !lowerASCII {
			return
		}
		if utf8.RuneCountInString(st) > len(w)+1 {
			t.Fatalf("Stem(%q) = %q: longer than the word", w, st)
		}
		for i := 0; i < len(st); i++ {
			if st[i] < 'a' || st[i] > 'z' {
				t.Fatalf("Stem(%q) = %q: not lowercase ASCII", w, st)
			}
		}
	})
}
