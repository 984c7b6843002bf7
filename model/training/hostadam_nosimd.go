//go:build !(goexperiment.simd && amd64)

package training

// Without the SIMD build (GOEXPERIMENT=simd on amd64) the host update runs its scalar loops.

func combine2SIMD(out, g0, g1 []float32, c0, c1, scale float32) bool { return false }

func sumSquaresSIMD(c []float32) (float32, bool) { return 0, false }

func adamSIMD(c, w, m, s []float32, b1, b2, oneMinusB1, oneMinusB2, wShrink, eps, stepSize float32) bool {
	return false
}
