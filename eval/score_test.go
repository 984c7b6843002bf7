package eval

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/judge"
	"github.com/tracksum/tracksum/textmetrics/rouge"
)

// tableJudge is a judge whose answers are written in the test: it decomposes summaries as listed
// and entails exactly the listed (premise, hypothesis) pairs, so that metric arithmetic can be
// checked by hand independently of any real judge.
type tableJudge struct {
	claims map[string][]string
	yes    map[[2]string]bool
}

func (j *tableJudge) Decompose(_ context.Context, s string) ([]string, error) {
	return j.claims[s], nil
}

func (j *tableJudge) Entails(_ context.Context, p, h string) (bool, error) {
	return j.yes[[2]string{p, h}], nil
}
func (j *tableJudge) Name() string     { return "table" }
func (j *tableJudge) Concurrency() int { return 1 }

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestScoreHandComputed(t *testing.T) {
	doc := []string{"s0", "s1 supports the first predicted claim", "s2", "s3 supports it too but is not a reference citation", "s4", "s5 says something else"}
	refSum := "Reference summary."
	predSum := "Predicted summary."
	j := &tableJudge{
		claims: map[string][]string{
			refSum:  {"r1", "r2", "r3"},
			predSum: {"p1", "p2", "p3"},
		},
		yes: map[[2]string]bool{
			// Claim recall: the prediction entails 2 of the 3 reference subclaims.
			{predSum, "r1"}: true, {predSum, "r2"}: true,
			// Claim precision: the reference entails all 3 predicted subclaims.
			{refSum, "p1"}: true, {refSum, "p2"}: true, {refSum, "p3"}: true,
			// Citations: sentence 1 entails p1; sentence 3 entails p2 but is not cited by the
			// reference; sentence 5 entails nothing.
			{doc[1], "p1"}: true, {doc[3], "p2"}: true,
		},
	}
	s := &Scorer{Judge: j, Rouge: rouge.New(rouge.Options{Stem: true})}
	p := &Pair{
		Ref:  dataset.Record{Instance: dataset.Instance{PMID: "1", Aspect: "p", Document: doc, Summary: refSum, Indexes: []int{1, 5}}},
		Pred: dataset.Record{Instance: dataset.Instance{PMID: "1", Aspect: "p", Summary: predSum, Indexes: []int{1, 3, 5}}},
	}
	r, err := s.Score(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[Metric]float64{
		// TracSum Figure 3 style: of the predicted citations {1, 3, 5}, only 1 is both a reference
		// citation and supports a predicted subclaim: recall 1/2, precision 1/3.
		CitationRecall: 1.0 / 2, CitationPrecision: 1.0 / 3, CitationF1: F1(1.0/2, 1.0/3),
		ClaimRecall: 2.0 / 3, ClaimPrecision: 1, ClaimF1: F1(2.0/3, 1),
		// Exact sets: {1, 5} ∩ {1, 3, 5} = {1, 5}.
		CitationExactPrecision: 2.0 / 3, CitationExactRecall: 1, CitationExactF1: 0.8,
	}
	for m, v := range want {
		if !approx(r.Values[m], v) {
			t.Errorf("%s = %v, want %v", m, r.Values[m], v)
		}
	}
	if r.Counts[CitationRecall] != (Ratio{1, 2}) || r.Counts[CitationPrecision] != (Ratio{1, 3}) {
		t.Errorf("citation counts = %v %v", r.Counts[CitationRecall], r.Counts[CitationPrecision])
	}
	if len(r.Valid) != 1 || r.Valid[0] != 1 || len(r.Uncredited) != 1 || r.Uncredited[0] != 5 {
		t.Errorf("valid %v uncredited %v, want [1] [5]", r.Valid, r.Uncredited)
	}
}

func TestScoreNegatives(t *testing.T) {
	doc := []string{"a", "b", "c"}
	pos := func(idx ...int) dataset.Record {
		return dataset.Record{Instance: dataset.Instance{PMID: "1", Aspect: "d", Document: doc, Summary: "Something b.", Indexes: idx}}
	}
	neg := dataset.Record{Instance: dataset.Instance{PMID: "1", Aspect: "d", Document: doc, Summary: "Unknown."}}
	cases := []struct {
		desc      string
		ref, pred dataset.Record
		want      float64
		citeRec   Ratio
		citePrec  Ratio
	}{
		{"both negative: 1 everywhere", neg, neg, 1, Ratio{1, 1}, Ratio{1, 1}},
		{"reference negative, prediction positive: 0", neg, pos(0, 2), 0, Ratio{0, 1}, Ratio{0, 2}},
		{"reference positive, prediction negative: 0", pos(1, 2), neg, 0, Ratio{0, 2}, Ratio{0, 1}},
	}
	s := &Scorer{Judge: &tableJudge{}, Rouge: rouge.New(rouge.Options{}), Phrases: true}
	for _, c := range cases {
		r, err := s.Score(context.Background(), &Pair{Ref: c.ref, Pred: c.pred})
		if err != nil {
			t.Fatal(err)
		}
		for m := range NumMetrics {
			if r.Values[m] != c.want {
				t.Errorf("%s: %s = %v, want %v", c.desc, m, r.Values[m], c.want)
			}
		}
		if r.Counts[CitationRecall] != c.citeRec || r.Counts[CitationPrecision] != c.citePrec {
			t.Errorf("%s: citation counts %v %v, want %v %v", c.desc, r.Counts[CitationRecall], r.Counts[CitationPrecision], c.citeRec, c.citePrec)
		}
	}
}

func TestScorePositiveWithoutCitations(t *testing.T) {
	doc := []string{"a b c"}
	j := &tableJudge{claims: map[string][]string{"A b.": {"A b."}}, yes: map[[2]string]bool{{"A b.", "A b."}: true}}
	s := &Scorer{Judge: j, Rouge: rouge.New(rouge.Options{})}
	r, err := s.Score(context.Background(), &Pair{
		Ref:  dataset.Record{Instance: dataset.Instance{PMID: "1", Aspect: "a", Document: doc, Summary: "A b.", Indexes: []int{0}}},
		Pred: dataset.Record{Instance: dataset.Instance{PMID: "1", Aspect: "a", Summary: "A b."}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.PredNegative {
		t.Fatal("a prediction with a summary is positive even without citations")
	}
	if r.Values[ClaimRecall] != 1 || r.Values[CitationPrecision] != 0 || r.Values[CitationRecall] != 0 {
		t.Errorf("claim recall %v citation P %v R %v, want 1 0 0", r.Values[ClaimRecall], r.Values[CitationPrecision], r.Values[CitationRecall])
	}
}

func lexical() judge.Judge {
	return judge.NewLexical(judge.LexicalOptions{Threshold: 0.6, MinClauseWords: 2})
}

func readPairs(t *testing.T, ref, pred string, missingEmpty bool) []Pair {
	t.Helper()
	refs, err := dataset.ReadRecordsFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	preds, err := dataset.ReadRecordsFile(pred)
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := Join(refs, preds, missingEmpty)
	if err != nil {
		t.Fatal(err)
	}
	return pairs
}

func TestReadJoinErrors(t *testing.T) {
	cases := []struct {
		desc     string
		pred     string
		empty    bool
		sentinel error
		msg      string
	}{
		{"cited index outside the document", "testdata/malformed/out_of_range.jsonl", false, ErrIndexRange,
			"testdata/malformed/out_of_range.jsonl:3: cited index outside the document: index 6, the document of PMID 1001 has 6 sentences (0..5)"},
		{"duplicate prediction", "testdata/malformed/duplicate.jsonl", false, ErrDuplicate,
			"testdata/malformed/duplicate.jsonl:10: duplicate instance: prediction for PMID 1001 aspect \"o\" already at line 4"},
		{"duplicate prediction even with missing=empty", "testdata/malformed/duplicate.jsonl", true, ErrDuplicate, ":10:"},
		{"prediction for an unknown instance", "testdata/malformed/unknown_instance.jsonl", true, ErrUnknownInstance,
			"testdata/malformed/unknown_instance.jsonl:1: prediction for an instance absent from the references: PMID 9999 aspect \"p\""},
		{"broken JSON", "testdata/malformed/bad_json.jsonl", false, ErrMalformed, "testdata/malformed/bad_json.jsonl:2: malformed record"},
		{"index of the wrong type", "testdata/malformed/string_index.jsonl", false, ErrMalformed, "string_index.jsonl:1: malformed record"},
		{"no PMID", "testdata/malformed/no_pmid.jsonl", false, ErrMalformed, "no_pmid.jsonl:1: malformed record: field PMID is missing or empty"},
		{"tracker scores of the wrong length", "testdata/malformed/scores_length.jsonl", true, ErrMalformed,
			"scores_length.jsonl:1: malformed record: 2 Scores, the document of PMID 1002 has 3 sentences"},
		{"tracker score above 1", "testdata/malformed/scores_range.jsonl", true, ErrMalformed,
			"scores_range.jsonl:1: malformed record: Scores[2] = 1.5 is not a probability in [0, 1]"},
		{"missing predictions", "testdata/partial.jsonl", false, ErrMissing,
			"missing prediction for 5 reference instance(s): testdata/ref.jsonl:4 (PMID 1001 aspect \"s\")"},
	}
	refs, err := dataset.ReadRecordsFile("testdata/ref.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		preds, err := dataset.ReadRecordsFile(c.pred)
		if err == nil {
			_, err = Join(refs, preds, c.empty)
		}
		if !errors.Is(err, c.sentinel) {
			t.Errorf("%s: err = %v, want %v", c.desc, err, c.sentinel)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %q does not contain %q", c.desc, err, c.msg)
		}
	}
}

func TestReferenceErrors(t *testing.T) {
	cases := []struct {
		desc string
		ref  string
		msg  string
	}{
		{"negative summary with citations", "testdata/malformed/ref_inconsistent.jsonl",
			"ref_inconsistent.jsonl:1: malformed record: summary and citations disagree"},
		{"no document", "testdata/malformed/ref_no_document.jsonl", "ref_no_document.jsonl:1: malformed record: reference has no Document"},
	}
	for _, c := range cases {
		refs, err := dataset.ReadRecordsFile(c.ref)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Join(refs, nil, true)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want %q", c.desc, err, c.msg)
		}
	}
}

func TestMissingEmpty(t *testing.T) {
	pairs := readPairs(t, "testdata/ref.jsonl", "testdata/partial.jsonl", true)
	if len(pairs) != 9 {
		t.Fatalf("%d pairs, want 9", len(pairs))
	}
	s := &Scorer{Judge: lexical(), Rouge: rouge.New(rouge.Options{Stem: true})}
	res, err := s.Evaluate(context.Background(), pairs, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if pairs[i].Pred.Line != 0 {
			continue
		}
		// A synthesized empty prediction is negative: 1 against a negative reference, else 0.
		want := 0.0
		if r.RefNegative {
			want = 1
		}
		if !r.PredNegative || r.Values[ClaimRecall] != want || r.Values[Rouge1F] != want {
			t.Errorf("%s/%s: empty prediction scored %v (pred negative %v), want %v", r.PMID, r.Aspect, r.Values[ClaimRecall], r.PredNegative, want)
		}
	}
}

func TestFixtureWithLexicalJudge(t *testing.T) {
	pairs := readPairs(t, "testdata/ref.jsonl", "testdata/pred.jsonl", false)
	s := &Scorer{Judge: lexical(), Rouge: rouge.New(rouge.Options{Stem: true})}
	res, err := s.Evaluate(context.Background(), pairs, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Result{}
	for _, r := range res {
		by[r.PMID+"/"+r.Aspect] = r
	}
	cases := []struct {
		desc string
		key  string
		m    Metric
		want float64
	}{
		{"both negative", "1001/d", CitationF1, 1},
		{"reference positive, prediction Unknown", "1001/s", ClaimRecall, 0},
		{"reference Unknown, prediction positive", "1002/m", CitationPrecision, 0},
		{"dropped negation is not entailed (recall)", "1002/s", ClaimRecall, 0},
		{"dropped negation is not entailed (precision)", "1002/s", ClaimPrecision, 0},
		{"dropped negation: the cited sentence does not support the claim", "1002/s", CitationRecall, 0},
		{"exact citation ignores entailment", "1002/s", CitationExactF1, 1},
		{"1,000 = 1000 and a dropped adjective", "1002/p", ClaimPrecision, 1},
		{"shorter prediction: precision 1", "1001/p", ClaimPrecision, 1},
		{"spurious citation 3", "1001/i", CitationExactPrecision, 0.5},
		{"identical claims in a shorter prediction", "1002/o", ClaimPrecision, 1},
	}
	for _, c := range cases {
		r, ok := by[c.key]
		if !ok {
			t.Fatalf("%s: no result for %s", c.desc, c.key)
		}
		if !approx(r.Values[c.m], c.want) {
			t.Errorf("%s: %s %s = %v, want %v", c.desc, c.key, c.m, r.Values[c.m], c.want)
		}
	}
}

func TestPhraseMetrics(t *testing.T) {
	pairs := readPairs(t, "testdata/ref_phrases.jsonl", "testdata/pred_phrases.jsonl", false)
	s := &Scorer{Judge: lexical(), Rouge: rouge.New(rouge.Options{Stem: true}), Phrases: true}
	res, err := s.Evaluate(context.Background(), pairs, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	// T(P) = {120, adults, advanced, melanoma}; T(P') = {120, adults, melanoma, placebo};
	// "placebo" is in neither the predicted summary nor the cited sentence: 3 hits.
	if r := res[0]; !approx(r.Values[PhraseRecall], 0.75) || !approx(r.Values[PhrasePrecision], 0.75) || !approx(r.Values[PhraseF1], 0.75) {
		t.Errorf("phrase R/P/F1 = %v %v %v, want 0.75 each", r.Values[PhraseRecall], r.Values[PhrasePrecision], r.Values[PhraseF1])
	}
	if r := res[1]; r.Values[PhraseRecall] != 1 {
		t.Errorf("both negative: phrase recall %v, want 1", r.Values[PhraseRecall])
	}
	g := Aggregate(res, true, BootstrapOptions{Resamples: 50, Seed: 1, Level: 0.95})
	if !approx(g.Mean[PhraseRecall], 0.875) {
		t.Errorf("mean phrase recall %v, want 0.875", g.Mean[PhraseRecall])
	}
}

// TestPhraseTokensInnerSentence is the regression test of issue 24 (5a): phrase tokens were made
// from the whole summary as one line (NLTK's preserve_line=True), so "placebo." ending the inner
// sentence was one token and a reference scored against itself got P-R = P-P = 0.75.
func TestPhraseTokensInnerSentence(t *testing.T) {
	doc := []string{"Patients received oral placebo.", "The dose was 50 mg."}
	rec := dataset.Record{HasPhrases: true}
	rec.PMID, rec.Aspect, rec.Document, rec.Indexes, rec.Sentences = "1", "I", doc, []int{0, 1}, doc
	rec.Summary, rec.Phrases = "Patients received oral placebo. The dose was 50 mg.", []string{"oral placebo", "50 mg"}
	s := &Scorer{Judge: lexical(), Rouge: rouge.New(rouge.Options{Stem: true}), Phrases: true}
	res, err := s.Evaluate(context.Background(), []Pair{{Ref: rec, Pred: rec}}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.Values[PhraseRecall] != 1 || r.Values[PhrasePrecision] != 1 {
		t.Errorf("reference against itself: phrase recall %v, precision %v, want 1", r.Values[PhraseRecall], r.Values[PhrasePrecision])
	}
}

func TestRougeSentenceLines(t *testing.T) {
	// Newlines must change ROUGE-Lsum only: ROUGE-1/2/L read them as separators.
	sc := rouge.New(rouge.Options{Stem: true})
	ref := "The trial enrolled 120 adults. Grade 3 rash occurred in 8 adults, vs. 2 with placebo."
	pred := "Rash of grade 3 occurred in 8 adults. The trial enrolled 120 adults with melanoma."
	raw := sc.Score(ref, pred)
	lines := sc.Score(sentencesPerLine(ref), sentencesPerLine(pred))
	if raw.R1 != lines.R1 || raw.R2 != lines.R2 || raw.RL != lines.RL {
		t.Errorf("ROUGE-1/2/L changed with sentence lines: %+v vs %+v", raw, lines)
	}
	if got := sentencesPerLine(ref); got != "The trial enrolled 120 adults.\nGrade 3 rash occurred in 8 adults, vs. 2 with placebo." {
		t.Errorf("sentencesPerLine = %q", got)
	}
	if lines.RLsum.F <= raw.RLsum.F {
		t.Errorf("Lsum with sentence lines %v, without %v: reordered sentences should score higher", lines.RLsum.F, raw.RLsum.F)
	}
}
