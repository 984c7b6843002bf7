package layers

import (
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/ml/layers/activation"
)

// Blocks of a Llama-style decoder (hf/decoder) differentiated by hand for the Go backend.
//
// GoMLX's own gradients of these blocks go through the backend's slow paths: ReduceMean and
// ReduceSum (RMSNorm's statistics, the sum over a key/value head's group of query heads), elementwise
// ops on broadcast operands (the norm's per-row scale, RoPE's cos and sin over the heads, the mask
// over the heads), slices, pads and concatenations (rotate-half), and attention products contracted
// on the last axis of both operands (the Go backend's dot-product kernel, several times slower than
// its matmul kernel on the same work). The blocks below compute the same values with same-shape
// elementwise ops, products with ones or with a permutation, and products laid out for the matmul
// kernels, and take their gradients from the block's inputs and intermediate values (customBlock,
// which also survives gradient checkpointing). They are float32 blocks: the decoder's bfloat16
// graphs and XLA backends keep the plain graph (DecoderFastPath).

// DecoderFastPath reports whether g's decoder graphs should use the blocks of this file: float32
// values (dt) on the pure-Go backend. XLA fuses the plain graph itself, and its compiler, not these
// layouts, decides its speed; the bfloat16 products of the Go backend need their own layouts (see
// dot), which the blocks do not take.
func DecoderFastPath(g *Graph, dt dtypes.DType) bool {
	return dt == dtypes.Float32 && strings.HasPrefix(strings.ToLower(g.Backend().Name()), "go")
}

// RMSNorm is x [n, d] / sqrt(mean(x²) + eps) · w over the last axis (plusOne: · (1 + w), Gemma's
// norms), w [d], float32. Its gradient, with r = 1/sqrt(mean(x²) + eps), x̂ = x r and g = v · w':
//
//	dx = r (g - x̂ mean(g x̂)),   dw = Σ_rows v x̂
//
// the row means as products with ones, the per-row values repeated by products (expandLast): no
// reduction or broadcast goes through the backend's generic iterators. A frozen w's gradient is
// built but unused, so the backend never runs it.
func RMSNorm(x, w *Node, eps float64, plusOne bool) *Node {
	n, d := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	var xhat, r, wFull *Node
	forward := func(in []*Node, plain bool) *Node {
		x, w := in[0], in[1]
		if plusOne {
			w = AddScalar(w, 1)
		}
		if plain {
			ms := ReduceAndKeep(Square(x), ReduceMean, -1)
			return Mul(Div(x, Sqrt(AddScalar(ms, eps))), ExpandAxes(w, 0))
		}
		r = Inverse(Sqrt(AddScalar(meanLast(Mul(x, x)), eps))) // [n, 1]
		xhat, wFull = Mul(x, expandLast(r, d)), w
		return Mul(xhat, expandRows(w, n))
	}
	grad := func(v *Node) []*Node {
		// The weight's rows are repeated again rather than kept from the forward pass: a product,
		// cheaper than holding an [n, d] value per norm until the backward pass.
		g := Mul(v, expandRows(wFull, n))
		k := Mul(r, meanLast(Mul(g, xhat))) // [n, 1]
		dx := Sub(Mul(g, expandLast(r, d)), Mul(xhat, expandLast(k, d)))
		return []*Node{dx, sumRows(Mul(v, xhat))}
	}
	return customBlock([]*Node{x, w}, x.Shape(), forward, grad)
}

// RoPETables returns cos and sin [n, heads·D] for the rotary tables cos, sin [n, D] of n rows
// (tokens), repeated for each of heads heads, the layout of RoPE's input: the elementwise products
// then run on operands of one shape. Built once per graph and shared by the layers.
func RoPETables(cos, sin *Node, heads int) (cosH, sinH *Node) {
	n, d := cos.Shape().Dimensions[0], cos.Shape().Dimensions[1]
	rep := func(t *Node) *Node {
		return Reshape(BroadcastToDims(Reshape(t, n, 1, d), n, heads, d), n, heads*d)
	}
	return rep(cos), rep(sin)
}

// RoPE rotates x [n, heads·D] by the rotary tables cosH, sinH [n, heads·D] (RoPETables): x cos +
// rotate_half(x) sin, rotate_half(x) = [-x2, x1] per head (transformers' rotate-half convention).
// rotate_half is a product with a signed permutation matrix [D, D] (exact: one ±1 per column), so
// the gradient, v cos + rotate_half⁻¹(v sin), is that of Product: the inverse rotation, a product
// with the transposed matrix. No slice, negation, pad or concatenation runs forward or backward.
func RoPE(x, cosH, sinH *Node, heads int) *Node {
	n, hd := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	d := hd / heads
	perm := make([]float32, d*d) // rot[j] = Σ_i x[i] perm[i, j]
	for j := range d / 2 {
		perm[(j+d/2)*d+j] = -1 // rot[j] = -x[j + D/2]
		perm[j*d+j+d/2] = 1    // rot[j + D/2] = x[j]
	}
	rmat := Const(x.Graph(), perm)
	rmat = Reshape(rmat, d, d)
	if x.DType() != dtypes.Float32 {
		rmat = ConvertDType(rmat, x.DType())
	}
	rot := Reshape(Product(Reshape(x, n*heads, d), rmat), n, hd)
	return Add(Mul(x, cosH), Mul(rot, sinH))
}

// GroupedAttention is grouped-query attention: q [B, H, T, D], keys and values [B, KV, S, D]
// (H = KV·rep; query head i reads key/value head i/rep), bias [B, H, T, S] added to the scaled
// (and, with softcap > 0, soft-capped: softcap·tanh(s/softcap), Gemma 2) scores, softmax over the
// keys; [B, H, T, D]. Each key/value head's group of query heads is one batch entry of the
// products (q as [B, KV, rep·T, D]): the repeated keys and values are never materialized, and
// their gradients sum over the group inside the products. The products take the matmul kernels'
// layout (the right operand contracted on its first free axis: keys and values transposed,
// [B, KV, D, S], a few thousand values per head), where q·kᵀ as two last-axis contractions runs
// in the Go backend's slower dot-product kernel.
func GroupedAttention(q, k, v, bias *Node, scale, softcap float64) *Node {
	dims := q.Shape().Dimensions
	b, h, t, d := dims[0], dims[1], dims[2], dims[3]
	kvh, s := k.Shape().Dimensions[1], k.Shape().Dimensions[2]
	if h%kvh != 0 {
		panic(fmt.Sprintf("layers: %d query heads for %d key/value heads", h, kvh))
	}
	rep := h / kvh
	var qg, kIn, vIn, capped, p *Node
	forward := func(in []*Node, plain bool) *Node {
		q, k, v, bias := in[0], in[1], in[2], in[3]
		if plain {
			kr, vr := repeatHeads(k, rep), repeatHeads(v, rep)
			scores := MulScalar(Einsum("bhqd,bhkd->bhqk", q, kr), scale)
			if softcap > 0 {
				scores = MulScalar(Tanh(MulScalar(scores, 1/softcap)), softcap)
			}
			return Einsum("bhqk,bhkd->bhqd", Softmax(Add(scores, bias), -1), vr)
		}
		qg, kIn, vIn = Reshape(q, b, kvh, rep*t, d), k, v
		kT := Transpose(k, 2, 3) // [B, KV, D, S]
		scores := MulScalar(DotGeneral(qg, []int{3}, []int{0, 1}, kT, []int{2}, []int{0, 1}), scale)
		if softcap > 0 {
			scores = MulScalar(Tanh(MulScalar(scores, 1/softcap)), softcap)
			capped = scores
		}
		p = SoftmaxLast(Add(scores, Reshape(bias, b, kvh, rep*t, s))) // [B, KV, rep·T, S]
		o := DotGeneral(p, []int{3}, []int{0, 1}, v, []int{2}, []int{0, 1})
		return Reshape(o, b, h, t, d)
	}
	grad := func(vo *Node) []*Node {
		dog := Reshape(vo, b, kvh, rep*t, d)
		dp := DotGeneral(dog, []int{3}, []int{0, 1}, Transpose(vIn, 2, 3), []int{2}, []int{0, 1}) // [B, KV, rep·T, S]
		dv := tokenContraction(p, dog)                                                            // Σ over the group's queries: [B, KV, S, D]
		ds := softmaxGrad(p, dp)
		if softcap > 0 {
			// d(c·tanh(z/c))/dz = 1 - tanh² = 1 - (capped/c)².
			u := MulScalar(capped, 1/softcap)
			ds = Mul(ds, OneMinus(Mul(u, u)))
		}
		ds = MulScalar(ds, scale)
		dq := DotGeneral(ds, []int{3}, []int{0, 1}, kIn, []int{2}, []int{0, 1}) // [B, KV, rep·T, D]
		dk := tokenContraction(ds, qg)
		return []*Node{Reshape(dq, b, h, t, d), dk, dv, nil}
	}
	return customBlock([]*Node{q, k, v, bias}, q.Shape(), forward, grad)
}

// repeatHeads repeats each key/value head of x [B, KV, S, D] for its group of rep query heads,
// [B, KV·rep, S, D] (transformers' repeat_kv): GroupedAttention's reference forward pass.
func repeatHeads(x *Node, rep int) *Node {
	if rep == 1 {
		return x
	}
	dims := x.Shape().Dimensions
	b, kv, s, d := dims[0], dims[1], dims[2], dims[3]
	return Reshape(BroadcastToDims(ExpandAxes(x, 2), b, kv, rep, s, d), b, kv*rep, s, d)
}

// GatedActivation is act(gate) · up for gate, up of one shape (SwiGLU: act "silu"; GeGLU: "gelu"
// (erf) or "gelu_tanh"), float32, with the gradients in closed form, dgate = v · up · act'(gate),
// dup = v · act(gate): same-shape elementwise passes, where GoMLX differentiates the decomposed
// activation op by op (and the fused GELU by its decomposition).
func GatedActivation(gate, up *Node, act string) *Node {
	switch act {
	case "silu", "gelu", "gelu_tanh":
	default:
		panic(fmt.Sprintf("layers: no gated activation %q", act))
	}
	var gIn, uIn, a, sg *Node
	forward := func(in []*Node, plain bool) *Node {
		gIn, uIn = in[0], in[1]
		switch act {
		case "gelu_tanh":
			a = activation.GeluApproximate(gIn)
		case "gelu":
			if plain {
				a = activation.Gelu(gIn)
			} else {
				a = Mul(gIn, MulScalar(AddScalar(Erf(MulScalar(gIn, 1/math.Sqrt2)), 1), 0.5))
			}
		default:
			// The sigmoid is kept for the gradient (one [n, I] value per layer, in place of
			// act(gate): a second pass of exponentials costs more than the activation itself).
			sg = Sigmoid(gIn)
			a = Mul(gIn, sg)
		}
		return Mul(a, uIn)
	}
	grad := func(v *Node) []*Node {
		x := gIn
		var da *Node // act'(x)
		switch act {
		case "gelu_tanh":
			// a = x/2 (1 + th), th = tanh(c (x + 0.044715 x³)):
			// a' = (1 + th)/2 + x/2 (1 - th²) c (1 + 3·0.044715 x²).
			c := math.Sqrt(2 / math.Pi)
			x2 := Mul(x, x)
			th := Tanh(MulScalar(Mul(x, AddScalar(MulScalar(x2, 0.044715), 1)), c))
			inner := MulScalar(AddScalar(MulScalar(x2, 3*0.044715), 1), c)
			da = Add(MulScalar(OnePlus(th), 0.5), Mul(MulScalar(x, 0.5), Mul(OneMinus(Mul(th, th)), inner)))
		case "gelu":
			// a' = Φ(x) + x φ(x).
			cdf := MulScalar(AddScalar(Erf(MulScalar(x, 1/math.Sqrt2)), 1), 0.5)
			pdf := MulScalar(Exp(MulScalar(Mul(x, x), -0.5)), 1/math.Sqrt(2*math.Pi))
			da = Add(cdf, Mul(x, pdf))
		default:
			// silu' = σ (1 + x (1 - σ)); dup = v x σ (act(gate) itself is not kept).
			da = Mul(sg, OnePlus(Mul(x, OneMinus(sg))))
			return []*Node{Mul(Mul(v, uIn), da), Mul(v, Mul(x, sg))}
		}
		return []*Node{Mul(Mul(v, uIn), da), Mul(v, a)}
	}
	return customBlock([]*Node{gate, up}, gate.Shape(), forward, grad)
}

// CrossEntropyRows is the negative log-likelihood of each row of logits x [n, V] (float32) at its
// label, labels [n] (int32, each in [0, V): the caller masks ignored rows by their weight):
// logsumexp(x_i) - x_i[label_i], [n]. Its gradient, v_i (softmax(x_i) - onehot(label_i)), reads
// the exponentials kept from the forward pass (the one [n, V] value a cross-entropy keeps, as
// PyTorch's log-softmax output) and the per-row sums: three elementwise passes and a scatter of
// the labels' terms, where GoMLX's LogSoftmax and its gradient make about ten passes over [n, V]
// with broadcasts and reductions through the backend's generic iterators.
func CrossEntropyRows(x, labels *Node) *Node {
	n, v := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	g := x.Graph()
	idx := Concatenate([]*Node{Iota(g, shapes.Make(dtypes.Int32, n, 1), 0), Reshape(ConvertDType(labels, dtypes.Int32), n, 1)}, 1) // [n, 2]
	var e, s *Node
	forward := func(in []*Node, plain bool) *Node {
		x := in[0]
		if plain {
			return Neg(Gather(LogSoftmax(x, -1), idx, true))
		}
		picked := Gather(x, idx, true)                     // [n]
		m := StopGradient(ReduceAndKeep(x, ReduceMax, -1)) // [n, 1]
		e = Exp(Sub(x, expandLast(m, v)))
		s = sumLast(e) // [n, 1]
		return Sub(Add(Reshape(m, n), Log(Reshape(s, n))), picked)
	}
	grad := func(vv *Node) []*Node {
		scale := Div(Reshape(vv, n, 1), s) // [n, 1]
		dx := Mul(e, expandLast(scale, v))
		return []*Node{ScatterSum(dx, idx, Neg(vv), true, true)}
	}
	return customBlock([]*Node{x}, shapes.Make(x.DType(), n), forward, grad)
}
