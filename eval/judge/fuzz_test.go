package judge

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Fuzz targets of the LLM answer parsers: whatever an endpoint answers, parsing never panics,
// claims are non-empty trimmed strings, and a verdict is a verdict only when ok. Seeds:
// testdata/fuzz/FuzzParseClaims and FuzzParseVerdict.
//
//	go test ./eval/judge -run '^$' -fuzz '^FuzzParseClaims$' -fuzztime 60s

var answerSeeds = []string{
	`["The drug reduced pain.", "It was safe."]`,
	"Here are the claims:\n```json\n[\"A\", \"B\"]\n```",
	"1. First claim.\n2) Second claim.\n- third\n* fourth\n• fifth",
	"I'm sorry, but I can't help with that.",
	"Yes.", "no", "**Yes**", "Entailment", "contradiction", "neutral", "maybe", "", "[", "]", "[1, 2]", `["\ud800"]`,
}

func FuzzParseClaims(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		for _, c := range ParseClaims(answer) {
			// testdata/fuzz/FuzzParseClaims/561cdf7d929c97a6: "0\r0000" once gave "\r0000" (list
			// markers stripped after trimming).
			if c == "" || strings.TrimSpace(c) != c {
				t.Fatalf("claim %q is blank or untrimmed", c)
			}
			if utf8.ValidString(answer) && !utf8.ValidString(c) {
				t.Fatalf("claim %q is invalid UTF-8 from a valid answer", c)
			}
		}
	})
}

func FuzzParseVerdict(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		yes, ok := ParseVerdict(answer)
		if yes && !ok {
			t.Fatalf("ParseVerdict(%q) = yes without ok", answer)
		}
		if yes2, ok2 := ParseVerdict(answer); yes2 != yes || ok2 != ok {
			t.Fatalf("ParseVerdict(%q) not deterministic", answer)
		}
	})
}
