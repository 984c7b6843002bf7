package qaeval

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	goldenfile "github.com/tracksum/tracksum/internal/golden"
	"github.com/tracksum/tracksum/llm"
)

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), []byte(got))
}

func TestPromptsGolden(t *testing.T) {
	golden(t, "generate_source.golden", GeneratePrompt("Intervention: treatment method given to the participants", "Patients received drug X 20 mg daily.", 8, "source"))
	golden(t, "generate_summary.golden", GeneratePrompt("", "Drug X was given.", 6, "summary"))
	golden(t, "answer_summary.golden", AnswerPrompt("summary", "Drug X was given.", []string{"What was given?", "At what dose?"}))
	golden(t, "revise_coverage.golden", CoverageRevisionPrompt("Intervention: treatment", "Doc text.", "Drug X.", []string{"At what dose?"}))
	golden(t, "revise_consistency.golden", ConsistencyRevisionPrompt("", "Doc text.", "Drug Y 10 mg.", []Correction{
		{Question: "Which drug?", Claimed: "Drug Y", Correct: "Drug X"}, {Question: "How long?", Claimed: "8 weeks", Correct: "UNANSWERABLE"}}))
}

func TestParseQA(t *testing.T) {
	tests := []struct {
		desc   string
		answer string
		want   []QA
	}{
		{desc: "the asked format", answer: "Question [1]: What drug?\nAnswer: Drug X\nQuestion [2]: What dose?\nAnswer: 20 mg",
			want: []QA{{1, "What drug?", "Drug X"}, {2, "What dose?", "20 mg"}}},
		{desc: "Q/A shorthand, bold and numbered", answer: "**Q1:** Who?\n**A:** adults\n2. How long?\nA: 8 weeks\n",
			want: []QA{{1, "Who?", "adults"}, {2, "How long?", "8 weeks"}}},
		{desc: "a question without answer is dropped", answer: "Question [1]: Who?\nQuestion [2]: What?\nAnswer: X",
			want: []QA{{2, "What?", "X"}}},
		{desc: "prose", answer: "quality improved in all patients."},
		{desc: "answer lines alone", answer: "Answer: X\nAnswer: Y"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := ParseQA(tc.answer); !slices.Equal(got, tc.want) {
				t.Errorf("ParseQA = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseAnswers(t *testing.T) {
	got, ok := ParseAnswers("Question: What?\nAnswer: X\nQuestion: Who?\nAnswer: UNANSWERABLE\n", 2)
	if !ok || !slices.Equal(got, []string{"X", "UNANSWERABLE"}) {
		t.Errorf("ParseAnswers = %q, %v", got, ok)
	}
	if _, ok := ParseAnswers("Answer: X", 2); ok {
		t.Errorf("too few answers accepted")
	}
	if _, ok := ParseAnswers("the drug was X", 1); ok {
		t.Errorf("prose accepted")
	}
}

func TestParseRevision(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Revised summary: Drug X 20 mg.", "Drug X 20 mg."},
		{"```\n\"Drug X.\"\n```", "Drug X."},
		{"Summary: Drug X.\nCitations: [1, 2]", "Drug X."},
		{"   ", ""},
	}
	for _, tc := range tests {
		got, ok := ParseRevision(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("ParseRevision(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

func TestJaccard(t *testing.T) {
	tests := []struct {
		a, b string
		want float64
	}{
		{"20 mg daily", "20 mg daily", 1}, {"drug X", "drug Y", 1.0 / 3}, {"", "", 1}, {"a b", "", 0},
	}
	for _, tc := range tests {
		if got := Jaccard(tc.a, tc.b); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Jaccard(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// script answers by the first rule whose key the prompt contains (rules are checked in order).
type script struct {
	mu      sync.Mutex
	rules   [][2]string
	prompts []string
}

func (s *script) Chat(_ context.Context, req llm.Request, _ func(string) bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := req.Messages[0].Content
	s.prompts = append(s.prompts, p)
	for _, r := range s.rules {
		if strings.Contains(p, r[0]) {
			return r[1], nil
		}
	}
	return "no rule matched", nil
}

const (
	doc      = "DOC: 40 adults took drug X 20 mg for 8 weeks; pain fell 30%."
	evidence = "EVIDENCE: drug X 20 mg for 8 weeks."
)

func TestAssess(t *testing.T) {
	srcQs := "Question [1]: Which drug?\nAnswer: drug X\nQuestion [2]: What dose?\nAnswer: 20 mg\nQuestion [3]: How long?\nAnswer: 8 weeks"
	rules := [][2]string{
		{"of the source text below", srcQs},
		{"of the summary text below", "Question [1]: Which drug?\nAnswer: drug X\nQuestion [2]: How long?\nAnswer: 12 weeks"},
		{"what the summary states", "Question: Which drug?\nAnswer: drug X\nQuestion: What dose?\nAnswer: UNANSWERABLE\nQuestion: How long?\nAnswer: 12 weeks"},
		{"what the document states", "Answer: drug X\nAnswer: 8 weeks"},
	}
	sc := &script{rules: rules}
	m := New(sc, DefaultOptions())
	a, err := m.Assess(context.Background(), "Intervention", evidence, doc, "Drug X for 12 weeks.")
	if err != nil {
		t.Fatal(err)
	}
	// Coverage: 2 of 3 source questions answered. Consistency: "drug X" vs "drug X" = 1 (> tau),
	// "12 weeks" vs "8 weeks": ROUGE-1 F1 0.5 <= tau 0.6, so (1 + 0) / 2.
	if a.Coverage == nil || math.Abs(*a.Coverage-2.0/3) > 1e-12 {
		t.Errorf("coverage = %v, want 2/3", a.Coverage)
	}
	if a.Consistency == nil || math.Abs(*a.Consistency-0.5) > 1e-12 {
		t.Errorf("consistency = %v, want 0.5", a.Consistency)
	}
	if !slices.Equal(a.Feedback.Unanswered, []string{"What dose?"}) {
		t.Errorf("unanswered = %v", a.Feedback.Unanswered)
	}
	if len(a.Feedback.Inconsistent) != 1 || a.Feedback.Inconsistent[0] != (Correction{"How long?", "12 weeks", "8 weeks"}) {
		t.Errorf("inconsistent = %+v", a.Feedback.Inconsistent)
	}
	if len(sc.prompts) != 4 {
		t.Errorf("%d requests, want 4", len(sc.prompts))
	}
	if !strings.Contains(sc.prompts[0], "EVIDENCE") || !strings.Contains(sc.prompts[3], "DOC:") {
		t.Errorf("coverage questions must come from the source and consistency answers from the document")
	}

	// A negative summary: coverage 0 without asking the summary, consistency undefined.
	sc2 := &script{rules: rules}
	a2, err := New(sc2, DefaultOptions()).Assess(context.Background(), "", evidence, doc, "Unknown.")
	if err != nil {
		t.Fatal(err)
	}
	if a2.Coverage == nil || *a2.Coverage != 0 || a2.Consistency != nil || len(sc2.prompts) != 1 || len(a2.Feedback.Unanswered) != 3 {
		t.Errorf("negative summary: coverage %v consistency %v, %d requests", a2.Coverage, a2.Consistency, len(sc2.prompts))
	}

	// Malformed answers leave the scores undefined and are counted.
	sc3 := &script{rules: [][2]string{{"of the source text", "I cannot do that here."}, {"of the summary text", "Question [1]: Q?\nAnswer: A"}, {"document states", "no answers"}}}
	a3, err := New(sc3, DefaultOptions()).Assess(context.Background(), "", evidence, doc, "Drug X.")
	if err != nil {
		t.Fatal(err)
	}
	if a3.Coverage != nil || a3.Consistency != nil || !slices.Equal(a3.Malformed, []string{"source questions", "answers from the document"}) {
		t.Errorf("malformed: coverage %v consistency %v malformed %v", a3.Coverage, a3.Consistency, a3.Malformed)
	}
	if a3.Unparsed["source questions"] != "I cannot do that here." || a3.Unparsed["answers from the document"] != "no answers" {
		t.Errorf("unparsed answers = %q", a3.Unparsed)
	}
}

func TestRefine(t *testing.T) {
	// The summary "S0" misses the dose; the coverage revision "S1" answers everything; nothing is
	// inconsistent.
	rules := func(revision string) [][2]string {
		return [][2]string{
			{"Missing information", revision},
			{"of the source text", "Question [1]: Which drug?\nAnswer: drug X\nQuestion [2]: What dose?\nAnswer: 20 mg"},
			{"Text:\nS0", "Question [1]: Which drug?\nAnswer: drug X"},
			{"Text:\nS1", "Question [1]: Which drug?\nAnswer: drug X\nQuestion [2]: What dose?\nAnswer: 20 mg"},
			{"Summary:\nS0\n\nQuestions", "Answer: drug X\nAnswer: UNANSWERABLE"},
			{"Summary:\nS1\n\nQuestions", "Answer: drug X\nAnswer: 20 mg"},
			{"Summary:\nS2\n\nQuestions", "Answer: UNANSWERABLE\nAnswer: UNANSWERABLE"},
			{"Text:\nS2", "Question [1]: Which drug?\nAnswer: drug X"},
			{"What dose?\n\nAnswers", "Answer: drug X\nAnswer: 20 mg"},
			{"Which drug?\n\nAnswers", "Answer: drug X"},
		}
	}
	tests := []struct {
		desc      string
		revision  string
		rounds    int
		earlyStop bool
		final     string
		nRounds   int
		stop      string
	}{
		{desc: "a useful revision, then the targets are met", revision: "Revised summary: S1", rounds: 3, final: "S1", nRounds: 2, stop: "targets met"},
		{desc: "early stop: a useful revision, then the targets are met", revision: "Revised summary: S1", rounds: 3, earlyStop: true, final: "S1", nRounds: 2, stop: "targets met"},
		// Algorithm 2 goes on revising the latest summary (S2, revised into S2 again) until the
		// rounds are spent; the best summary is kept.
		{desc: "a revision that does not help is revised again, not kept as the result", revision: "S2", rounds: 3, final: "S0", nRounds: 4, stop: "3 rounds done"},
		{desc: "early stop: a revision that does not help ends the loop", revision: "S2", rounds: 3, earlyStop: true, final: "S0", nRounds: 2, stop: "round 1 did not improve the scores"},
		{desc: "an empty revision is malformed", revision: "  ", rounds: 3, final: "S0", nRounds: 2, stop: "malformed revision"},
		{desc: "zero rounds", revision: "S1", rounds: 0, final: "S0", nRounds: 1, stop: "no refinement round asked"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			sc := &script{rules: rules(tc.revision)}
			o := DefaultOptions()
			o.EarlyStop = tc.earlyStop
			r, err := New(sc, o).Refine(context.Background(), "", evidence, doc, "S0", tc.rounds)
			if err != nil {
				t.Fatal(err)
			}
			if r.Final() != tc.final || len(r.Rounds) != tc.nRounds || r.Stop != tc.stop {
				t.Errorf("final %q, %d rounds, stop %q; want %q, %d, %q", r.Final(), len(r.Rounds), r.Stop, tc.final, tc.nRounds, tc.stop)
			}
			if !tc.earlyStop && tc.nRounds > 2 && !slices.ContainsFunc(sc.prompts, func(p string) bool {
				return strings.Contains(p, "Summary:\nS2\n\nMissing information")
			}) {
				t.Errorf("round 2 must revise the latest summary, S2, as Algorithm 2 does")
			}
			if len(r.Rounds) > 1 && r.Rounds[1].Instruction != "coverage" {
				t.Errorf("round 1 instruction = %q, want coverage", r.Rounds[1].Instruction)
			}
		})
	}
	// Malformed assessments leave nothing to improve: no revision is asked.
	bad := &script{rules: [][2]string{{"Instructions", "Summary: text\nCitations: [1]"}}}
	r, err := New(bad, DefaultOptions()).Refine(context.Background(), "", evidence, doc, "S0", 3)
	if err != nil || len(r.Rounds) != 1 || r.Stop != "no score to improve: source questions, summary questions" || len(bad.prompts) != 2 {
		t.Errorf("malformed assessment: stop %q, %d rounds, %d requests, %v", r.Stop, len(r.Rounds), len(bad.prompts), err)
	}
	sc := &script{rules: rules("S1")}
	r, err = New(sc, DefaultOptions()).Refine(context.Background(), "", evidence, doc, "Unknown.", 3)
	if err != nil || len(r.Rounds) != 1 || r.Final() != "Unknown." {
		t.Errorf("negative summary refined: %+v, %v", r, err)
	}
}
