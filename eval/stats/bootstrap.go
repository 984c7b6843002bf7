package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// pcgStream is the fixed second word of the PCG state: the seed alone picks
// the sequence, so one seed gives one sequence on every platform.
const pcgStream = 0x9e3779b97f4a7c15

// Mean returns the arithmetic mean of x (compensated summation), NaN for
// an empty slice.
func Mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	// Neumaier summation: the error does not grow with len(x).
	var s, comp float64
	for _, v := range x {
		t := s + v
		if math.Abs(s) >= math.Abs(v) {
			comp += (s - t) + v
		} else {
			comp += (v - t) + s
		}
		s = t
	}
	return (s + comp) / float64(len(x))
}

// BootstrapCI returns the percentile bootstrap confidence interval of the
// mean of values at the given level (e.g. 0.95): resamples means of
// len(values) draws with replacement, then the (1-level)/2 and
// 1-(1-level)/2 quantiles of those means with numpy's default linear
// interpolation. Draws come from math/rand/v2's PCG seeded with (seed, a
// fixed constant), so the same inputs and seed give the same interval.
// Empty values or resamples < 1 give (NaN, NaN).
//
// The draw scheme (one IntN(n) per draw, resample by resample, plain
// left-to-right sums) is a contract: eval.Aggregate replays it to bootstrap
// all metrics from one set of resamples, and its tests check that it
// reproduces this function bit for bit.
func BootstrapCI(values []float64, resamples int, seed uint64, level float64) (lo, hi float64) {
	n := len(values)
	if n == 0 || resamples < 1 {
		return math.NaN(), math.NaN()
	}
	rng := rand.New(rand.NewPCG(seed, pcgStream))
	means := make([]float64, resamples)
	for b := range means {
		s := 0.0
		for range n {
			s += values[rng.IntN(n)]
		}
		means[b] = s / float64(n)
	}
	slices.Sort(means)
	alpha := (1 - level) / 2
	return Quantile(means, alpha), Quantile(means, 1-alpha)
}

// Quantile is numpy.quantile(sorted, q) with method="linear" (the default)
// on an ascending, non-empty slice; q is clamped to [0, 1]. It interpolates
// as numpy does, so that the bootstrap intervals computed here and in eval
// match numpy's bit for bit.
func Quantile(sorted []float64, q float64) float64 {
	q = max(0, min(1, q))
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	t := pos - float64(i)
	a, b := sorted[i], sorted[i+1]
	// numpy's _lerp: interpolate from the nearer end for accuracy.
	if t >= 0.5 {
		return b - (b-a)*(1-t)
	}
	return a + (b-a)*t
}

// PairedBootstrap tests whether two systems scored on the same instances
// differ. meanDiff is mean(a) - mean(b). The two-sided p-value follows the
// paired bootstrap of Koehn (2004) / Berg-Kirkpatrick et al. (2012) with
// the null hypothesis imposed by centring: resample instance indices with
// replacement (the same indices for a and b), compute the resampled mean
// difference d*, and count how often |d* - meanDiff| >= |meanDiff|, i.e.
// how often a difference at least as large as the observed one arises from
// sampling noise alone; p = (count + 1) / (resamples + 1), so p is never 0.
// A zero difference gives p = 1. The draws are seeded as in BootstrapCI.
// Mismatched lengths, empty input or resamples < 1 give (NaN, NaN).
func PairedBootstrap(a, b []float64, resamples int, seed uint64) (meanDiff, p float64) {
	n := len(a)
	if n == 0 || n != len(b) || resamples < 1 {
		return math.NaN(), math.NaN()
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = a[i] - b[i]
	}
	meanDiff = Mean(d)
	obs := math.Abs(meanDiff)
	rng := rand.New(rand.NewPCG(seed, pcgStream))
	count := 0
	for range resamples {
		s := 0.0
		for range n {
			s += d[rng.IntN(n)]
		}
		if math.Abs(s/float64(n)-meanDiff) >= obs {
			count++
		}
	}
	return meanDiff, float64(count+1) / float64(resamples+1)
}
