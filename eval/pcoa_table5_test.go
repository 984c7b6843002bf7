package eval

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/judge"
	"github.com/tracksum/tracksum/textmetrics/rouge"
)

// PCoA's Table 5 (PMID 34984539, aspect Intervention) scores one reference against three context
// attribution strategies. The paper prints the reference, the three outputs, a check or a cross for
// each predicted cited sentence, and C-F1, S-F1 and P-F1 to three decimals; it does not print the
// subclaims. The texts below are our paraphrases (only the key phrases, the drug name and the
// numbers are kept, since the phrase metrics depend on their exact tokens); the subclaims are ours,
// chosen so that the counts agree with the printed claim scores. The paper's sentence [k] is our
// index k-1.
var table5Doc = []string{
	"Earlier work found that the HVJ envelope acts on tumour cells directly.",                                                      // [1]
	"In this phase Ia trial, six patients with stage IIIC or IV malignant melanoma underwent intratumoral GEN0101 administration.", // [2]
	"The trial's main goal was to assess the safety and tolerability of GEN0101.",                                                  // [3]
	"Two groups of three patients each got GEN0101 at a low dose of 30,000 or a high dose of 60,000 mNAU.",                         // [4]
	"Natural killer cell activity rose after the injections.",                                                                      // [5]
	"Serum interferon-gamma levels rose as well.",                                                                                  // [6]
	"No dose-limiting toxicity was seen.",                                                                                          // [7]
	"Tumour responses were assessed by imaging.",                                                                                   // [8]
	"Some injected lesions shrank.",                                                                                                // [9]
	"The treatment had antitumor effects.",                                                                                         // [10]
}

const (
	table5RefSum       = "Patients got intratumoral GEN0101 at a low dose of 30,000 or a high dose of 60,000 mNAU."
	table5IntrinsicSum = "Patients with stage IIIC or IV malignant melanoma had intratumoral administration of GEN0101 at a low dose of 30,000 mNAU or a high dose of 60,000 mNAU."
	table5PriorSum     = "Intratumoral GEN0101 administration was given at low (30,000 mNAU) or high (60,000 mNAU) doses."
	table5PostHocSum   = "A phase Ia trial of intratumoral GEN0101 (HVJ-E) at low (30,000 mNAU) and high (60,000 mNAU) doses in six patients with advanced malignant melanoma showed safety, tolerability and antitumor effects, with higher NK cell activity and interferon-gamma levels."
)

// table5Phrases are the key phrases of Table 5's reference, and those of the intrinsic and prior
// outputs (the same three).
var (
	table5RefPhrases  = []string{"intratumoral GEN0101 administration", "low dose of 30,000", "high dose of 60,000 mNAU", "GEN0101"}
	table5PredPhrases = []string{"intratumoral GEN0101 administration", "low dose of 30,000 mNAU", "high dose of 60,000 mNAU"}
)

// table5Claims are the atomic subclaims an LLM decomposition would give (ours). Claim precision is
// 3/4 for the intrinsic output (its melanoma stage is not in the reference summary: C-F1 =
// F1(1, 3/4) = 0.857), 1 for the prior one, and 2/9 for the post-hoc one (C-R = 1.000 as the paper
// says, C-F1 = F1(1, 2/9) = 0.364).
var table5Claims = map[string][]string{
	table5RefSum: {
		"Patients got intratumoral GEN0101 at a low dose of 30,000 mNAU.",
		"Patients got intratumoral GEN0101 at a high dose of 60,000 mNAU.",
	},
	table5IntrinsicSum: {
		"Patients had intratumoral administration of GEN0101.",
		"Patients had stage IIIC or IV malignant melanoma.",
		"A low dose of GEN0101 was 30,000 mNAU.",
		"A high dose of GEN0101 was 60,000 mNAU.",
	},
	table5PriorSum: {
		"GEN0101 was given intratumorally.",
		"The low dose was 30,000 mNAU.",
		"The high dose was 60,000 mNAU.",
	},
	table5PostHocSum: {
		"The trial was a phase Ia trial.",
		"Intratumoral GEN0101 was given at a low dose of 30,000 mNAU.",
		"Intratumoral GEN0101 was given at a high dose of 60,000 mNAU.",
		"Six patients took part.",
		"The patients had advanced malignant melanoma.",
		"The treatment was safe and tolerable.",
		"The treatment had antitumor effects.",
		"NK cell activity increased.",
		"Interferon-gamma levels increased.",
	},
}

// table5Case is one strategy of Table 5: the output, the decisions the paper implies and its
// printed scores.
type table5Case struct {
	desc    string
	summary string
	indexes []int
	phrases []string
	// entailed lists, per predicted subclaim, whether the reference summary entails it; the
	// reference's subclaims are all entailed by every output (C-R = 1 in all three rows).
	entailed []bool
	// support maps a cited sentence to the predicted subclaims it entails: the paper's check marks
	// (a sentence with a cross entails none, or is not a reference citation).
	support map[int][]int
	// paper's C-F1, S-F1, P-F1; phraseKnown is false where the paper elides phrases ("...").
	cF1, sF1, pF1 float64
	phraseKnown   bool
	// ourPF1 is P-F1 under our exact-token rule, where it differs from the paper's (see below).
	ourPF1 float64
}

var table5Cases = []table5Case{
	{
		desc: "intrinsic", summary: table5IntrinsicSum, indexes: []int{0, 1, 3}, phrases: table5PredPhrases,
		entailed: []bool{true, false, true, true},
		// [1] cross; [2] check (route and disease); [4] check (doses).
		support: map[int][]int{1: {0, 1}, 3: {2, 3}},
		cF1:     0.857, sF1: 0.800, pF1: 1.000, phraseKnown: true, ourPF1: 1.000,
	},
	{
		desc: "prior", summary: table5PriorSum, indexes: []int{1, 3}, phrases: table5PredPhrases,
		entailed: []bool{true, true, true},
		support:  map[int][]int{1: {0}, 3: {1, 2}},
		cF1:      1.000, sF1: 1.000, pF1: 1.000, phraseKnown: true,
		// The prior summary says "doses" and has no "of": the reference phrase tokens "dose" and
		// "of" are not tokens of the summary, so 8 of the 10 distinct tokens count. The paper's
		// 1.000 needs its "semantically equivalent variant" match (PCoA §4.2), which a token rule
		// cannot make.
		ourPF1: 0.800,
	},
	{
		desc: "post-hoc", summary: table5PostHocSum, indexes: []int{1, 2, 3, 4, 5, 8, 9}, phrases: nil,
		entailed: []bool{false, true, true, false, false, false, false, false, false},
		// [2] and [4] check; [3], [5], [6], [9], [10] cross (not reference citations).
		support: map[int][]int{1: {1, 2}, 3: {1, 2}, 4: {7}, 5: {8}, 9: {6}},
		cF1:     0.364, sF1: 0.444, pF1: 0.491, phraseKnown: false,
	},
}

// table5Judge returns a judge that decomposes as table5Claims and entails as c says.
func table5Judge(c table5Case) *tableJudge {
	j := &tableJudge{claims: table5Claims, yes: map[[2]string]bool{}}
	for _, l := range table5Claims[table5RefSum] {
		j.yes[[2]string{c.summary, l}] = true
	}
	pred := table5Claims[c.summary]
	for i, ok := range c.entailed {
		if ok {
			j.yes[[2]string{table5RefSum, pred[i]}] = true
		}
	}
	for s, ls := range c.support {
		for _, i := range ls {
			j.yes[[2]string{table5Doc[s], pred[i]}] = true
		}
	}
	return j
}

func table5Pair(c table5Case) *Pair {
	ref := dataset.Record{HasPhrases: true}
	ref.PMID, ref.Aspect, ref.Document, ref.Indexes = "34984539", "I", table5Doc, []int{1, 3}
	ref.Summary, ref.Phrases = table5RefSum, table5RefPhrases
	pred := dataset.Record{HasPhrases: true}
	pred.PMID, pred.Aspect, pred.Document, pred.Indexes = "34984539", "I", table5Doc, c.indexes
	pred.Summary, pred.Phrases = c.summary, c.phrases
	return &Pair{Ref: ref, Pred: pred}
}

// round3 rounds as the paper prints its scores.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// TestPCoATable5 feeds PCoA Table 5's support decisions through our scoring (issue 24, 5b): the
// paper's C-F1 and S-F1 come out in all three rows, and P-F1 wherever exact token matching is
// what the paper applied. Before, the lexical judge gave intrinsic S-F1 0.000 (or 0.400 with the
// comma-splitting decomposition): not a formula error but its decisions, see
// TestPCoATable5LexicalJudge.
func TestPCoATable5(t *testing.T) {
	for _, c := range table5Cases {
		t.Run(c.desc, func(t *testing.T) {
			s := &Scorer{Judge: table5Judge(c), Rouge: rouge.New(rouge.Options{Stem: true}), Phrases: c.phraseKnown}
			r, err := s.Score(context.Background(), table5Pair(c))
			if err != nil {
				t.Fatal(err)
			}
			if got := round3(r.Values[ClaimF1]); got != c.cF1 {
				t.Errorf("C-F1 = %.3f, paper %.3f", got, c.cF1)
			}
			if got := round3(r.Values[CitationF1]); got != c.sF1 {
				t.Errorf("S-F1 = %.3f, paper %.3f", got, c.sF1)
			}
			if r.Values[ClaimRecall] != 1 || r.Values[CitationRecall] != 1 {
				t.Errorf("C-R = %v, S-R = %v, want 1 (every reference subclaim and citation recovered)", r.Values[ClaimRecall], r.Values[CitationRecall])
			}
			if !c.phraseKnown {
				return
			}
			got := round3(r.Values[PhraseF1])
			if got != c.ourPF1 {
				t.Errorf("P-F1 = %.3f, want %.3f (paper %.3f)", got, c.ourPF1, c.pF1)
			}
		})
	}
}

// decomposeBy decomposes with a table and decides entailment with another judge, so that the
// entailment half of a judge can be tested on an LLM-like decomposition.
type decomposeBy struct {
	claims map[string][]string
	judge.Judge
}

func (d decomposeBy) Decompose(_ context.Context, s string) ([]string, error) {
	return d.claims[s], nil
}

// TestPCoATable5LexicalJudge pins where the lexical judge parts from the paper on Table 5. On its
// own decomposition each output is one or two long clauses that no single cited sentence covers
// (the doses are in [4], the disease in [2]), so intrinsic S-F1 is 0; on atomic subclaims its
// entailment makes the paper's citation decisions and S-F1 is the paper's in all three rows. (On
// the paper's own wording of the intrinsic output, the lexical judge gives 0.000 too.)
func TestPCoATable5LexicalJudge(t *testing.T) {
	lex := lexical()
	cases := []struct {
		desc  string
		judge judge.Judge
		c     table5Case
		sF1   float64
	}{
		{"lexical decomposition, intrinsic", lex, table5Cases[0], 0},
		{"atomic subclaims, lexical entailment, intrinsic", decomposeBy{table5Claims, lex}, table5Cases[0], 0.800},
		{"atomic subclaims, lexical entailment, prior", decomposeBy{table5Claims, lex}, table5Cases[1], 1},
		{"atomic subclaims, lexical entailment, post-hoc", decomposeBy{table5Claims, lex}, table5Cases[2], 0.444},
	}
	for _, c := range cases {
		s := &Scorer{Judge: c.judge, Rouge: rouge.New(rouge.Options{Stem: true})}
		r, err := s.Score(context.Background(), table5Pair(c.c))
		if err != nil {
			t.Fatal(err)
		}
		if got := round3(r.Values[CitationF1]); got != c.sF1 {
			t.Errorf("%s: S-F1 = %.3f, want %.3f (valid %v, uncredited %v, claims %s)", c.desc, got, c.sF1, r.Valid, r.Uncredited, fmt.Sprint(r.PredClaims))
		}
	}
}
