package stats

import (
	"math/big"
)

// kendallExactP is the two-sided exact p-value of Kendall's tau without
// ties for n observations with c concordant pairs, a port of scipy's
// mstats_basic._kendall_p_exact (Kendall 1970, "Rank Correlation Methods"):
// it counts permutations with at most c inversions by repeated cumulative
// sums, using the symmetry of the distribution. KendallTauB calls it only
// without ties and with n <= 33 or c <= 1.
func kendallExactP(n int, c int64) float64 {
	tot := int64(n) * int64(n-1) / 2
	c = min(c, tot-c)
	var prob float64
	switch {
	case n <= 2:
		prob = 1
	case c == 0:
		prob = 0
		if n < 171 {
			prob = 2 / factorial(n)
		}
	case c == 1:
		prob = 0
		if n < 172 {
			prob = 2 / factorial(n-1)
		}
	case 4*c == int64(n)*int64(n-1):
		prob = 1
	default:
		// scipy has a second, scaled recurrence for n >= 171; it cannot be
		// reached here, because the exact method is only chosen with
		// n <= 33 unless c <= 1 (handled above).
		cur := make([]float64, c+1)
		cur[0], cur[1] = 1, 1
		tmp := make([]float64, c+1)
		for j := 3; j <= n; j++ {
			cumsum(cur)
			if int64(j) <= c {
				// numpy's new[j:] -= new[:c+1-j] reads the old values
				// where the two views overlap.
				k := int(c) + 1 - j
				copy(tmp[:k], cur[:k])
				for i := 0; i < k; i++ {
					cur[j+i] -= tmp[i]
				}
			}
		}
		prob = 2 * sum(cur) / factorial(n)
	}
	return max(0, min(1, prob))
}

func cumsum(a []float64) {
	for i := 1; i < len(a); i++ {
		a[i] += a[i-1]
	}
}

func sum(a []float64) float64 {
	s := 0.0
	for _, v := range a {
		s += v
	}
	return s
}

// factorial returns n! correctly rounded to float64 (exact big integer
// product first: a float product drifts for n > 22).
func factorial(n int) float64 {
	f, _ := new(big.Float).SetInt(new(big.Int).MulRange(1, int64(n))).Float64()
	return f
}
