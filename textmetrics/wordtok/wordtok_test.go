package wordtok

import (
	"encoding/json"
	"os"
	"slices"
	"sync"
	"testing"
)

func TestTokenizeExamples(t *testing.T) {
	tests := []struct {
		desc, text string
		want       []string
	}{
		{"empty", "", nil},
		{"quotes, clitic and parens", `He said "don't" (twice).`,
			[]string{"He", "said", "``", "do", "n't", "''", "(", "twice", ")", "."}},
		{"only the final period is split", "Dr. Smith came. He left.",
			[]string{"Dr.", "Smith", "came.", "He", "left", "."}},
		{"numbers keep commas and colons", "3,000 at 10:30, ok",
			[]string{"3,000", "at", "10:30", ",", "ok"}},
		{"contractions", "I cannot, 'tis gonna be",
			[]string{"I", "can", "not", ",", "'t", "is", "gon", "na", "be"}},
		{"ellipsis and dashes", "wait...no--yes",
			[]string{"wait", "...", "no", "--", "yes"}},
	}
	for _, tc := range tests {
		if got := Tokenize(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Tokenize(%q) = %q, want %q", tc.desc, tc.text, got, tc.want)
		}
	}
}

// TestTokenizeGolden compares with NLTK's word_tokenize(text,
// preserve_line=True) on testdata/golden.json (regenerate:
// /usr/bin/python3 tools/golden/wordtok_golden.py eval/wordtok/testdata/golden.json).
func TestTokenizeGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Text   string   `json:"text"`
			Tokens []string `json:"tokens"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("testdata/golden.json: %v", err)
	}
	if len(g.Cases) < 500 {
		t.Fatalf("golden file has %d sentences, want >= 500", len(g.Cases))
	}
	bad := 0
	for i, c := range g.Cases {
		got := Tokenize(c.Text)
		if !slices.Equal(got, c.Tokens) && len(got)+len(c.Tokens) > 0 {
			bad++
			if bad <= 15 {
				t.Errorf("case %d: Tokenize(%q)\n got  %q\n NLTK %q", i, c.Text, got, c.Tokens)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d sentences differ from NLTK", bad, len(g.Cases))
	}
}

// TestTokenizeConcurrent runs the golden texts from several goroutines
// (pooled buffers) and checks the results against sequential ones.
func TestTokenizeConcurrent(t *testing.T) {
	texts := []string{`He said "don't" (twice).`, "Dr. Smith came. He left.", "", "wait...no--yes", "'tis gonna be"}
	want := make([][]string, len(texts))
	for i, x := range texts {
		want[i] = Tokenize(x)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for k := range 200 {
				i := (k + w) % len(texts)
				if got := Tokenize(texts[i]); !slices.Equal(got, want[i]) {
					t.Errorf("concurrent Tokenize(%q) = %q, want %q", texts[i], got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkTokenize(b *testing.B) {
	text := `Mortality was lower with early treatment (12.1% vs. 14.3%; p = .04), but patients' "quality of life" didn't change.`
	for b.Loop() {
		Tokenize(text)
	}
}
