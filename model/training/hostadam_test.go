package training

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestHostLoopsSIMD checks that the vectorized loops of the host update (SIMD build) give the
// scalar loops' bits, and the sum of squares up to rounding, on lengths with a remainder.
func TestHostLoopsSIMD(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 16*37 + 5
	vec := func(scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * scale)
		}
		return v
	}
	g0, g1 := vec(1), vec(1)
	c := make([]float32, n)
	if !combine2SIMD(c, g0, g1, 0.3, 0.7, 0.9) {
		t.Skip("no SIMD build or no AVX-512")
	}
	for j := range c {
		if want := (g0[j]*0.3 + g1[j]*0.7) * 0.9; c[j] != want {
			t.Fatalf("combine element %d: %v, want %v", j, c[j], want)
		}
	}
	sum, _ := sumSquaresSIMD(c)
	var want float64
	for _, x := range c {
		want += float64(x) * float64(x)
	}
	if math.Abs(float64(sum)-want) > 1e-5*want {
		t.Errorf("sum of squares %v, want %v", sum, want)
	}
	w, m, s := vec(1), vec(0.1), vec(0.01)
	for i := range s {
		s[i] = float32(math.Abs(float64(s[i])))
	}
	w2, m2, s2 := append([]float32{}, w...), append([]float32{}, m...), append([]float32{}, s...)
	adamSIMD(c, w, m, s, 0.9, 0.999, 0.1, 0.001, 0.99, 1e-8, 1e-3)
	adamScalar(c, w2, m2, s2, 0.9, 0.999, 0.1, 0.001, 0.99, 1e-8, 1e-3)
	for j := range w {
		if w[j] != w2[j] || m[j] != m2[j] || s[j] != s2[j] {
			t.Fatalf("AdamW element %d: w %v m %v s %v, scalar %v %v %v", j, w[j], m[j], s[j], w2[j], m2[j], s2[j])
		}
	}
}
