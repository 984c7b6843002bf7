package eval

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/qaeval"
	"github.com/tracksum/tracksum/llm"
)

// recordingChatter answers every prompt with one question and records the prompts.
type recordingChatter struct {
	mu      sync.Mutex
	prompts []string
}

func (c *recordingChatter) Chat(_ context.Context, req llm.Request, _ func(string) bool) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prompts = append(c.prompts, req.Messages[len(req.Messages)-1].Content)
	return "Question [1]: Which drug?\nAnswer: drug X", nil
}

// TestQASource checks where coverage questions come from (issue 24, 5c): by default the whole
// abstract, as LongSumEval draws them from the source document without a reference; with
// eval.qa.source: cited, the reference's cited sentences (none for a negative reference).
func TestQASource(t *testing.T) {
	if got := config.DefaultEval().QA.Source; got != "document" {
		t.Errorf("default eval.qa.source = %q, want document (the paper's rule)", got)
	}
	doc := []string{"Adults with migraine were enrolled.", "They took drug X 20 mg daily.", "Pain fell by 30%."}
	pos := dataset.Record{Instance: dataset.Instance{PMID: "1", Aspect: "I", Document: doc, Summary: "Drug X 20 mg.", Indexes: []int{1}}}
	neg := dataset.Record{Instance: dataset.Instance{PMID: "1", Aspect: "I", Document: doc, Summary: "Unknown."}}
	cases := []struct {
		desc     string
		source   string
		ref      dataset.Record
		coverage bool   // a coverage question request is sent
		want     string // the text the coverage questions are drawn from
	}{
		{"document: the whole abstract", "document", pos, true, strings.Join(doc, " ")},
		{"document: the whole abstract, whatever the reference", "document", neg, true, strings.Join(doc, " ")},
		{"cited: the reference's cited sentences", "cited", pos, true, doc[1]},
		{"cited: nothing for a negative reference", "cited", neg, false, ""},
	}
	for _, c := range cases {
		rc := &recordingChatter{}
		qa := qaeval.New(rc, qaeval.DefaultOptions())
		p := &Pair{Ref: c.ref, Pred: pos}
		if _, err := scoreLLM(context.Background(), nil, qa, p, c.source); err != nil {
			t.Fatal(err)
		}
		wantPrompt := qaeval.GeneratePrompt(AspectFocus("I"), c.want, qaeval.DefaultOptions().SourceQuestions, "source")
		sent, anySource := false, false
		for _, pr := range rc.prompts {
			sent = sent || pr == wantPrompt
			anySource = anySource || strings.Contains(pr, "of the source text")
		}
		if !c.coverage && anySource {
			t.Errorf("%s: a coverage question request was sent", c.desc)
		}
		if sent != c.coverage {
			t.Errorf("%s: coverage questions from %q sent = %v, want %v (prompts %q)", c.desc, c.want, sent, c.coverage, rc.prompts)
		}
	}
}
