package encoder

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tracksum/tracksum/hf/tokenizer"
)

// TestPairMatchesTokenizersJS: ids and token types of [CLS] A [SEP] B [SEP] (and of single texts)
// equal those of @huggingface/tokenizers on testdata/bert's WordPiece tokenizer
// (tools/hfparity/bert_tokens.mjs).
func TestPairMatchesTokenizersJS(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(goldenDir, "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Cases []struct {
			A     string  `json:"a"`
			B     *string `json:"b"`
			IDs   []int32 `json:"ids"`
			Types []int32 `json:"types"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := PairTokensOf(tok)
	if err != nil {
		t.Fatal(err)
	}
	if sp != (PairTokens{CLS: 2, SEP: 3}) {
		t.Fatalf("special tokens %+v, want [CLS] 2 and [SEP] 3", sp)
	}
	for _, c := range golden.Cases {
		if c.B == nil {
			got := tok.Encode(c.A, true)
			want := make([]int, len(c.IDs))
			for i, id := range c.IDs {
				want[i] = int(id)
			}
			if !slices.Equal(got, want) {
				t.Errorf("Encode(%q) = %v, want %v", c.A, got, want)
			}
			continue
		}
		ids, types := Pair(tok, sp, c.A, *c.B, 512)
		if !slices.Equal(ids, c.IDs) || !slices.Equal(types, c.Types) {
			t.Errorf("Pair(%q, %q) = %v %v, want %v %v", c.A, *c.B, ids, types, c.IDs, c.Types)
		}
	}
	// Truncated: the budget of 8 - 3 = 5 goes to the longer text first.
	ids, types := Pair(tok, sp, "primary outcome", "the trial group had fewer adverse events", 8)
	if want := []int32{2, 21, 19, 3, 5, 17, 18, 3}; !slices.Equal(ids, want) || !slices.Equal(types, []int32{0, 0, 0, 0, 1, 1, 1, 1}) {
		t.Errorf("truncated pair = %v %v, want %v", ids, types, want)
	}
}

// TestTruncatePair: the three cases of the tokenizers crate's longest_first truncation.
func TestTruncatePair(t *testing.T) {
	for _, tc := range []struct {
		desc                   string
		n1, n2, budget, w1, w2 int
	}{
		{"fits", 3, 4, 7, 3, 4},
		{"only the longer is cut", 2, 10, 7, 2, 5},
		{"only the longer is cut (first longer)", 10, 2, 7, 5, 2},
		{"both cut, odd budget: the longer gets the extra", 6, 9, 7, 3, 4},
		{"both cut, first longer", 9, 6, 7, 4, 3},
		{"both cut, equal lengths", 4, 4, 5, 2, 3},
		{"shorter alone exceeds the budget", 9, 12, 6, 3, 3},
		{"no budget", 2, 2, -1, 0, 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if g1, g2 := TruncatePair(tc.n1, tc.n2, tc.budget); g1 != tc.w1 || g2 != tc.w2 {
				t.Fatalf("TruncatePair(%d, %d, %d) = %d, %d, want %d, %d", tc.n1, tc.n2, tc.budget, g1, g2, tc.w1, tc.w2)
			}
		})
	}
}

// TestRobertaPairTruncation: RoBERTa's template spends 4 tokens (<s> A </s></s> B </s>), so a
// pair truncated to maxLen keeps maxLen - 4 tokens of text, longest first.
func TestRobertaPairTruncation(t *testing.T) {
	tok, err := tokenizer.Load(robertaDir)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := PairTokensOf(tok)
	if err != nil {
		t.Fatal(err)
	}
	a := "The patients were randomized to placebo and the dose was 10 mg in both arms."
	b := "Patients received placebo."
	na, nb := len(tok.Encode(a, false)), len(tok.Encode(b, false))
	for _, maxLen := range []int{4, 12, 30, na + nb + 3, na + nb + 4, na + nb + 10} {
		ids, _ := Pair(tok, sp, a, b, maxLen)
		want := min(maxLen, na+nb+4)
		if len(ids) != want {
			t.Errorf("maxLen %d: %d ids, want %d", maxLen, len(ids), want)
		}
		ka, kb := TruncatePair(na, nb, maxLen-4)
		if ids[0] != 0 || ids[ka+1] != 2 || ids[ka+2] != 2 || ids[len(ids)-1] != 2 || ka+kb+4 != len(ids) {
			t.Errorf("maxLen %d: %v is not <s> A </s></s> B </s> with %d + %d tokens", maxLen, ids, ka, kb)
		}
	}
}
