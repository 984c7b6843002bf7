package layers

import (
	"math"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
)

// Vars says how a model names and initialises the variables of its layers. Checkpoints find
// variables by path, so each model keeps the names it was first trained with (the tracker:
// Scoped; the summarizer: Suffixed). Dense biases and layer-norm offsets start at 0, layer-norm
// gains at 1.
type Vars struct {
	// DenseNames returns the scope and the names of the weights [in, out] and biases [out] of the
	// dense layer called name under scope.
	DenseNames func(scope *model.Scope, name string) (layer *model.Scope, weights, biases string)
	// Gain and Offset name a layer norm's variables, in the layer norm's own scope.
	Gain, Offset string
	// NormEpsilon is added to the variance in layer norms.
	NormEpsilon float64
	// WeightInit returns the initializer of dense weights for a store; nil keeps the scope's.
	WeightInit func(store *model.Store) model.VariableInitializer
	// KeysTransposed makes MultiHeadAttention transpose the keys before the scores
	// (AttentionScoresKT): on the Go backend the fast layout of the small products, for forward
	// passes. A trained model keeps the layout it was trained with (the same values up to
	// float32 rounding, but not the same bits).
	KeysTransposed bool
}

// Scoped gives each dense layer its own scope, named after the layer, holding "weights" and
// "biases"; layer norms hold "gain" and "offset". Weights start as N(0, stddev²).
func Scoped(stddev float64) Vars {
	return Vars{
		DenseNames: func(scope *model.Scope, name string) (*model.Scope, string, string) {
			return scope.In("%s", name), "weights", "biases"
		},
		Gain: "gain", Offset: "offset", NormEpsilon: 1e-5,
		WeightInit: func(store *model.Store) model.VariableInitializer { return NormalInit(store, stddev) },
	}
}

// Suffixed keeps a dense layer's variables in the enclosing scope as name_w and name_b; layer
// norms hold "gain" and "bias". Weights start with the scope's initializer (GoMLX's default: He).
func Suffixed() Vars {
	return Vars{
		DenseNames: func(scope *model.Scope, name string) (*model.Scope, string, string) {
			return scope, name + "_w", name + "_b"
		},
		Gain: "gain", Offset: "bias", NormEpsilon: 1e-5,
	}
}

// NormalInit initialises a variable with N(0, stddev²) draws from the store's random stream.
func NormalInit(store *model.Store, stddev float64) model.VariableInitializer {
	return func(g *Graph, shape shapes.Shape) *Node {
		return MulScalar(store.RandomNormal(g, shape), stddev)
	}
}

// variable returns the value of the float32 variable name of scope in x's graph, created with init
// (nil: the scope's initializer) when missing.
func variable(scope *model.Scope, g *Graph, name string, init model.VariableInitializer, dims ...int) *Node {
	if init != nil {
		scope = scope.WithInitializer(init)
	}
	return scope.VariableWithShape(name, shapes.Make(dtypes.Float32, dims...)).NodeValue(g)
}

// DenseWeights returns the weights [in, out] and biases [out] of the dense layer name under
// scope, created (weights first) when missing.
func (v Vars) DenseWeights(scope *model.Scope, g *Graph, name string, in, out int) (w, b *Node) {
	layer, wName, bName := v.DenseNames(scope, name)
	var init model.VariableInitializer
	if v.WeightInit != nil {
		init = v.WeightInit(scope.Store())
	}
	w = variable(layer, g, wName, init, in, out)
	b = variable(layer, g, bName, Zeros, out)
	return w, b
}

// Dense is the dense layer name under scope: x @ W + b over the last axis of x, then act (Dense,
// with the Go-backend gradient).
func (v Vars) Dense(scope *model.Scope, name string, x *Node, out int, act activation.Type) *Node {
	w, b := v.DenseWeights(scope, x.Graph(), name, x.Shape().Dimensions[x.Rank()-1], out)
	return Dense(x, w, b, act)
}

// LayerNorm normalises the last axis of x with the gain and offset of scope (LayerNorm).
func (v Vars) LayerNorm(scope *model.Scope, x *Node) *Node {
	g := x.Graph()
	d := x.Shape().Dimensions[x.Rank()-1]
	gain := variable(scope, g, v.Gain, Ones, d)
	offset := variable(scope, g, v.Offset, Zeros, d)
	return LayerNorm(x, gain, offset, v.NormEpsilon)
}

// FeedForward is the position-wise feed-forward block ReLU(x W1 + b1) W2 + b2, its two dense
// layers called hiddenName and outName under scope.
func (v Vars) FeedForward(scope *model.Scope, x *Node, hidden int, hiddenName, outName string) *Node {
	d := x.Shape().Dimensions[x.Rank()-1]
	h := v.Dense(scope, hiddenName, x, hidden, activation.TypeRelu)
	return v.Dense(scope, outName, h, d, activation.TypeNone)
}

// MultiHeadAttention is attention of the queries xq [B, T, d] over xkv [B, S, d] with heads
// heads: dense projections "q", "k", "v" under scope, Attention with the additive bias (nil or
// broadcastable to [B, heads, T, S]), the heads merged and the output projection "o"; [B, T, d].
func (v Vars) MultiHeadAttention(scope *model.Scope, xq, xkv, bias *Node, heads int) *Node {
	d := xq.Shape().Dimensions[2]
	q := SplitHeads(v.Dense(scope, "q", xq, d, activation.TypeNone), heads)
	k := SplitHeads(v.Dense(scope, "k", xkv, d, activation.TypeNone), heads)
	val := SplitHeads(v.Dense(scope, "v", xkv, d, activation.TypeNone), heads)
	var att *Node
	if v.KeysTransposed {
		att = AttentionKT(q, TransposeAllDims(k, 0, 1, 3, 2), val, bias)
	} else {
		att = Attention(q, k, val, bias)
	}
	return v.Dense(scope, "o", MergeHeads(att), d, activation.TypeNone)
}

// FusedSelfAttention is self-attention of x [B, S, d] with one dense projection qkvName for the
// queries, keys and values (out 3d) and the output projection outName, under scope; keyBias is
// broadcastable to [B, heads, S, S]. The projection is transposed once to [3, B, H, S, dh]: the
// attention products then batch over (B, H) with the contracted axis last, the layout the Go
// backend's batched matmul kernels take without further transposes.
func (v Vars) FusedSelfAttention(scope *model.Scope, x, keyBias *Node, heads int, qkvName, outName string) *Node {
	batch, seq, d := x.Shape().Dimensions[0], x.Shape().Dimensions[1], x.Shape().Dimensions[2]
	qkv := v.Dense(scope, qkvName, x, 3*d, activation.TypeNone)
	qkv = TransposeAllDims(Reshape(qkv, batch, seq, 3, heads, d/heads), 2, 0, 3, 1, 4)
	q := Squeeze(Slice(qkv, AxisElem(0)), 0)
	k := Squeeze(Slice(qkv, AxisElem(1)), 0)
	val := Squeeze(Slice(qkv, AxisElem(2)), 0)
	return v.Dense(scope, outName, MergeHeads(Attention(q, k, val, keyBias)), d, activation.TypeNone)
}

// SplitHeads turns x [B, S, H·dh] into [B, H, S, dh].
func SplitHeads(x *Node, heads int) *Node {
	batch, seq, d := x.Shape().Dimensions[0], x.Shape().Dimensions[1], x.Shape().Dimensions[2]
	return TransposeAllDims(Reshape(x, batch, seq, heads, d/heads), 0, 2, 1, 3)
}

// MergeHeads turns x [B, H, S, dh] into [B, S, H·dh].
func MergeHeads(x *Node) *Node {
	batch, heads, seq, dh := x.Shape().Dimensions[0], x.Shape().Dimensions[1], x.Shape().Dimensions[2], x.Shape().Dimensions[3]
	return Reshape(TransposeAllDims(x, 0, 2, 1, 3), batch, seq, heads*dh)
}

// AttentionKT is Attention with the keys given transposed, kT [B, H, dh, S]
// (AttentionScoresKT).
func AttentionKT(q, kT, values, bias *Node) *Node {
	scores := MulScalar(AttentionScoresKT(q, kT), 1/math.Sqrt(float64(q.Shape().Dimensions[3])))
	if bias != nil {
		scores = Add(scores, expandBias(bias, scores.Shape().Dimensions))
	}
	return AttentionValues(SoftmaxLast(scores), values)
}

// Attention is softmax(q kᵀ / √dh + bias) v for every (batch, head): q [B, H, T, dh], k and
// values [B, H, S, dh], bias nil or broadcastable to [B, H, T, S] (0 where a key may be seen,
// a large negative number where not); [B, H, T, dh].
func Attention(q, k, values, bias *Node) *Node {
	scores := MulScalar(AttentionScores(q, k), 1/math.Sqrt(float64(q.Shape().Dimensions[3])))
	if bias != nil {
		scores = Add(scores, expandBias(bias, scores.Shape().Dimensions))
	}
	return AttentionValues(SoftmaxLast(scores), values)
}

// expandBias repeats an attention bias [B, 1, 1, S] (keys) or [1, 1, T, S] (causal) to the scores'
// shape dims = [B, H, T, S] as a product with ones (exact: one product by 1 per element), so that
// the addition to the scores runs on the Go backend's same-shape path instead of its generic
// broadcasting iterator (see expandLast). Other shapes are returned as they are (the addition
// broadcasts them).
func expandBias(bias *Node, dims []int) *Node {
	b, h, t, s := dims[0], dims[1], dims[2], dims[3]
	bd := bias.Shape().Dimensions
	g := bias.Graph()
	switch {
	case slices.Equal(bd, dims):
		return bias
	case slices.Equal(bd, []int{b, 1, 1, s}):
		ones := Ones(g, shapes.Make(bias.DType(), b, h*t, 1))
		return Reshape(DotGeneral(ones, []int{2}, []int{0}, Reshape(bias, b, 1, s), []int{1}, []int{0}), dims...)
	case slices.Equal(bd, []int{1, 1, t, s}):
		ones := Ones(g, shapes.Make(bias.DType(), b*h, 1))
		return Reshape(DotGeneral(ones, []int{1}, nil, Reshape(bias, 1, t*s), []int{0}, nil), dims...)
	}
	return bias
}

// As returns x converted to dt (x itself when it has that dtype).
func As(x *Node, dt dtypes.DType) *Node {
	if x.DType() == dt {
		return x
	}
	return ConvertDType(x, dt)
}

// ConvertFrozen returns the frozen weight w converted to dt. With anchor (a node of a
// checkpointed layer, under gradient checkpointing), the conversion is made to depend on it, so
// that GoMLX recomputes the converted copy in the backward pass instead of keeping it from the
// forward pass (a float32 copy of every bf16 weight of the model, otherwise).
func ConvertFrozen(w *Node, dt dtypes.DType, anchor *Node) *Node {
	if w.DType() == dt {
		return w
	}
	if anchor != nil {
		w = SchedulingBarrier(w, anchor)
	}
	return ConvertDType(w, dt)
}
