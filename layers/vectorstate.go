package layers

import (
	"strings"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX itself.
)

// CleanVectorState returns x unchanged; on the pure-Go backend it passes through a copy that leaves
// the CPU's vector registers' upper halves clear (VZEROUPPER) for the op that reads it.
//
// Why: that backend's matrix kernels (gomlx/compute's AVX-512 and AVX2 code, compiled from Go's
// simd package) return with the upper halves dirty, and scalar float code run in that state (its
// exp, the one a softmax runs per element) was 3-5x slower on the AMD EPYC machines tracksum is
// tested on: a softmax over [7, 2000] scores took 29 ns per element after a product, 9 ns after
// this copy (BenchmarkSoftmaxAfterProduct). Go's runtime memmove ends its vector copies with
// VZEROUPPER, and the backend's Concatenate copies with it: x is concatenated with its first row
// and sliced back. Both copies are exact, so values and gradients are those of x. A tensor of
// fewer than cleanMinSize values is returned as it is: the two ops cost more than its scalar code
// loses. Drop it once the backend clears the state itself (archsimd.ClearAVXUpperBits after its
// kernels).
func CleanVectorState(x *Node) *Node {
	g := x.Graph()
	if x.Rank() == 0 || x.Shape().Size() < cleanMinSize || !strings.HasPrefix(strings.ToLower(g.Backend().Name()), "go") {
		return x
	}
	n := x.Shape().Dimensions[0]
	return Slice(Concatenate([]*Node{x, Slice(x, AxisRange(0, 1))}, 0), AxisRange(0, n))
}

// cleanMinSize is the least size of a tensor CleanVectorState copies.
const cleanMinSize = 1024
