package eval

import (
	"math"
	"testing"
)

func TestMicroF1(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		counts [][3]float64
		idx    []int
		want   float64
	}{
		{"pooled counts", [][3]float64{{2, 1, 0}, {1, 0, 2}, {0, 0, 0}}, nil, 6.0 / 9},
		{"resampled instances", [][3]float64{{2, 1, 0}, {1, 0, 2}}, []int{0, 0}, 8.0 / 10},
		{"nothing cited", [][3]float64{{0, 0, 0}}, nil, 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := microF1(tc.counts, tc.idx); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPairedBootstrapMicroF1(t *testing.T) {
	// A cites every gold sentence of 40 instances; B misses half of them: a clear difference.
	var a, b [][3]float64
	for range 40 {
		a = append(a, [3]float64{2, 0, 0})
		b = append(b, [3]float64{1, 1, 1})
	}
	d, p := pairedBootstrapMicroF1(a, b, 1000, 1)
	if math.Abs(d-0.5) > 1e-12 || p > 0.01 {
		t.Errorf("clear difference: diff %v p %v, want 0.5 and p < 0.01", d, p)
	}
	// Equal systems: no difference, p = 1.
	if d, p := pairedBootstrapMicroF1(a, a, 200, 1); d != 0 || p != 1 {
		t.Errorf("same system: diff %v p %v", d, p)
	}
	// One instance in 40 differs: not significant.
	c := append([][3]float64{}, a...)
	c[0] = [3]float64{1, 1, 1}
	if _, p := pairedBootstrapMicroF1(a, c, 1000, 1); p < 0.05 {
		t.Errorf("one differing instance: p %v, want >= 0.05", p)
	}
	if d, p := pairedBootstrapMicroF1(a, b[:3], 10, 1); !math.IsNaN(d) || !math.IsNaN(p) {
		t.Errorf("mismatched lengths: %v %v", d, p)
	}
}
