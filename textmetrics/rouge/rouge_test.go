package rouge

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"testing"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		desc, text string
		stem       bool
		want       []string
	}{
		{desc: "empty", text: ""},
		{desc: "punctuation only", text: "... !!"},
		{desc: "lowercase and split", text: "Mortality was 12.5%", want: []string{"mortality", "was", "12", "5"}},
		{desc: "non-ASCII separates", text: "naïve café", want: []string{"na", "ve", "caf"}},
		{desc: "dotted capital I lowercases to i plus a separator", text: "İstanbul", want: []string{"i", "stanbul"}},
		{desc: "Kelvin sign lowercases to k", text: "\u212aelvin", want: []string{"kelvin"}},
		{desc: "stem only tokens longer than 3", text: "dies flies sees hospitalizations", stem: true,
			want: []string{"die", "fli", "see", "hospit"}},
	}
	for _, tc := range tests {
		if got := Tokenize(tc.text, tc.stem); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Tokenize(%q, %v) = %q, want %q", tc.desc, tc.text, tc.stem, got, tc.want)
		}
	}
}

func TestScoreExamples(t *testing.T) {
	s := New(Options{Stem: true})
	tests := []struct {
		desc, ref, pred string
		want            Scores
	}{
		{"both empty", "", "", Scores{}},
		{"identical", "a b c", "a b c", Scores{
			R1: Score{1, 1, 1}, R2: Score{1, 1, 1}, RL: Score{1, 1, 1}, RLsum: Score{1, 1, 1}}},
		{"reversed", "a b c d", "d c b a", Scores{
			R1: Score{1, 1, 1}, R2: Score{}, RL: Score{0.25, 0.25, 0.25}, RLsum: Score{0.25, 0.25, 0.25}}},
		{"sentence order matters only for L", "a b\nc d", "c d\na b", Scores{
			R1: Score{1, 1, 1}, R2: Score{2.0 / 3, 2.0 / 3, 2.0 / 3}, RL: Score{0.5, 0.5, 0.5}, RLsum: Score{1, 1, 1}}},
	}
	for _, tc := range tests {
		if got := s.Score(tc.ref, tc.pred); !closeScores(got, tc.want, 1e-12) {
			t.Errorf("%s: Score(%q, %q) = %+v, want %+v", tc.desc, tc.ref, tc.pred, got, tc.want)
		}
	}
}

func closeScores(a, b Scores, tol float64) bool {
	for i, x := range []Score{a.R1, a.R2, a.RL, a.RLsum} {
		y := []Score{b.R1, b.R2, b.RL, b.RLsum}[i]
		if math.Abs(x.Precision-y.Precision) > tol || math.Abs(x.Recall-y.Recall) > tol || math.Abs(x.F-y.F) > tol {
			return false
		}
	}
	return true
}

type goldenCase struct {
	Reference     string                `json:"reference"`
	Prediction    string                `json:"prediction"`
	RefTokens     []string              `json:"ref_tokens"`
	RefTokensStem []string              `json:"ref_tokens_stem"`
	NoStem        map[string][3]float64 `json:"nostem"`
	Stem          map[string][3]float64 `json:"stem"`
}

func loadGolden(t testing.TB) []goldenCase {
	data, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []goldenCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("testdata/golden.json: %v", err)
	}
	return g.Cases
}

// TestScoreGolden compares with Google's rouge-score on the pairs of
// testdata/golden.json (regenerate: see tools/golden/rouge_golden.py).
func TestScoreGolden(t *testing.T) {
	cases := loadGolden(t)
	if len(cases) < 300 {
		t.Fatalf("golden file has %d pairs, want >= 300", len(cases))
	}
	const tol = 1e-9
	maxDev := 0.0
	for _, stem := range []bool{false, true} {
		s := New(Options{Stem: stem})
		for i, c := range cases {
			want, wantToks := c.NoStem, c.RefTokens
			if stem {
				want, wantToks = c.Stem, c.RefTokensStem
			}
			if got := Tokenize(c.Reference, stem); !slices.Equal(got, wantToks) && len(got)+len(wantToks) > 0 {
				t.Errorf("case %d stem=%v: Tokenize = %q, rouge-score %q", i, stem, got, wantToks)
			}
			got := s.Score(c.Reference, c.Prediction)
			for name, sc := range map[string]Score{"rouge1": got.R1, "rouge2": got.R2, "rougeL": got.RL, "rougeLsum": got.RLsum} {
				w := want[name]
				for k, v := range [3]float64{sc.Precision, sc.Recall, sc.F} {
					d := math.Abs(v - w[k])
					maxDev = max(maxDev, d)
					if d > tol {
						t.Errorf("case %d stem=%v %s[%d] = %.17g, rouge-score %.17g (ref %q pred %q)",
							i, stem, name, k, v, w[k], c.Reference, c.Prediction)
					}
				}
			}
		}
	}
	t.Logf("%d pairs x 2 stemming modes x 4 variants x (P,R,F): max deviation %g", len(cases), maxDev)
}

// TestScoreConcurrent checks the shared token cache and scratch pool under
// the race detector and that concurrent results equal sequential ones.
func TestScoreConcurrent(t *testing.T) {
	cases := loadGolden(t)
	s := New(Options{Stem: true})
	want := make([]Scores, len(cases))
	for i, c := range cases {
		want[i] = New(Options{Stem: true}).Score(c.Reference, c.Prediction)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for w := range 4 {
		wg.Go(func() {
			for k := range cases {
				i := (k + w*37) % len(cases)
				if got := s.Score(cases[i].Reference, cases[i].Prediction); got != want[i] {
					select {
					case errs <- fmt.Sprintf("case %d: concurrent %+v != sequential %+v", i, got, want[i]):
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestScoreVocabOverflow bounds the token cache to a few entries so that
// most tokens take the per-call overflow path, and checks the scores do not
// change.
func TestScoreVocabOverflow(t *testing.T) {
	cases := loadGolden(t)
	for _, stem := range []bool{false, true} {
		small := New(Options{Stem: stem})
		small.maxVocab = 5
		full := New(Options{Stem: stem})
		for i, c := range cases {
			if got, want := small.Score(c.Reference, c.Prediction), full.Score(c.Reference, c.Prediction); got != want {
				t.Fatalf("case %d stem=%v: bounded cache %+v, unbounded %+v", i, stem, got, want)
			}
		}
		if len(small.forms) > 5 || len(small.ids) > 5 {
			t.Errorf("stem=%v: cache grew to %d forms, %d ids past its bound 5", stem, len(small.forms), len(small.ids))
		}
	}
}

func BenchmarkScore(b *testing.B) {
	// Typical evaluator input: ~30-token summaries, two to three sentences.
	ref := "Intravenous iron reduced the need for blood transfusion in anaemic patients.\n" +
		"Mortality at 90 days did not differ between groups (12% vs 14%).\n" +
		"Serious adverse events were rare."
	pred := "In anaemic patients, intravenous iron reduced transfusions.\n" +
		"There was no difference in 90-day mortality (12% versus 14%), and adverse events were rare."
	for _, stem := range []bool{false, true} {
		b.Run(fmt.Sprintf("stem=%v", stem), func(b *testing.B) {
			s := New(Options{Stem: stem})
			b.ReportAllocs()
			for b.Loop() {
				s.Score(ref, pred)
			}
		})
	}
}

// BenchmarkScoreParallel scores from GOMAXPROCS goroutines sharing one
// Scorer, as the evaluator does; ns/op is wall time per instance.
func BenchmarkScoreParallel(b *testing.B) {
	cases := loadGolden(b)
	s := New(Options{Stem: true})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c := cases[i%len(cases)]
			s.Score(c.Reference, c.Prediction)
			i++
		}
	})
}
