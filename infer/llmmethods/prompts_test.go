package llmmethods

import (
	"path/filepath"
	"testing"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/golden"
)

// A made-up abstract and demonstrations (not from any dataset).
var (
	testDoc = []string{
		"Drug Z is a new oral inhibitor of kinase Q.",
		"We assessed whether drug Z lowers relapse in adults with condition W.",
		"Adults were randomized to drug Z 20 mg daily or placebo for 12 weeks.",
		"Relapse occurred in 10% with drug Z and 25% with placebo.",
	}
	testAspect = dataset.Aspect{Code: "a", Name: "Aims", Description: "objective of the study"}
	testDemos  = []dataset.Instance{
		{PMID: "d1", Aspect: "a", Document: []string{"Background on fever.", "We aimed to test whether tea \"cures\" fever.", "Tea did not help."},
			Summary: "The study aimed to test whether tea cures fever.", Indexes: []int{1}},
		{PMID: "d2", Aspect: "a", Document: []string{"Tea was given.", "Fever fell."}, Summary: dataset.UnknownSummary, Indexes: []int{}},
	}
)

func TestPromptsGolden(t *testing.T) {
	base := promptData{Aspect: testAspect, Document: testDoc}
	withDemos := base
	withDemos.Demos = testDemos
	evidence := base
	evidence.Sentences = testDoc[1:2]
	evidence.Phrases = []string{"drug Z", "relapse", "adults with condition W"}
	attr := base
	attr.Summary = "The study assessed whether drug Z lowers relapse in adults with condition W."
	summ := promptData{Aspect: testAspect, Sentences: testDoc[1:3]}
	summFull := summ
	summFull.Document = testDoc
	cases := []struct {
		name string
		got  string
	}{
		{"prompt", render(promptTmpl, withDemos)},
		// Issue 36 item 6: Table 15 as printed (infer.llm.prompt_style paper).
		{"prompt_paper", render(paperPromptTmpl, withDemos)},
		{"intrinsic", render(intrinsicTmpl, base)},
		{"prior_retrieve", render(retrieveTmpl, base)},
		{"prior_summarize", render(fromEvidenceTmpl, evidence)},
		{"posthoc_summarize", render(summarizeTmpl, base)},
		{"posthoc_attribute", render(attributeTmpl, attr)},
		{"tracker", render(trackTmpl, base)},
		{"summarizer", render(tracsumSummarizerTmpl, summ)},
		{"summarizer_full_context", render(tracsumSummarizerTmpl, summFull)},
	}
	for _, tc := range cases {
		// Regenerate: go test ./infer/llmmethods -run TestPromptsGolden -update
		golden.Check(t, filepath.Join("testdata", tc.name+".golden"), []byte(tc.got))
	}
}
