package tracker

import (
	"fmt"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/ml/layers/activation"
)

// Gradients laid out for the pure-Go backend.
//
// GoMLX derives the gradient of a DotGeneral as another DotGeneral followed by a Transpose back to
// the operand's axis order, and the gradient of a broadcast (a bias add) as a ReduceSum. On the
// Go backend three things then dominate a training step besides the matmuls themselves:
//   - every gradient ends with a Transpose, an identity permutation in most cases, which the
//     backend still copies element by element through a generic index iterator (~5 ns/element);
//   - a weight gradient contracts the leading (token) axis of both operands, a layout the backend's
//     matmul kernels do not take, so it transposes both operands first (the same slow copy);
//   - ReduceSum runs through a generic iterator too: 20-30x slower than the same sum written as a
//     product with a vector of ones, which runs in the AVX-512 matmul kernels.
//
// The functions below build the same forward values as the GoMLX ops they replace (the same
// DotGeneral or fused op) but attach their own gradient: products laid out so the kernels take
// the operands as they are (lhs contracted on its last axis), one explicit transpose where a
// contraction over tokens makes it unavoidable, and sums as products with ones. The gradients are
// mathematically those of GoMLX; only the order of float additions differs.
//
// The hook: GoMLX looks a node's gradient up in graph.VJPRegistration by node type. init wraps
// the entries of the node types used here; a node built by this file is found in customVJPs and
// gets its own gradient, every other node (the summarizer's, GoMLX's own layers) the original one.

// customVJPs maps a node built here to its gradient function.
var customVJPs sync.Map // *Node -> func(node, v *Node) []*Node

func init() {
	for _, t := range []NodeType{NodeTypeDotGeneral, NodeTypeBroadcastInDim, NodeTypeMax, NodeTypeMul} {
		orig := VJPRegistration[t]
		VJPRegistration[t] = func(node *Node, vjps []*Node, outputShape shapes.Shape) []*Node {
			if f, ok := customVJPs.Load(node); ok && outputShape.IsScalar() {
				return f.(func(node, v *Node) []*Node)(node, vjps[0])
			}
			return orig(node, vjps, outputShape)
		}
	}
}

// withGradient registers grad as the gradient function of node (of one of the types wrapped by
// init): given the gradient v of the loss with respect to node, it returns the gradients
// with respect to node.Inputs(), in order.
func withGradient(node *Node, want NodeType, grad func(node, v *Node) []*Node) *Node {
	if node.Type() != want {
		panic(fmt.Sprintf("tracker: fastgrad: expected a %s node, got %s", want, node.Type()))
	}
	customVJPs.Store(node, grad)
	return node
}

// sumRows returns the sum of v [n, k] over its rows, [k], as ones[1, n] @ v.
func sumRows(v *Node) *Node {
	n, k := v.Shape().Dimensions[0], v.Shape().Dimensions[1]
	ones := Ones(v.Graph(), shapes.Make(v.DType(), 1, n))
	return Reshape(DotGeneral(ones, []int{1}, nil, v, []int{0}, nil), k)
}

// matmul is x [n, in] @ w [in, out] with a gradient that needs no transpose for x and one
// transpose of the smaller of x and the output gradient for w.
func matmul(x, w *Node) *Node {
	in, out := w.Shape().Dimensions[0], w.Shape().Dimensions[1]
	y := DotGeneral(x, []int{1}, nil, w, []int{0}, nil)
	return withGradient(y, NodeTypeDotGeneral, func(node, v *Node) []*Node {
		x, w := node.Inputs()[0], node.Inputs()[1]
		dx := DotGeneral(v, []int{1}, nil, w, []int{1}, nil) // [n, in]: v @ w^T, both contracted on their last axis
		var dw *Node
		if in <= out {
			dw = DotGeneral(Transpose(x, 0, 1), []int{1}, nil, v, []int{0}, nil) // x^T [in, n] @ v [n, out]
		} else {
			dw = Transpose(DotGeneral(Transpose(v, 0, 1), []int{1}, nil, x, []int{0}, nil), 0, 1) // (v^T x)^T: the transposes are [n, out] and [out, in]
		}
		return []*Node{dx, dw}
	})
}

// broadcastRows repeats b [k] on n rows, [n, k]; its gradient sums the rows with a product.
func broadcastRows(b *Node, n int) *Node {
	k := b.Shape().Dimensions[0]
	y := BroadcastToDims(Reshape(b, 1, k), n, k)
	return withGradient(y, NodeTypeBroadcastInDim, func(node, v *Node) []*Node {
		return []*Node{Reshape(sumRows(v), node.Inputs()[0].Shape().Dimensions...)}
	})
}

// denseFast is nn.Dense (x @ w + b, then act, over the last axis of x; w [in, out], b [out]): the
// forward pass is the backend's fused dense op, the gradient that of matmul and broadcastRows.
func denseFast(x, w, b *Node, act activation.Type) *Node {
	in, out := w.Shape().Dimensions[0], w.Shape().Dimensions[1]
	lead := x.Shape().Dimensions[:x.Rank()-1]
	n := 1
	for _, d := range lead {
		n *= d
	}
	decomposed := func() *Node {
		y := matmul(Reshape(x, n, in), w)
		y = Add(y, broadcastRows(b, n))
		if act == activation.TypeRelu {
			y = relu(y)
		} else {
			y = activation.Apply(act, y)
		}
		return Reshape(y, append(append([]int{}, lead...), out)...)
	}
	cfg := compute.DenseConfig{Activation: act.ToBackend(), WeightLayout: compute.DenseLayoutInputOutputs}
	y, _ := InternalFusedOpCaller(func() *Node { return BackendFusedDense(x, w, b, cfg) }, decomposed, true)
	return y
}

// attentionScores is q·k over the last axis for every (batch, head): q [B, H, Sq, e], k [B, H,
// Sk, e] -> [B, H, Sq, Sk] (einsum bhqe,bhke->bhqk).
func attentionScores(q, k *Node) *Node {
	y := DotGeneral(q, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1})
	return withGradient(y, NodeTypeDotGeneral, func(node, v *Node) []*Node {
		q, k := node.Inputs()[0], node.Inputs()[1]
		dq := DotGeneral(v, []int{3}, []int{0, 1}, k, []int{2}, []int{0, 1})                  // Σ_k v[q,k] k[k,e]
		dk := DotGeneral(Transpose(v, 2, 3), []int{3}, []int{0, 1}, q, []int{2}, []int{0, 1}) // Σ_q v[q,k] q[q,e]
		return []*Node{dq, dk}
	})
}

// attentionValues is the attention-weighted sum of the values: p [B, H, Sq, Sk], v [B, H, Sk, e]
// -> [B, H, Sq, e] (einsum bhqk,bhke->bhqe).
func attentionValues(p, values *Node) *Node {
	y := DotGeneral(p, []int{3}, []int{0, 1}, values, []int{2}, []int{0, 1})
	return withGradient(y, NodeTypeDotGeneral, func(node, v *Node) []*Node {
		p, values := node.Inputs()[0], node.Inputs()[1]
		dp := DotGeneral(v, []int{3}, []int{0, 1}, values, []int{3}, []int{0, 1})             // Σ_e v[q,e] values[k,e]
		dv := DotGeneral(Transpose(p, 2, 3), []int{3}, []int{0, 1}, v, []int{2}, []int{0, 1}) // Σ_q p[q,k] v[q,e]
		return []*Node{dp, dv}
	})
}

// relu is max(x, 0) with a two-pass gradient, v where x >= 0 (as GoMLX's, 1 at 0) else 0; GoMLX's
// own goes through a difference, a sign-based indicator and a product.
func relu(x *Node) *Node {
	y := Max(x, ScalarZero(x.Graph(), x.DType()))
	return withGradient(y, NodeTypeMax, func(node, v *Node) []*Node {
		x := node.Inputs()[0]
		zero := ScalarZero(x.Graph(), x.DType())
		return []*Node{Where(GreaterOrEqual(x, zero), v, zero), nil}
	})
}

// layerNormFast is nn.LayerNorm over the last axis of x (gain and offset [d]): the forward pass is
// the backend's fused op; the gradient uses the closed form
//
//	dx = (g - mean(g) - x̂ · mean(g · x̂)) / σ,   g = dL/dx̂ = dL/dy · gain
//
// with the means over the last axis as products with ones, and the gain and offset gradients as
// row sums (broadcastRows): about ten elementwise passes, where GoMLX's decomposition takes more
// and reduces with the slow generic ReduceSum.
func layerNormFast(x, gain, offset *Node, epsilon float64) *Node {
	d := x.Shape().Dimensions[x.Rank()-1]
	n := x.Shape().Size() / d
	decomposed := func() *Node {
		g := x.Graph()
		x2 := Reshape(x, n, d)
		ones := Ones(g, shapes.Make(x.DType(), 1, d))
		meanLast := func(v *Node) *Node { // [n, d] -> [n, 1]
			return MulScalar(DotGeneral(v, []int{1}, nil, ones, []int{1}, nil), 1/float64(d))
		}
		xc := Sub(x2, StopGradient(meanLast(x2)))
		rstd := StopGradient(Rsqrt(AddScalar(meanLast(Mul(xc, xc)), epsilon)))
		xhat := withGradient(Mul(xc, rstd), NodeTypeMul, func(node, v *Node) []*Node {
			rstd := node.Inputs()[1]
			dx := Sub(Sub(v, meanLast(v)), Mul(node, meanLast(Mul(v, node))))
			return []*Node{Mul(dx, rstd), nil}
		})
		y := Add(Mul(xhat, broadcastRows(gain, n)), broadcastRows(offset, n))
		return Reshape(y, x.Shape().Dimensions...)
	}
	y, _ := InternalFusedOpCaller(func() *Node { return BackendFusedLayerNorm(x, []int{-1}, epsilon, gain, offset) }, decomposed, true)
	return y
}
