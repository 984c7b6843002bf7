package judge

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracksum/tracksum/eval/judge/llmtest"
	goldenfile "github.com/tracksum/tracksum/internal/golden"
)

// TestPrompts pins the llm judge's prompts (go test ./eval/judge -update rewrites the goldens):
// the decomposition prompt is PCoA's Table 7 as printed; the entailment prompt asks for
// entailment only, and each hint is an opt-in departure from the papers' NLI judge (issue 24, 5d).
func TestPrompts(t *testing.T) {
	const premise, hypothesis = "  The trial randomised 50 adults to RT or observation.  ", "Some adults received radiation therapy."
	cases := []struct {
		file, got string
	}{
		{"decompose.golden", DecomposePrompt("  Drug X lowered pain, and no new safety signal appeared.  ")},
		{"entail.golden", EntailPrompt(premise, hypothesis)},
		// Hints are written in EntailHints' order, whatever the order given.
		{"entail_hints.golden", EntailPrompt(premise, hypothesis, HintAbbreviations, HintAgreement)},
	}
	for _, c := range cases {
		goldenfile.Check(t, filepath.Join("testdata", c.file), []byte(c.got))
	}
	if p := EntailPrompt(premise, hypothesis); strings.Contains(p, "abbreviation") || strings.Contains(p, "must agree") {
		t.Errorf("the default entailment prompt carries a hint:\n%s", p)
	}
}

// TestLLMEntailHints checks that the configured hints reach the endpoint and that an unknown one
// is refused.
func TestLLMEntailHints(t *testing.T) {
	opts := LLMOptions{Model: "m", CacheDir: t.TempDir(), Concurrency: 1, Timeout: 5 * time.Second}
	if _, err := NewLLM(LLMOptions{BaseURL: "http://127.0.0.1:1/v1", Model: "m"}, "synonyms"); err == nil ||
		err.Error() != `llm judge: unknown entailment hint "synonyms" (known: [agreement abbreviations])` {
		t.Errorf("unknown hint: err = %v", err)
	}
	cases := []struct {
		desc  string
		hints []string
		want  string
	}{
		{"no hint", nil, EntailPrompt("P a b.", "a b.")},
		{"abbreviations", []string{HintAbbreviations}, EntailPrompt("P a b.", "a b.", HintAbbreviations)},
	}
	for _, c := range cases {
		srv := llmtest.NewServer()
		o := opts
		o.BaseURL = srv.URL + "/v1"
		j, err := NewLLM(o, c.hints...)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := j.Entails(context.Background(), "P a b.", "a b."); err != nil || !ok {
			t.Errorf("%s: Entails = %v, %v", c.desc, ok, err)
		}
		rs := srv.Received()
		if len(rs) != 1 || rs[0].Last() != c.want {
			t.Errorf("%s: prompt sent %q, want %q", c.desc, rs[len(rs)-1].Last(), c.want)
		}
		srv.Close()
	}
}
