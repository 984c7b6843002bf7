// Package stats holds the statistics of the evaluator: Pearson, Spearman and
// Kendall tau-b correlations with p-values matching scipy 1.10 (Debian
// python3-scipy), the mean, a seeded percentile bootstrap confidence
// interval and a paired bootstrap test. Golden values from scipy are in
// testdata/ (regenerate with tools/golden/stats_golden.py).
//
// # Example
//
//	r, p, err := stats.Spearman(autoScores, humanScores)
//	lo, hi := stats.BootstrapCI(perInstanceF1, 1000, 42, 0.95)
package stats

import (
	"math"
	"slices"
)

func check(x, y []float64, minN int) error {
	if len(x) != len(y) {
		return ErrLength
	}
	if len(x) < minN {
		return ErrTooFew
	}
	for i := range x {
		if math.IsNaN(x[i]) || math.IsNaN(y[i]) {
			return ErrNaN
		}
	}
	if isConstant(x) || isConstant(y) {
		return ErrConstant
	}
	return nil
}

func isConstant(x []float64) bool {
	for _, v := range x[1:] {
		if v != x[0] {
			return false
		}
	}
	return true
}

// Pearson returns the Pearson correlation r of x and y and its two-sided
// p-value, as scipy.stats.pearsonr: the exact null distribution of r for
// normal data (a beta distribution, equivalently a t test with n-2 degrees
// of freedom). With n = 2, r is +-1 and p is 1, as in scipy.
func Pearson(x, y []float64) (r, p float64, err error) {
	if err := check(x, y, 2); err != nil {
		return math.NaN(), math.NaN(), err
	}
	n := len(x)
	if n == 2 {
		return sign(x[1]-x[0]) * sign(y[1]-y[0]), 1, nil
	}
	r = pearsonR(x, y)
	return r, corrPValue(r, n), nil
}

func sign(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// pearsonR centres and normalises both vectors before the dot product, as
// scipy does, so that r stays within rounding of the exact value and is
// clipped to [-1, 1].
func pearsonR(x, y []float64) float64 {
	mx, my := Mean(x), Mean(y)
	var sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxx += dx * dx
		syy += dy * dy
	}
	nx, ny := math.Sqrt(sxx), math.Sqrt(syy)
	var r float64
	for i := range x {
		r += (x[i] - mx) / nx * ((y[i] - my) / ny)
	}
	return max(-1, min(1, r))
}

// Spearman returns Spearman's rank correlation (Pearson's r of the ranks,
// ties given their average rank) and its two-sided p-value from the t
// distribution with n-2 degrees of freedom, as scipy.stats.spearmanr. It
// needs n >= 3 (scipy's p-value is NaN for n = 2).
func Spearman(x, y []float64) (rho, p float64, err error) {
	if err := check(x, y, 3); err != nil {
		return math.NaN(), math.NaN(), err
	}
	rho = pearsonR(Rank(x), Rank(y))
	return rho, corrPValue(rho, len(x)), nil
}

// Rank returns the ranks of x (1-based), ties receiving the average of the
// ranks they span (scipy.stats.rankdata's default "average" method).
func Rank(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(x[a], x[b]) })
	ranks := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && x[idx[j]] == x[idx[i]] {
			j++
		}
		// Positions i..j-1 share ranks i+1..j, whose average is (i+1+j)/2.
		avg := float64(i+1+j) / 2
		for k := i; k < j; k++ {
			ranks[idx[k]] = avg
		}
		i = j
	}
	return ranks
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// KendallTauB returns Kendall's tau-b (ties in either variable corrected,
// scipy.stats.kendalltau's default) and its two-sided p-value with scipy's
// default method="auto": the exact null distribution when neither input has
// ties and n <= 33 (or when at most one pair is discordant, or concordant),
// otherwise the asymptotic normal approximation with scipy's tie-corrected
// variance. Counting is O(n log n).
func KendallTauB(x, y []float64) (tau, p float64, err error) {
	if err := check(x, y, 2); err != nil {
		return math.NaN(), math.NaN(), err
	}
	n := len(x)
	// Sort by x then y; discordant pairs are then the strict inversions of
	// y (pairs tied in x are in y order, so they do not count).
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmpFloat(x[a], x[b]); c != 0 {
			return c
		}
		return cmpFloat(y[a], y[b])
	})
	ys := make([]float64, n)
	for i, k := range idx {
		ys[i] = y[k]
	}
	var ntie int64 // pairs tied in both x and y
	for i := 0; i < n; {
		j := i + 1
		for j < n && x[idx[j]] == x[idx[i]] && y[idx[j]] == y[idx[i]] {
			j++
		}
		c := int64(j - i)
		ntie += c * (c - 1) / 2
		i = j
	}
	dis := inversions(ys, make([]float64, n))
	xtie, x0, x1 := tieStats(x)
	ytie, y0, y1 := tieStats(y)
	tot := int64(n) * int64(n-1) / 2
	conMinusDis := float64(tot - xtie - ytie + ntie - 2*dis)
	tau = conMinusDis / math.Sqrt(float64(tot-xtie)) / math.Sqrt(float64(tot-ytie))
	tau = max(-1, min(1, tau))

	if xtie == 0 && ytie == 0 && (n <= 33 || min(dis, tot-dis) <= 1) {
		return tau, kendallExactP(n, tot-dis), nil
	}
	m := float64(n) * float64(n-1)
	nf := float64(n)
	variance := (m*(2*nf+5)-x1-y1)/18 + 2*float64(xtie)*float64(ytie)/m + x0*y0/(9*m*(nf-2))
	return tau, normTwoSided(conMinusDis / math.Sqrt(variance)), nil
}

// tieStats returns, over groups of equal values of size t, the sums of
// t(t-1)/2, t(t-1)(t-2) and t(t-1)(2t+5) (scipy's count_rank_tie).
func tieStats(x []float64) (pairs int64, s0, s1 float64) {
	s := slices.Clone(x)
	slices.Sort(s)
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j] == s[i] {
			j++
		}
		if t := int64(j - i); t > 1 {
			tf := float64(t)
			pairs += t * (t - 1) / 2
			s0 += tf * (tf - 1) * (tf - 2)
			s1 += tf * (tf - 1) * (2*tf + 5)
		}
		i = j
	}
	return pairs, s0, s1
}

// inversions counts pairs i < j with a[i] > a[j] by merge sort (sorting a).
func inversions(a, buf []float64) int64 {
	if len(a) < 2 {
		return 0
	}
	mid := len(a) / 2
	inv := inversions(a[:mid], buf[:mid]) + inversions(a[mid:], buf[mid:])
	i, j, k := 0, mid, 0
	for i < mid && j < len(a) {
		if a[j] < a[i] {
			inv += int64(mid - i)
			buf[k] = a[j]
			j++
		} else {
			buf[k] = a[i]
			i++
		}
		k++
	}
	k += copy(buf[k:], a[i:mid])
	copy(buf[k:], a[j:])
	copy(a, buf[:len(a)])
	return inv
}
