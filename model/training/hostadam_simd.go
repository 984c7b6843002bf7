//go:build goexperiment.simd && amd64

package training

import "simd/archsimd"

// AVX-512 versions of the host update's loops (hostadam.go), 16 floats at a time: the same
// operations in the same order per element (separate products and sums, no fused multiply-add;
// square root and division are exact in both), so the update is bit for bit the scalar one, except
// the global norm's sum of squares, whose partial sums are grouped differently.
//
// Each function clears the vector registers' upper halves after its vector loop
// (archsimd.ClearAVXUpperBits, VZEROUPPER): the compiler does not, and scalar float code run with
// them dirty (the loops' tails, and whatever the thread runs next) was 5x slower on the AMD EPYC
// machines tracksum is tested on.

var hostSIMD = archsimd.X86.AVX512()

// combine2SIMD is combine for two shards: out = (g0·c0 + g1·c1)·scale. It returns false when
// AVX-512 is missing (the caller then runs the scalar loop).
func combine2SIMD(out, g0, g1 []float32, c0, c1, scale float32) bool {
	if !hostSIMD {
		return false
	}
	n := len(out)
	g0, g1 = g0[:n], g1[:n]
	vc0, vc1, vs := archsimd.BroadcastFloat32x16(c0), archsimd.BroadcastFloat32x16(c1), archsimd.BroadcastFloat32x16(scale)
	j := 0
	for ; j+16 <= n; j += 16 {
		a := archsimd.LoadFloat32x16Slice(g0[j:]).Mul(vc0)
		b := archsimd.LoadFloat32x16Slice(g1[j:]).Mul(vc1)
		a.Add(b).Mul(vs).StoreSlice(out[j:])
	}
	archsimd.ClearAVXUpperBits()
	for ; j < n; j++ {
		out[j] = (g0[j]*c0 + g1[j]*c1) * scale
	}
	return true
}

// sumSquaresSIMD returns Σ c², summed in 16 float32 lanes, and whether AVX-512 was there.
func sumSquaresSIMD(c []float32) (float32, bool) {
	if !hostSIMD {
		return 0, false
	}
	acc := archsimd.BroadcastFloat32x16(0)
	j := 0
	for ; j+16 <= len(c); j += 16 {
		x := archsimd.LoadFloat32x16Slice(c[j:])
		acc = acc.Add(x.Mul(x))
	}
	var lanes [16]float32
	acc.Store(&lanes)
	archsimd.ClearAVXUpperBits()
	var sum float32
	for _, x := range lanes {
		sum += x
	}
	for ; j < len(c); j++ {
		sum += c[j] * c[j]
	}
	return sum, true
}

// adamSIMD is the AdamW loop of hostAdamW.apply over one chunk; false when AVX-512 is missing.
func adamSIMD(c, w, m, s []float32, b1, b2, oneMinusB1, oneMinusB2, wShrink, eps, stepSize float32) bool {
	if !hostSIMD {
		return false
	}
	n := len(c)
	w, m, s = w[:n], m[:n], s[:n]
	vb1, vb2 := archsimd.BroadcastFloat32x16(b1), archsimd.BroadcastFloat32x16(b2)
	v1, v2 := archsimd.BroadcastFloat32x16(oneMinusB1), archsimd.BroadcastFloat32x16(oneMinusB2)
	vShrink, vEps, vStep := archsimd.BroadcastFloat32x16(wShrink), archsimd.BroadcastFloat32x16(eps), archsimd.BroadcastFloat32x16(stepSize)
	j := 0
	for ; j+16 <= n; j += 16 {
		cj := archsimd.LoadFloat32x16Slice(c[j:])
		mj := archsimd.LoadFloat32x16Slice(m[j:]).Mul(vb1).Add(cj.Mul(v1))
		sj := archsimd.LoadFloat32x16Slice(s[j:]).Mul(vb2).Add(cj.Mul(cj).Mul(v2))
		mj.StoreSlice(m[j:])
		sj.StoreSlice(s[j:])
		wj := archsimd.LoadFloat32x16Slice(w[j:]).Mul(vShrink)
		wj.Sub(mj.Div(sj.Sqrt().Add(vEps)).Mul(vStep)).StoreSlice(w[j:])
	}
	archsimd.ClearAVXUpperBits()
	adamScalar(c[j:], w[j:], m[j:], s[j:], b1, b2, oneMinusB1, oneMinusB2, wShrink, eps, stepSize)
	return true
}
