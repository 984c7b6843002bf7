package summarizer

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/subword"
)

// wordTokenizer trains a tiny byte-level BPE on a few repeated sentences, so that "pembrolizumab"
// and "dabrafenib" are several pieces each.
func wordTokenizer(t *testing.T, kind string) *subword.Tokenizer {
	t.Helper()
	texts := []string{
		"patients received pembrolizumab and dabrafenib every week.",
		"the study involved patients with melanoma.",
		"fever, nausea and fatigue were common.",
	}
	size := 300 // byte-level BPE: 256 bytes, the special tokens and a few merges
	if kind == subword.KindWordPiece {
		size = 90 // characters (both forms) and a few merges
	}
	v, err := subword.Train(slices.Values(texts), subword.TrainOptions{Kind: kind, VocabSize: size, MinFrequency: 1})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := v.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	tok, err := subword.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestWordRule feeds the pieces of a word one by one and checks which continuations the rule
// leaves possible: those of a word of the source, those of a known word, and punctuation.
func TestWordRule(t *testing.T) {
	for _, kind := range []string{subword.KindBPE, subword.KindWordPiece} {
		t.Run(kind, func(t *testing.T) {
			tok := wordTokenizer(t, kind)
			src := tok.Encode("patients received pembrolizumab every week.")
			known := KnownWords(tok, [][]int32{tok.Encode("fatigue and dabrafenib.")})
			rule := NewWordRule(tok, known)
			pembro := tok.Encode("pembrolizumab")
			dabra := tok.Encode("dabrafenib")
			if len(pembro) < 3 || len(dabra) < 2 {
				t.Fatalf("test needs multi-piece words, got %v and %v", pembro, dabra)
			}
			fever := tok.Encode("fever,")
			if !rule.isCont(pembro[1]) {
				t.Fatalf("%q should be a word-internal piece", tok.TokenString(pembro[1]))
			}
			comma := fever[len(fever)-1:]
			tests := []struct {
				desc    string
				word    []int32 // pieces written so far of the current word
				next    int32
				allowed bool
			}{
				{"continuing a source word", pembro[:1], pembro[1], true},
				{"continuing a source word, last piece", pembro[:len(pembro)-1], pembro[len(pembro)-1], true},
				{"continuing a known word absent from the source", dabra[:1], dabra[1], true},
				{"gluing a source piece onto another word", dabra[:1], pembro[1], false},
				{"word-internal piece at the start", nil, pembro[1], false},
				{"punctuation after any word", dabra[:1], comma[0], true},
				{"a new word", pembro[:1], dabra[0], true},
				{"the piece just written again", dabra[:1], dabra[0], false},
			}
			for _, tc := range tests {
				probs := make([]float32, tok.VocabSize())
				for i := range probs {
					probs[i] = 1 / float32(len(probs))
				}
				rule.apply(probs, tc.word, src)
				if got := probs[tc.next] > 0; got != tc.allowed {
					t.Errorf("%s: %q after %q allowed = %v, want %v", tc.desc, tok.TokenString(tc.next), pieces(tok, tc.word), got, tc.allowed)
				}
				var sum float64
				for _, p := range probs {
					sum += float64(p)
				}
				if sum < 0.999 || sum > 1.001 {
					t.Errorf("%s: probabilities sum to %g after the rule, want 1", tc.desc, sum)
				}
			}
		})
	}
}

// TestWordRuleRepeat checks that a piece may follow itself only when the source repeats it.
func TestWordRuleRepeat(t *testing.T) {
	tok := wordTokenizer(t, subword.KindBPE)
	rule := NewWordRule(tok, nil)
	week := tok.Encode("and")
	if len(week) != 1 {
		t.Fatalf("test needs a one-piece word, %q is %v", "and", week)
	}
	tests := []struct {
		desc    string
		src     string
		allowed bool
	}{
		{"source never repeats it", "patients and nurses.", false},
		{"source repeats it", "patients and and nurses.", true},
	}
	for _, tc := range tests {
		probs := make([]float32, tok.VocabSize())
		for i := range probs {
			probs[i] = 1 / float32(len(probs))
		}
		rule.apply(probs, week, tok.Encode(tc.src))
		if got := probs[week[len(week)-1]] > 0; got != tc.allowed {
			t.Errorf("%s: %q again allowed = %v, want %v", tc.desc, "week", got, tc.allowed)
		}
	}
}

// TestWordRuleNext checks the word tracking: [BOS] and word-starting pieces begin a new word.
func TestWordRuleNext(t *testing.T) {
	tok := wordTokenizer(t, subword.KindBPE)
	rule := NewWordRule(tok, nil)
	ids := tok.Encode("pembrolizumab fever")
	var word []int32
	word = rule.next(word, 2, 2) // [BOS]
	for _, id := range ids {
		word = rule.next(word, id, 2)
	}
	if want := tok.Encode("fever"); !slices.Equal(word, want) {
		t.Errorf("current word after %q = %v, want %v (%q)", "pembrolizumab fever", word, want, "fever")
	}
}

func pieces(tok *subword.Tokenizer, ids []int32) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, tok.TokenString(id))
	}
	return strings.Join(parts, " ")
}

// TestCutAtWord is issue 35 item 22's cut: a summary stopped at the length limit ended in the
// first piece of a word ("(p = 0.003). N"), which grounding then ended as a sentence of its own.
func TestCutAtWord(t *testing.T) {
	tests := []struct{ desc, text, want string }{
		{"a word's first piece is dropped", "Pain fell (p = 0.003). N", "Pain fell (p = 0.003)."},
		{"a comma before the dropped piece goes with it", "Pain, nausea, fati", "Pain, nausea"},
		{"ending in punctuation ended a word", "Pain fell (p = 0.003).", "Pain fell (p = 0.003)."},
		{"a closing bracket ended a word", "Pain fell (n = 40)", "Pain fell (n = 40)"},
		{"one word is kept", "Pembro", "Pembro"},
		{"empty", "  ", ""},
	}
	for _, tc := range tests {
		if got := CutAtWord(tc.text); got != tc.want {
			t.Errorf("%s: CutAtWord(%q) = %q, want %q", tc.desc, tc.text, got, tc.want)
		}
	}
}
