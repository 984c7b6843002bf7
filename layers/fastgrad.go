package layers

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
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
// contraction over tokens makes it unavoidable, sums as products with ones, and per-row values
// ([n, 1]) repeated to full shape by products with ones before an elementwise op (expandLast):
// the backend's elementwise ops are fast on operands of one shape and go through a generic
// index iterator when they broadcast. The gradients are
// mathematically those of GoMLX; only the order of float additions differs.
//
// The fused ops (dense, layer norm, softmax) get their gradient directly from the fused node's
// inputs and output; GoMLX instead recomputes a decomposed forward pass for them in the backward
// pass (for a ReLU dense layer that is a second matmul; for softmax an exp in float64).
//
// The hook: GoMLX looks a node's gradient up in graph.VJPRegistration by node type. init wraps
// the entries of the node types used here; a node built by this file is found in customVJPs and
// gets its own gradient, every other node (GoMLX's own layers, plain graph ops) the original one.
// Backends without a fused op (InternalFusedOpCaller falls back) get the decomposed versions below,
// with the same gradients.
//
// Gradient checkpointing ((*Node).Checkpoint): GoMLX differentiates a node of a checkpointed
// block through a copy (CloneWithInputs) whose inputs are recomputed in the backward pass, and
// hands the copy, not the node, to the gradient function. A pointer key would miss the copy (the
// fused softmax, which GoMLX cannot differentiate, would then panic; a product would silently get
// GoMLX's slow gradient), so a node built here is keyed by an alias, which the copy keeps: the
// gradient function runs on the copy and so reads the recomputed inputs and output.

// customVJPs maps the alias of a node built here to its gradient function. The entry is deleted
// when the node is collected (its copies belong to the same graph and go with it), so the map
// keeps no graph alive.
var customVJPs sync.Map // alias string -> func(node, v *Node) []*Node

// nextGradID numbers the aliases of customVJPs: unique in the process, so never taken in a graph.
var nextGradID atomic.Uint64

// customGradients counts the gradients taken from customVJPs: the tests check that a checkpointed
// graph uses as many as the same graph without checkpoints (a missed one falls back to GoMLX's
// gradient with the same values, which a comparison of values cannot see).
var customGradients atomic.Int64

// CustomGradients returns how many gradients the process has taken from the functions of this
// package so far (the graphs built since): a test of a model built on the layers checks that its
// graph uses them, and as many under gradient checkpointing as without.
func CustomGradients() int64 { return customGradients.Load() }

// gradAliasPrefix starts the aliases of the nodes with a gradient of their own (absolute, so a
// graph's alias scope does not change them).
const gradAliasPrefix = "/tracksum/fastgrad/"

func init() {
	for _, t := range []NodeType{NodeTypeDotGeneral, NodeTypeBroadcastInDim, NodeTypeMax, NodeTypeMul,
		NodeTypeFusedDense, NodeTypeFusedLayerNorm, NodeTypeFusedSoftmax, NodeTypeConcatenate} {
		orig, registered := VJPRegistration[t]
		VJPRegistration[t] = func(node *Node, vjps []*Node, outputShape shapes.Shape) []*Node {
			if alias := node.GetAlias(); alias != "" && outputShape.IsScalar() {
				if f, ok := customVJPs.Load(alias); ok {
					customGradients.Add(1)
					return f.(func(node, v *Node) []*Node)(node, vjps[0])
				}
			}
			if !registered {
				panic(fmt.Sprintf("graph has node %s with type %q, for which no gradient is defined", node, node.Type()))
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
		panic(fmt.Sprintf("layers: expected a %s node, got %s", want, node.Type()))
	}
	key := gradAliasPrefix + strconv.FormatUint(nextGradID.Add(1), 10)
	node.WithAlias(key)
	customVJPs.Store(key, grad)
	runtime.AddCleanup(node, func(key string) { customVJPs.Delete(key) }, key)
	return node
}

// sumRows returns the sum of v [n, k] over its rows, [k], as ones[1, n] @ v.
func sumRows(v *Node) *Node {
	n, k := v.Shape().Dimensions[0], v.Shape().Dimensions[1]
	ones := Ones(v.Graph(), shapes.Make(v.DType(), 1, n))
	return Reshape(DotGeneral(ones, []int{1}, nil, v, []int{0}, nil), k)
}

// Half precision on the Go backend.
//
// The Go backend (gomlx/compute v0.1.5, AVX2 kernels) computes a bfloat16 or float16 DotGeneral
// correctly only when the left operand is contracted on its last axis and the right one on its
// first axis after the batch axes: the other layouts return wrong values once 16 or more values
// are contracted (measured on all four layouts; TestHalfPrecisionProducts checks the ops). For half
// dtypes the ops below
// therefore lay their operands out that way with explicit transposes (dot, and the half
// variants of ProductTransposed and AttentionScores); float32 and float64 keep their layouts
// unchanged. XLA folds such transposes into its products.

// isHalf reports whether dt is a 16-bit float type.
func isHalf(dt dtypes.DType) bool { return dt == dtypes.BFloat16 || dt == dtypes.Float16 }

// dot is DotGeneral(lhs, lc, batch, rhs, rc, batch) with one contracted axis each and batch axes
// leading both operands; for half dtypes the operands are first transposed into the layout the Go
// backend computes correctly (lhs: [batch..., free..., contracted]; rhs: [batch..., contracted,
// free...]), which leaves the output's layout unchanged.
func dot(lhs *Node, lc int, batch []int, rhs *Node, rc int) *Node {
	if !isHalf(lhs.DType()) {
		return DotGeneral(lhs, []int{lc}, batch, rhs, []int{rc}, batch)
	}
	nb := len(batch)
	for i, b := range batch {
		if b != i {
			panic(fmt.Sprintf("layers: dot needs leading batch axes, got %v", batch))
		}
	}
	if lc != lhs.Rank()-1 {
		perm := make([]int, 0, lhs.Rank())
		for i := range lhs.Rank() {
			if i != lc {
				perm = append(perm, i)
			}
		}
		lhs, lc = TransposeAllDims(lhs, append(perm, lc)...), lhs.Rank()-1
	}
	if rc != nb {
		perm := make([]int, 0, rhs.Rank())
		for i := range nb {
			perm = append(perm, i)
		}
		perm = append(perm, rc)
		for i := nb; i < rhs.Rank(); i++ {
			if i != rc {
				perm = append(perm, i)
			}
		}
		rhs, rc = TransposeAllDims(rhs, perm...), nb
	}
	return DotGeneral(lhs, []int{lc}, batch, rhs, []int{rc}, batch)
}

// Product is x [n, in] @ w [in, out] with a gradient that needs no transpose for x and one
// transpose of the smaller of x and the output gradient for w.
func Product(x, w *Node) *Node {
	y := DotGeneral(x, []int{1}, nil, w, []int{0}, nil)
	return withGradient(y, NodeTypeDotGeneral, func(node, v *Node) []*Node {
		dx, dw := matmulGrads(node.Inputs()[0], node.Inputs()[1], v)
		return []*Node{dx, dw}
	})
}

// matmulGrads returns the gradients of x [n, in] @ w [in, out] given v = dL/dy [n, out]. The
// weight gradient contracts the rows: it transposes x, or v and the product, whichever moves fewer
// values (a layer applied to a few rows, such as an encoder's last layer on its first position,
// transposes its small input rather than the weights' shape).
func matmulGrads(x, w, v *Node) (dx, dw *Node) {
	in, out := w.Shape().Dimensions[0], w.Shape().Dimensions[1]
	n := x.Shape().Dimensions[0]
	dx = dot(v, 1, nil, w, 1) // [n, in]: v @ w^T, both contracted on their last axis
	if n*in <= n*out+in*out {
		dw = DotGeneral(Transpose(x, 0, 1), []int{1}, nil, v, []int{0}, nil) // x^T [in, n] @ v [n, out]
	} else {
		dw = Transpose(DotGeneral(Transpose(v, 0, 1), []int{1}, nil, x, []int{0}, nil), 0, 1) // (v^T x)^T: the transposes are [n, out] and [out, in]
	}
	return dx, dw
}

// BroadcastRows repeats b [k] on n rows, [n, k]; its gradient sums the rows with a product (GoMLX:
// a ReduceSum through the backend's generic iterator).
func BroadcastRows(b *Node, n int) *Node {
	k := b.Shape().Dimensions[0]
	y := BroadcastToDims(Reshape(b, 1, k), n, k)
	return withGradient(y, NodeTypeBroadcastInDim, func(node, v *Node) []*Node {
		return []*Node{Reshape(sumRows(v), node.Inputs()[0].Shape().Dimensions...)}
	})
}

// Dense is nn.Dense (x @ w + b, then act, over the last axis of x; w [in, out], b [out]): the
// backend's fused dense op, whose gradient is that of Product, BroadcastRows and relu, computed from
// the fused node's inputs and output.
func Dense(x, w, b *Node, act activation.Type) *Node {
	in, out := w.Shape().Dimensions[0], w.Shape().Dimensions[1]
	lead := x.Shape().Dimensions[:x.Rank()-1]
	n := x.Shape().Size() / in
	decomposed := func() *Node {
		y := Product(Reshape(x, n, in), w)
		y = Add(y, BroadcastRows(b, n))
		if act == activation.TypeRelu {
			y = relu(y)
		} else {
			y = activation.Apply(act, y)
		}
		return Reshape(y, append(append([]int{}, lead...), out)...)
	}
	if act != activation.TypeRelu && act != activation.TypeNone {
		return decomposed()
	}
	cfg := compute.DenseConfig{Activation: act.ToBackend(), WeightLayout: compute.DenseLayoutInputOutputs}
	y, fused := InternalFusedOpCaller(func() *Node { return BackendFusedDense(x, w, b, cfg) }, decomposed, false)
	if !fused {
		return y
	}
	return withGradient(y, NodeTypeFusedDense, func(node, v *Node) []*Node {
		x, w := node.Inputs()[0], node.Inputs()[1]
		v2 := Reshape(v, n, out)
		if act == activation.TypeRelu {
			zero := ScalarZero(v.Graph(), v.DType())
			v2 = Where(GreaterThan(Reshape(node, n, out), zero), v2, zero)
		}
		dx, dw := matmulGrads(Reshape(x, n, in), w, v2)
		return []*Node{Reshape(dx, x.Shape().Dimensions...), dw, sumRows(v2)}
	})
}

// AttentionScores is q·k over the last axis for every (batch, head): q [B, H, Sq, e], k [B, H,
// Sk, e] -> [B, H, Sq, Sk] (einsum bhqe,bhke->bhqk).
func AttentionScores(q, k *Node) *Node {
	if isHalf(q.DType()) {
		return attentionScoresHalf(q, TransposeAllDims(k, 0, 1, 3, 2))
	}
	y := DotGeneral(q, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1})
	return withGradient(y, NodeTypeDotGeneral, func(node, v *Node) []*Node {
		q, k := node.Inputs()[0], node.Inputs()[1]
		dq := DotGeneral(v, []int{3}, []int{0, 1}, k, []int{2}, []int{0, 1}) // Σ_k v[q,k] k[k,e]
		return []*Node{dq, tokenContraction(v, q)}                           // dk = Σ_q v[q,k] q[q,e]
	})
}

// AttentionScoresKT is AttentionScores with the keys given transposed, kT [B, H, e, Sk] (einsum
// bhqe,bhek->bhqk), in any dtype. On the pure-Go backend this layout is the fast one for float32
// too when a head's product is small (Sq·Sk·e under GoMLX compute's 4 Mi small-matmul threshold):
// the small kernel's other layout reduces every output element horizontally, so with 16-wide
// heads a pass of 16 rows of 448 tokens of a 2-layer encoder took 4.7 CPU-s, 0.87 CPU-s with the
// keys transposed first (16 rows of 128 tokens: 0.41 and 0.13 CPU-s).
func AttentionScoresKT(q, kT *Node) *Node { return attentionScoresHalf(q, kT) }

// attentionScoresHalf is AttentionScores with the keys given transposed, kT [B, H, e, Sk]: the
// layout of half-precision products (see dot).
func attentionScoresHalf(q, kT *Node) *Node {
	y := DotGeneral(q, []int{3}, []int{0, 1}, kT, []int{2}, []int{0, 1})
	return withGradient(y, NodeTypeDotGeneral, func(node, v *Node) []*Node {
		q, kT := node.Inputs()[0], node.Inputs()[1]
		dq := dot(v, 3, []int{0, 1}, kT, 3) // Σ_k v[q,k] kT[e,k]
		dkT := dot(q, 2, []int{0, 1}, v, 2) // Σ_q q[q,e] v[q,k]: [B, H, e, Sk]
		return []*Node{dq, dkT}
	})
}

// AttentionValues is the attention-weighted sum of the values: p [B, H, Sq, Sk], v [B, H, Sk, e]
// -> [B, H, Sq, e] (einsum bhqk,bhke->bhqe).
func AttentionValues(p, values *Node) *Node {
	y := DotGeneral(p, []int{3}, []int{0, 1}, values, []int{2}, []int{0, 1})
	return withGradient(y, NodeTypeDotGeneral, func(node, v *Node) []*Node {
		p, values := node.Inputs()[0], node.Inputs()[1]
		dp := dot(v, 3, []int{0, 1}, values, 3)    // Σ_e v[q,e] values[k,e]
		return []*Node{dp, tokenContraction(p, v)} // dv = Σ_q p[q,k] v[q,e]
	})
}

// tokenContraction is Σ_q a[b,h,q,k] c[b,h,q,e] -> [B, H, Sk, e], a contraction over the query
// axis that the kernels take only with it last in the left operand: a transpose of a [Sq, Sk]
// when that is smallest, else of c [Sq, e] and of the product [e, Sk] (long sequences: Sq·Sk >
// (Sq + Sk)·e; the tracker's up to 64 tokens and 32-wide heads never are).
func tokenContraction(a, c *Node) *Node {
	sq, sk, e := a.Shape().Dimensions[2], a.Shape().Dimensions[3], c.Shape().Dimensions[3]
	if sq*sk <= (sq+sk)*e {
		return DotGeneral(Transpose(a, 2, 3), []int{3}, []int{0, 1}, c, []int{2}, []int{0, 1})
	}
	return Transpose(DotGeneral(Transpose(c, 2, 3), []int{3}, []int{0, 1}, a, []int{2}, []int{0, 1}), 2, 3) // (cᵀ a)ᵀ
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

// LayerNorm is nn.LayerNorm over the last axis of x (gain and offset [d]): the backend's fused
// op, with the gradient in closed form
//
//	dx = (g - mean(g) - x̂ · mean(g · x̂)) / σ,   g = dL/dx̂ = dL/dy · gain
//
// where x̂ = (x - mean(x)) / σ is recomputed from x, the means over the last axis are products with
// ones, and the gain and offset gradients are row sums: about ten elementwise passes, where GoMLX's
// decomposition takes more and reduces with the slow generic ReduceSum.
func LayerNorm(x, gain, offset *Node, epsilon float64) *Node {
	d := x.Shape().Dimensions[x.Rank()-1]
	n := x.Shape().Size() / d
	// normalize returns x̂ [n, d] and 1/σ [n, 1] of x2 [n, d].
	normalize := func(x2 *Node) (xhat, rstd *Node) {
		xc := Sub(x2, expandLast(meanLast(x2), d))
		rstd = Rsqrt(AddScalar(meanLast(Mul(xc, xc)), epsilon))
		return Mul(xc, expandLast(rstd, d)), rstd
	}
	decomposed := func() *Node {
		x2 := Reshape(x, n, d)
		_, rstd := normalize(x2)
		xhat := withGradient(Mul(Sub(x2, StopGradient(meanLast(x2))), StopGradient(rstd)), NodeTypeMul, func(node, v *Node) []*Node {
			return []*Node{normGrad(node, node.Inputs()[1], v), nil}
		})
		y := Add(Mul(xhat, BroadcastRows(gain, n)), BroadcastRows(offset, n))
		return Reshape(y, x.Shape().Dimensions...)
	}
	y, fused := InternalFusedOpCaller(func() *Node { return BackendFusedLayerNorm(x, []int{-1}, epsilon, gain, offset) }, decomposed, false)
	if !fused {
		return y
	}
	return withGradient(y, NodeTypeFusedLayerNorm, func(node, v *Node) []*Node {
		x, gain := node.Inputs()[0], node.Inputs()[1]
		v2 := Reshape(v, n, d)
		dx, dgain := layerNormGrad(Reshape(x, n, d), gain, v2, epsilon)
		return []*Node{Reshape(dx, x.Shape().Dimensions...), dgain, sumRows(v2)}
	})
}

// layerNormGrad returns the gradients of LayerNorm with respect to x [n, d] and the gain, given v
// = dL/dy [n, d]. With xc = x - mean(x), r = 1/σ (per row) and g = v · gain,
//
//	dx = r (g - mean(g) - x̂ mean(g x̂)) = v ∘ (r ⊗ gain) + xc ∘ k2 + k1,
//	k1 = -r (v·gain)/d,  k2 = -r³ ((v ∘ xc)·gain)/d   (per row),
//	dgain = Σ_rows v ∘ x̂ = rᵀ (v ∘ xc),
//
// where the row sums and the outer product r ⊗ gain are products (skinny matmuls), leaving seven
// elementwise passes over [n, d] (normGrad's form takes ten).
func layerNormGrad(x, gain, v *Node, epsilon float64) (dx, dgain *Node) {
	n, d := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	xc := Sub(x, expandLast(meanLast(x), d))
	r := Rsqrt(AddScalar(meanLast(Mul(xc, xc)), epsilon)) // [n, 1]
	q := Mul(v, xc)
	gainCol := Reshape(gain, d, 1)
	rowDot := func(a *Node) *Node { return DotGeneral(a, []int{1}, nil, gainCol, []int{0}, nil) } // [n, 1]
	k1 := MulScalar(Mul(r, rowDot(v)), -1/float64(d))
	k2 := MulScalar(Mul(Mul(Mul(r, r), r), rowDot(q)), -1/float64(d))
	outer := DotGeneral(r, []int{1}, nil, Reshape(gain, 1, d), []int{0}, nil) // [n, d]
	dx = Add(Add(Mul(v, outer), Mul(xc, expandLast(k2, d))), expandLast(k1, d))
	dgain = Reshape(DotGeneral(Reshape(r, 1, n), []int{1}, nil, q, []int{0}, nil), d)
	return dx, dgain
}

// sumLast is the sum of v [n, d] over its last axis, [n, 1], as a product with ones.
func sumLast(v *Node) *Node {
	ones := Ones(v.Graph(), shapes.Make(v.DType(), 1, v.Shape().Dimensions[1]))
	return dot(v, 1, nil, ones, 1)
}

// expandLast repeats v [n, 1] along a last axis of d, [n, d], as the product v @ ones[1, d] (exact:
// one product by 1 per element). The elementwise op that takes it then sees operands of the same
// shape, the Go backend's fast path; with an implicit broadcast ([n, d] op [n, 1]) it goes through
// a generic index iterator, several times slower (11% of a summarizer training step).
func expandLast(v *Node, d int) *Node {
	ones := Ones(v.Graph(), shapes.Make(v.DType(), 1, d))
	return DotGeneral(v, []int{1}, nil, ones, []int{0}, nil)
}

// expandRows repeats b [d] on n rows, [n, d], as the product ones[n, 1] @ b[1, d] (see expandLast;
// no gradient of its own is needed where it is used, in gradients).
func expandRows(b *Node, n int) *Node {
	d := b.Shape().Dimensions[0]
	ones := Ones(b.Graph(), shapes.Make(b.DType(), n, 1))
	return DotGeneral(ones, []int{1}, nil, Reshape(b, 1, d), []int{0}, nil)
}

// meanLast is the mean of v [n, d] over its last axis, [n, 1].
func meanLast(v *Node) *Node {
	return MulScalar(sumLast(v), 1/float64(v.Shape().Dimensions[1]))
}

// normGrad is the gradient of a layer normalisation with respect to its input, given x̂ [n, d], 1/σ
// [n, 1] and g = dL/dx̂ [n, d].
func normGrad(xhat, rstd, g *Node) *Node {
	d := g.Shape().Dimensions[1]
	return Mul(Sub(Sub(g, expandLast(meanLast(g), d)), Mul(xhat, expandLast(meanLast(Mul(g, xhat)), d))), expandLast(rstd, d))
}

// SoftmaxLast is Softmax over the last axis: the backend's fused op, with the gradient
// p · (v - Σ_last v·p), the sum as a product with ones (GoMLX recomputes the decomposed softmax,
// exp in float64 included, in the backward pass).
//
// On the pure-Go backend the scores pass through CleanVectorState first: a softmax's exp is scalar
// code, mostly run right after the product that computed its scores.
func SoftmaxLast(x *Node) *Node {
	d := x.Shape().Dimensions[x.Rank()-1]
	n := x.Shape().Size() / d
	x = CleanVectorState(x)
	y, fused := InternalFusedOpCaller(func() *Node { return BackendFusedSoftmax(x, x.Rank()-1) }, func() *Node { return Softmax(x, -1) }, false)
	if !fused {
		return y
	}
	return withGradient(y, NodeTypeFusedSoftmax, func(node, v *Node) []*Node {
		p, v2 := Reshape(node, n, d), Reshape(v, n, d)
		dx := Mul(p, Sub(v2, expandLast(sumLast(Mul(v2, p)), d)))
		return []*Node{Reshape(dx, node.Shape().Dimensions...)}
	})
}

// ProductTransposed is x [n, d] @ wᵀ for w [m, d], [n, m] (both operands contracted on their last
// axis, the layout the backend's kernels take as they are): tied output embeddings. Its
// gradients: dx = v @ w, the layout of Product; dw = vᵀ @ x, which needs the token axis n last in
// one operand: a transpose of v [n, m], or when that is larger, of x [n, d] and of the product
// (xᵀ v) [d, m] (an output softmax has m >> d).
func ProductTransposed(x, w *Node) *Node {
	if isHalf(x.DType()) {
		return Product(x, Transpose(w, 0, 1)) // the layout of half-precision products (see dot)
	}
	y := DotGeneral(x, []int{1}, nil, w, []int{1}, nil)
	return withGradient(y, NodeTypeDotGeneral, func(node, v *Node) []*Node {
		x, w := node.Inputs()[0], node.Inputs()[1]
		n, d, m := x.Shape().Dimensions[0], x.Shape().Dimensions[1], w.Shape().Dimensions[0]
		dx := DotGeneral(v, []int{1}, nil, w, []int{0}, nil) // [n, m] @ [m, d]
		var dw *Node
		if n*m <= n*d+d*m {
			dw = DotGeneral(Transpose(v, 0, 1), []int{1}, nil, x, []int{0}, nil) // vᵀ [m, n] @ x [n, d]
		} else {
			dw = Transpose(DotGeneral(Transpose(x, 0, 1), []int{1}, nil, v, []int{0}, nil), 0, 1) // (xᵀ [d, n] @ v [n, m])ᵀ
		}
		return []*Node{dx, dw}
	})
}

// SumLast is the sum of x over its last axis (the other axes kept), as a product with a vector of
// ones; its gradient broadcasts v back over the summed axis. GoMLX's ReduceSum runs through the
// Go backend's generic iterator, 20-30x slower, forward and in the gradient of a broadcast.
func SumLast(x *Node) *Node {
	dims := x.Shape().Dimensions
	d := dims[len(dims)-1]
	n := x.Shape().Size() / d
	var y *Node
	if isHalf(x.DType()) {
		y = DotGeneral(Reshape(x, n, d), []int{1}, nil, Ones(x.Graph(), shapes.Make(x.DType(), d, 1)), []int{0}, nil) // [n, 1] (see dot)
	} else {
		y = DotGeneral(Reshape(x, n, d), []int{1}, nil, Ones(x.Graph(), shapes.Make(x.DType(), 1, d)), []int{1}, nil) // [n, 1]
	}
	y = withGradient(y, NodeTypeDotGeneral, func(_, v *Node) []*Node {
		return []*Node{BroadcastToDims(v, n, d), nil}
	})
	return Reshape(y, dims[:len(dims)-1]...)
}

// Blocks differentiated as a whole.
//
// withGradient gives one node the gradient with respect to its own inputs. A block of ops (an
// attention layer from its input projection to its output projection) is cheaper to
// differentiate as a whole: its backward pass can reuse the block's intermediate values, get the
// gradient of a fused projection's parts from one product, and lay the values out for the
// kernels without the copies that the op-by-op gradients need. customBlock builds such a block
// with GoMLX's mechanism for fused ops (InternalFusedOpCaller with an alternate output): the
// gradient arriving at the block's output is handed to an alternate node built from the block's
// inputs, which is never executed (nothing uses it, so the backend drops it), and the gradient of
// that node with respect to each input is what grad computes.

// customBlock returns the output of forward(inputs, false), of shape outShape, whose gradient
// with respect to inputs (float nodes of outShape's dtype) is grad(v), given v = dL/d(output): one
// gradient per input, nil for none. grad reads the intermediate values that the last call of
// forward kept. forward(in, false) may use ops that GoMLX cannot differentiate (e.g. Bitcast);
// without fused ops (FusionEnv false) the block is forward(inputs, true), which must then be
// differentiable op by op: the reference the tests compare the block's gradient with.
//
// In a checkpointed block GoMLX differentiates a copy of the alternate node whose inputs are
// recomputed in the backward pass: the block's forward pass is then run again on those inputs
// before grad, so that grad reads recomputed values and the first forward pass's intermediate
// values need not live until the backward pass.
func customBlock(inputs []*Node, outShape shapes.Shape, forward func(in []*Node, plain bool) *Node, grad func(v *Node) []*Node) *Node {
	g := inputs[0].Graph()
	var grads []*Node
	var lead *Node // the alternate node (a copy of it under checkpointing is differentiated instead)
	alternate := func() *Node {
		flat := make([]*Node, 0, len(inputs)+1)
		total := 0
		for _, in := range inputs {
			flat = append(flat, Reshape(in, in.Shape().Size()))
			total += in.Shape().Size()
		}
		// A second operand at least (Concatenate returns a single operand as it is), and enough
		// values for the output's shape.
		flat = append(flat, Zeros(g, shapes.Make(outShape.DType, max(1, outShape.Size()-total))))
		cat := withGradient(Concatenate(flat, 0), NodeTypeConcatenate, func(_, _ *Node) []*Node {
			out := make([]*Node, len(flat))
			for i, in := range inputs {
				if grads[i] != nil {
					out[i] = Reshape(grads[i], in.Shape().Size())
				}
			}
			return out
		})
		lead = IdentityWithCustomGradient(Reshape(Slice(cat, AxisRange(0, outShape.Size())), outShape.Dimensions...), func(node, v *Node) *Node {
			if node != lead {
				forward(blockInputs(node, len(inputs)), false)
			}
			grads = grad(v)
			if len(grads) != len(inputs) {
				panic(fmt.Sprintf("layers: block gradient gave %d values for %d inputs", len(grads), len(inputs)))
			}
			return v // unused: the concatenation's gradient ignores it
		})
		return lead
	}
	y, fused := InternalFusedOpCaller(func() *Node { return forward(inputs, false) }, alternate, true)
	if !fused {
		return forward(inputs, true)
	}
	return y
}

// blockInputs returns the n inputs of a copy of customBlock's alternate node, read back through
// the ops alternate built on them: Identity <- Reshape <- Slice <- Concatenate of Reshape(input_i).
func blockInputs(alt *Node, n int) []*Node {
	cat := alt.Inputs()[0].Inputs()[0].Inputs()[0]
	if cat.Type() != NodeTypeConcatenate || len(cat.Inputs()) != n+1 {
		panic(fmt.Sprintf("layers: block gradient found %s where the alternate's concatenation of %d inputs should be", cat.Type(), n))
	}
	out := make([]*Node, n)
	for i, r := range cat.Inputs()[:n] {
		out[i] = r.Inputs()[0]
	}
	return out
}

// transposeKeepLast is TransposeAllDims(x, perm...) for a permutation that keeps the last axis in
// place: with an even last axis it moves pairs of float32 as one uint64 (Bitcast), which halves
// the elements the Go backend's generic transpose visits one by one. GoMLX cannot differentiate
// the bitcasts: use it in blocks (customBlock), with plain true in their reference forward pass.
func transposeKeepLast(x *Node, plain bool, perm ...int) *Node {
	dims := x.Shape().Dimensions
	last := dims[len(dims)-1]
	if plain || last%2 != 0 || x.DType() != dtypes.Float32 || perm[len(perm)-1] != len(perm)-1 {
		return TransposeAllDims(x, perm...)
	}
	pairs := append(append([]int{}, dims[:len(dims)-1]...), last/2, 2)
	wide := Bitcast(Reshape(x, pairs...), dtypes.Uint64)
	wide = TransposeAllDims(wide, perm...)
	outDims := wide.Shape().Dimensions
	return Reshape(Bitcast(wide, dtypes.Float32), append(append([]int{}, outDims[:len(outDims)-1]...), last)...)
}

// splitHeadsFast turns x [B, S, H·dh] into [B, H, S, dh] (transposeKeepLast).
func splitHeadsFast(x *Node, heads int, plain bool) *Node {
	batch, seq, d := x.Shape().Dimensions[0], x.Shape().Dimensions[1], x.Shape().Dimensions[2]
	return transposeKeepLast(Reshape(x, batch, seq, heads, d/heads), plain, 0, 2, 1, 3)
}

// mergeHeadsFast turns x [B, H, S, dh] into [B·S, H·dh] (transposeKeepLast).
func mergeHeadsFast(x *Node, plain bool) *Node {
	batch, heads, seq, dh := x.Shape().Dimensions[0], x.Shape().Dimensions[1], x.Shape().Dimensions[2], x.Shape().Dimensions[3]
	return Reshape(transposeKeepLast(x, plain, 0, 2, 1, 3), batch*seq, heads*dh)
}

// softmaxGrad is the gradient of p = softmax(s) over the last axis given v = dL/dp:
// p · (v - Σ_last v·p), the sum as a product with ones.
func softmaxGrad(p, v *Node) *Node {
	dims := p.Shape().Dimensions
	d := dims[len(dims)-1]
	n := p.Shape().Size() / d
	p2, v2 := Reshape(p, n, d), Reshape(v, n, d)
	return Reshape(Mul(p2, Sub(v2, expandLast(sumLast(Mul(v2, p2)), d))), dims...)
}

// SelfAttention is multi-head self-attention of x [B, S, d] with the fused projection wqkv
// [d, 3d], bqkv [3d] (queries, keys, values: each d columns, heads of d/heads columns in order),
// softmax(q kᵀ/√dh + keyBias) v with keyBias broadcastable to [B, heads, S, S] (see Attention),
// and the output projection wo [d, d], bo [d]; [B, S, d]. The same function as
// Vars.FusedSelfAttention; its gradient is computed as one block: the three projections' parts
// in one product each for the input and the weights, and the heads split and merged by
// transposes that move float pairs.
//
// With firstOnly, only the first position's output is computed, [B, 1, d] (the queries of the
// other positions are never formed): what an encoder's last layer needs when only the first
// token's final state is used.
func SelfAttention(x, keyBias, wqkv, bqkv, wo, bo *Node, heads int, firstOnly bool) *Node {
	batch, seq, d := x.Shape().Dimensions[0], x.Shape().Dimensions[1], x.Shape().Dimensions[2]
	a := &selfAttention{
		keyBias: keyBias, batch: batch, seq: seq, d: d, heads: heads, dh: d / heads,
		nq: seq, n: batch * seq, firstOnly: firstOnly,
		// The Go backend's kernels for a product contracted on the last axis of both operands
		// (q·kᵀ, dL/do·vᵀ) are 2-4x slower than with the right operand's contracted axis first
		// when there are 17 to 40 keys (measured): there the keys and the values are also
		// transposed to [B, H, dh, S] for those two products.
		keysFirst: !firstOnly && seq >= 17 && seq < 48,
	}
	a.scale = 1 / math.Sqrt(float64(a.dh))
	if firstOnly {
		a.nq = 1
	}
	return customBlock([]*Node{x, wqkv, bqkv, wo, bo}, shapes.Make(x.DType(), batch, a.nq, d), a.forward, a.grad)
}

// selfAttention is one SelfAttention block: its dimensions and choices, and the forward values
// its gradient reuses (set by forward, read by grad: the two halves of customBlock).
type selfAttention struct {
	keyBias              *Node
	batch, seq, d, heads int
	dh                   int     // the head width
	nq                   int     // query positions: seq, or 1 with firstOnly
	n                    int     // batch · seq
	scale                float64 // 1/√dh
	firstOnly, keysFirst bool

	x2, wqkvIn, woIn, q, k, val, p, merged *Node
}

// forward is the block's forward pass over in (x, wqkv, bqkv, wo, bo).
func (a *selfAttention) forward(in []*Node, plain bool) *Node {
	batch, seq, d, heads, dh := a.batch, a.seq, a.d, a.heads, a.dh
	x, wqkv, bqkv, wo, bo := in[0], in[1], in[2], in[3], in[4]
	a.x2, a.wqkvIn, a.woIn = Reshape(x, a.n, d), wqkv, wo
	col := func(w *Node, part int) *Node {
		if w.Rank() == 1 {
			return Slice(w, AxisRange(part*d, (part+1)*d))
		}
		return Slice(w, AxisRange(), AxisRange(part*d, (part+1)*d))
	}
	// The queries' part of the projection is scaled by 1/√dh (a few thousand weights) instead
	// of the scores.
	proj := func(in *Node, part int) *Node {
		w, b := col(wqkv, part), col(bqkv, part)
		if part == 0 {
			w, b = MulScalar(w, a.scale), MulScalar(b, a.scale)
		}
		return Dense(in, w, b, activation.TypeNone)
	}
	split := func(y *Node) *Node { return splitHeadsFast(Reshape(y, batch, seq, d), heads, plain) } // [B, H, S, dh]
	if a.firstOnly {
		first := Reshape(Slice(Reshape(x, batch, seq, d), AxisRange(), AxisElem(0)), batch, d)
		a.q = Reshape(proj(first, 0), batch, heads, 1, dh) // one position: a reshape
	} else {
		a.q = split(proj(a.x2, 0))
	}
	yk := proj(a.x2, 1)
	a.k = split(yk)
	a.val = split(proj(a.x2, 2))
	var scores *Node
	if a.keysFirst {
		kT := TransposeAllDims(Reshape(yk, batch, seq, heads, dh), 0, 2, 3, 1) // [B, H, dh, S]
		scores = DotGeneral(a.q, []int{3}, []int{0, 1}, kT, []int{2}, []int{0, 1})
	} else {
		scores = AttentionScores(a.q, a.k)
	}
	if a.keyBias != nil {
		scores = Add(scores, expandBias(a.keyBias, scores.Shape().Dimensions))
	}
	a.p = SoftmaxLast(scores)
	o := AttentionValues(a.p, a.val) // [B, H, nq, dh]
	if a.firstOnly {
		a.merged = Reshape(o, batch, d)
	} else {
		a.merged = mergeHeadsFast(o, plain)
	}
	return Reshape(Dense(a.merged, wo, bo, activation.TypeNone), batch, a.nq, d)
}

// grad is the block's gradient given v = dL/d(output): those of x, wqkv, bqkv, wo and bo.
func (a *selfAttention) grad(v *Node) []*Node {
	batch, seq, d, heads, dh, n := a.batch, a.seq, a.d, a.heads, a.dh, a.n
	rows := batch * a.nq
	v2 := Reshape(v, rows, d)
	dmerged, dwo := matmulGrads(a.merged, a.woIn, v2)
	dbo := sumRows(v2)
	var do *Node
	if a.firstOnly {
		do = Reshape(dmerged, batch, heads, 1, dh)
	} else {
		do = splitHeadsFast(Reshape(dmerged, batch, seq, d), heads, false)
	}
	var dp *Node // [B, H, nq, S]
	if a.keysFirst {
		dp = DotGeneral(do, []int{3}, []int{0, 1}, Transpose(a.val, 2, 3), []int{2}, []int{0, 1})
	} else {
		dp = DotGeneral(do, []int{3}, []int{0, 1}, a.val, []int{3}, []int{0, 1})
	}
	dval := tokenContraction(a.p, do) // [B, H, S, dh]
	ds := softmaxGrad(a.p, dp)
	dk := tokenContraction(ds, a.q)
	// The gradient with respect to the scaled queries, times the scale: the gradient of the
	// unscaled projection's output.
	dq := MulScalar(DotGeneral(ds, []int{3}, []int{0, 1}, a.k, []int{2}, []int{0, 1}), a.scale) // [B, H, nq, dh]
	dkm, dvm := mergeHeadsFast(dk, false), mergeHeadsFast(dval, false)                          // [n, d]
	var dqm *Node
	if a.firstOnly {
		// The query gradient lives on the first position only: zeros elsewhere, so that one
		// product gives the gradients of all three parts.
		dq0 := Reshape(dq, batch, 1, d)
		if seq == 1 {
			dqm = Reshape(dq0, n, d)
		} else {
			dqm = Reshape(Concatenate([]*Node{dq0, Zeros(v.Graph(), shapes.Make(v.DType(), batch, seq-1, d))}, 1), n, d)
		}
	} else {
		dqm = mergeHeadsFast(dq, false)
	}
	dqkv := Concatenate([]*Node{dqm, dkm, dvm}, 1) // [n, 3d]
	dx, dwqkv := matmulGrads(a.x2, a.wqkvIn, dqkv)
	return []*Node{Reshape(dx, batch, seq, d), dwqkv, sumRows(dqkv), dwo, dbo}
}
