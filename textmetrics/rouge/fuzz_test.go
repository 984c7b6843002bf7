package rouge

import (
	"math"
	"testing"
)

// FuzzScore checks invariants on arbitrary text: scores lie in [0, 1], and
// swapping reference and prediction swaps precision and recall of ROUGE-1,
// ROUGE-2 and ROUGE-L (ROUGE-Lsum's union LCS is not symmetric). The seed
// corpus runs in every `go test`; `go test -fuzz FuzzScore ./eval/rouge`
// explores further.
func FuzzScore(f *testing.F) {
	f.Add("The patients improved.\nMortality fell.", "Mortality fell in patients.", true)
	f.Add("", "a", false)
	f.Add("a a a\n\nb", "b\na a", true)
	f.Add("İ\u212a naïve 12.5%", "i k na ve 12 5", false)
	s, n := New(Options{Stem: true}), New(Options{})
	f.Fuzz(func(t *testing.T, a, b string, stem bool) {
		sc := n
		if stem {
			sc = s
		}
		x, y := sc.Score(a, b), sc.Score(b, a)
		for _, v := range []Score{x.R1, x.R2, x.RL, x.RLsum} {
			for _, f := range []float64{v.Precision, v.Recall, v.F} {
				if math.IsNaN(f) || f < 0 || f > 1 {
					t.Fatalf("Score(%q, %q) = %+v: value outside [0, 1]", a, b, x)
				}
			}
		}
		for i, p := range [][2]Score{{x.R1, y.R1}, {x.R2, y.R2}, {x.RL, y.RL}} {
			if p[0].Precision != p[1].Recall || p[0].Recall != p[1].Precision || p[0].F != p[1].F {
				t.Fatalf("variant %d not symmetric: Score(%q, %q) = %+v, swapped %+v", i, a, b, p[0], p[1])
			}
		}
	})
}
