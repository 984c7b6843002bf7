package stats

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestRank(t *testing.T) {
	tests := []struct {
		desc string
		x    []float64
		want []float64
	}{
		{"no ties", []float64{3, 1, 2}, []float64{3, 1, 2}},
		{"ties averaged", []float64{1, 2, 2, 3}, []float64{1, 2.5, 2.5, 4}},
		{"all equal", []float64{5, 5, 5}, []float64{2, 2, 2}},
	}
	for _, tc := range tests {
		if got := Rank(tc.x); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Rank(%v) = %v, want %v", tc.desc, tc.x, got, tc.want)
		}
	}
}

func TestCorrelationErrors(t *testing.T) {
	tests := []struct {
		desc string
		x, y []float64
		want error
	}{
		{"length mismatch", []float64{1, 2, 3}, []float64{1, 2}, ErrLength},
		{"too few", []float64{1}, []float64{2}, ErrTooFew},
		{"constant", []float64{1, 1, 1}, []float64{1, 2, 3}, ErrConstant},
		{"NaN", []float64{1, math.NaN(), 3}, []float64{1, 2, 3}, ErrNaN},
	}
	for _, tc := range tests {
		for name, f := range map[string]func(x, y []float64) (float64, float64, error){
			"Pearson": Pearson, "Spearman": Spearman, "KendallTauB": KendallTauB,
		} {
			r, p, err := f(tc.x, tc.y)
			if !errors.Is(err, tc.want) || !math.IsNaN(r) || !math.IsNaN(p) {
				t.Errorf("%s: %s = (%v, %v, %v), want NaN, NaN, %v", tc.desc, name, r, p, err, tc.want)
			}
		}
	}
}

func TestMean(t *testing.T) {
	if got := Mean([]float64{1, 2, 3, 4}); got != 2.5 {
		t.Errorf("Mean = %v, want 2.5", got)
	}
	if got := Mean([]float64{1e16, 1, -1e16, 1}); got != 0.5 {
		t.Errorf("Mean with cancellation = %v, want 0.5", got)
	}
	if !math.IsNaN(Mean(nil)) {
		t.Error("Mean(nil) should be NaN")
	}
}

func TestBootstrapCI(t *testing.T) {
	x := make([]float64, 200)
	for i := range x {
		x[i] = float64(i%10) / 10
	}
	lo, hi := BootstrapCI(x, 2000, 7, 0.95)
	lo2, hi2 := BootstrapCI(x, 2000, 7, 0.95)
	if lo != lo2 || hi != hi2 {
		t.Errorf("same seed gave different intervals: [%v, %v] vs [%v, %v]", lo, hi, lo2, hi2)
	}
	m := Mean(x)
	// The standard error of the mean is ~0.02 here: the 95% interval
	// should span roughly +-0.04 around it.
	if !(lo < m && m < hi) || hi-lo < 0.05 || hi-lo > 0.12 {
		t.Errorf("interval [%v, %v] implausible around mean %v", lo, hi, m)
	}
	if lo3, hi3 := BootstrapCI(x, 2000, 8, 0.95); lo3 == lo && hi3 == hi {
		t.Error("different seeds gave identical intervals")
	}
	if lo, hi := BootstrapCI(nil, 10, 1, 0.95); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Error("empty input should give NaN")
	}
}

func TestPairedBootstrap(t *testing.T) {
	n := 100
	a, b, same := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range a {
		base := float64(i%7) / 7
		a[i] = base + 0.1 // clearly better on every instance
		b[i] = base
		same[i] = base
	}
	d, p := PairedBootstrap(a, b, 1000, 3)
	if math.Abs(d-0.1) > 1e-12 || p > 0.01 {
		t.Errorf("consistent improvement: diff %v p %v, want 0.1 and p < 0.01", d, p)
	}
	d, p = PairedBootstrap(same, b, 1000, 3)
	if d != 0 || p != 1 {
		t.Errorf("identical systems: diff %v p %v, want 0 and 1", d, p)
	}
	noisy := make([]float64, n)
	for i := range noisy {
		noisy[i] = b[i] + 0.3*float64(i%2*2-1) // +-0.3 alternating: no mean effect
	}
	if _, p := PairedBootstrap(noisy, b, 1000, 3); p < 0.5 {
		t.Errorf("zero-mean noise: p %v, want large", p)
	}
	d1, p1 := PairedBootstrap(a, noisy, 500, 9)
	d2, p2 := PairedBootstrap(a, noisy, 500, 9)
	if d1 != d2 || p1 != p2 {
		t.Error("same seed gave different results")
	}
}

func TestQuantile(t *testing.T) {
	// Expected values are numpy.quantile(sorted, q) (method="linear").
	tests := []struct {
		desc   string
		sorted []float64
		q      float64
		want   float64
	}{
		{"single value", []float64{7}, 0.3, 7},
		{"minimum", []float64{1, 2, 3, 4}, 0, 1},
		{"maximum", []float64{1, 2, 3, 4}, 1, 4},
		{"median between two", []float64{1, 2, 3, 4}, 0.5, 2.5},
		{"lower quartile", []float64{1, 2, 3, 4}, 0.25, 1.75},
		{"interpolated from the upper end", []float64{0, 10}, 0.75, 7.5},
		{"exact position", []float64{1, 2, 3, 4, 5}, 0.75, 4},
		{"q below 0 clamped", []float64{1, 2, 3}, -0.5, 1},
		{"q above 1 clamped", []float64{1, 2, 3}, 1.5, 3},
	}
	for _, tc := range tests {
		if got := Quantile(tc.sorted, tc.q); got != tc.want {
			t.Errorf("%s: Quantile(%v, %v) = %v, want %v", tc.desc, tc.sorted, tc.q, got, tc.want)
		}
	}
}
