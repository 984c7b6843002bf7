package wordtok

import (
	"strings"
	"testing"
)

// FuzzTokenize checks that arbitrary text never panics and yields non-empty
// tokens without whitespace. The seed corpus runs in every `go test`.
func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"", `He said "don't" (twice).`, "'tis cannot wanna\t", "a.'\n", ",:\n", "``''\"", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range Tokenize(s) {
			if tok == "" || strings.IndexFunc(tok, isSpace) >= 0 {
				t.Fatalf("Tokenize(%q): bad token %q", s, tok)
			}
		}
	})
}
