package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/tracksum/tracksum/model"
)

// keyBiasConst is an attention key bias [batch, 1, 1, seq] that hides the last key of the second
// example.
func keyBiasConst(g *Graph, batch, seq int) *Node {
	b := make([]float32, batch*seq)
	b[len(b)-1] = -1e9
	return Const(g, tensors.FromFlatDataAndDimensions(b, batch, 1, 1, seq))
}

func randomTensor(rng *rand.Rand, dims ...int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return tensors.FromFlatDataAndDimensions(v, dims...)
}

// TestFastGradients checks that the values and gradients of the ops of fastgrad.go equal those of
// the GoMLX ops they replace (up to float rounding), on random inputs, and that each op in a
// gradient-checkpointed block gets the same custom gradients as without checkpoints. (Moved here
// with the ops from model/tracker, where it began.)
func TestFastGradients(t *testing.T) {
	backend, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	// Each case builds the op twice, with the fast gradient and the GoMLX reference, from the same
	// inputs; the loss is <op(inputs), r> with a fixed random r (the last input).
	tests := []struct {
		desc   string
		dims   [][]int
		fast   func(in []*Node) *Node
		gomlxF func(in []*Node) *Node
		// relMax: the tolerance is relative to the largest value of the output (blocks of many
		// products, whose gradients sum terms of mixed signs), not to each value.
		relMax bool
	}{
		{
			desc: "dense 3-D input, in < out, ReLU",
			dims: [][]int{{3, 5, 8}, {8, 12}, {12}, {3, 5, 12}},
			fast: func(in []*Node) *Node { return Dense(in[0], in[1], in[2], activation.TypeRelu) },
			gomlxF: func(in []*Node) *Node {
				return nn.Dense(in[0], in[1], in[2], compute.DenseLayoutInputOutputs, activation.TypeRelu)
			},
		},
		{
			desc: "dense 2-D input, in > out, no activation",
			dims: [][]int{{7, 12}, {12, 4}, {4}, {7, 4}},
			fast: func(in []*Node) *Node { return Dense(in[0], in[1], in[2], activation.TypeNone) },
			gomlxF: func(in []*Node) *Node {
				return nn.Dense(in[0], in[1], in[2], compute.DenseLayoutInputOutputs, activation.TypeNone)
			},
		},
		{
			desc: "layer norm 3-D input",
			dims: [][]int{{3, 5, 16}, {16}, {16}, {3, 5, 16}},
			fast: func(in []*Node) *Node { return LayerNorm(in[0], in[1], in[2], 1e-5) },
			gomlxF: func(in []*Node) *Node {
				return nn.LayerNorm(in[0], []int{-1}, 1e-5, in[1], in[2], nil)
			},
		},
		{
			desc:   "softmax over the last axis",
			dims:   [][]int{{2, 3, 5, 7}, {2, 3, 5, 7}},
			fast:   func(in []*Node) *Node { return SoftmaxLast(in[0]) },
			gomlxF: func(in []*Node) *Node { return Softmax(in[0], -1) },
		},
		{
			desc:   "product",
			dims:   [][]int{{7, 5}, {5, 3}, {7, 3}},
			fast:   func(in []*Node) *Node { return Product(in[0], in[1]) },
			gomlxF: func(in []*Node) *Node { return Einsum("nd,dm->nm", in[0], in[1]) },
		},
		{
			desc:   "product with the transposed weights, n·m small (transpose of v)",
			dims:   [][]int{{3, 8}, {4, 8}, {3, 4}},
			fast:   func(in []*Node) *Node { return ProductTransposed(in[0], in[1]) },
			gomlxF: func(in []*Node) *Node { return Einsum("nd,md->nm", in[0], in[1]) },
		},
		{
			desc:   "product with the transposed weights, output softmax shape (transposes of x and xᵀv)",
			dims:   [][]int{{12, 4}, {30, 4}, {12, 30}},
			fast:   func(in []*Node) *Node { return ProductTransposed(in[0], in[1]) },
			gomlxF: func(in []*Node) *Node { return Einsum("nd,md->nm", in[0], in[1]) },
		},
		{
			desc:   "sum over the last axis",
			dims:   [][]int{{2, 3, 5}, {2, 3}},
			fast:   func(in []*Node) *Node { return SumLast(in[0]) },
			gomlxF: func(in []*Node) *Node { return ReduceSum(in[0], -1) },
		},
		{
			desc:   "broadcast of a vector over rows",
			dims:   [][]int{{6}, {4, 6}},
			fast:   func(in []*Node) *Node { return BroadcastRows(in[0], 4) },
			gomlxF: func(in []*Node) *Node { return BroadcastToDims(Reshape(in[0], 1, 6), 4, 6) },
		},
		{
			desc: "attention with a key bias",
			dims: [][]int{{2, 3, 5, 4}, {2, 3, 6, 4}, {2, 3, 6, 4}, {2, 1, 1, 6}, {2, 3, 5, 4}},
			fast: func(in []*Node) *Node { return Attention(in[0], in[1], in[2], in[3]) },
			gomlxF: func(in []*Node) *Node {
				scores := Add(MulScalar(Einsum("bhqd,bhkd->bhqk", in[0], in[1]), 0.5), in[3])
				return Einsum("bhqk,bhkd->bhqd", Softmax(scores, -1), in[2])
			},
		},
		{
			desc:   "attention scores, long sequences (transposes of q and of dkᵀ)",
			dims:   [][]int{{2, 2, 9, 3}, {2, 2, 11, 3}, {2, 2, 9, 11}},
			fast:   func(in []*Node) *Node { return AttentionScores(in[0], in[1]) },
			gomlxF: func(in []*Node) *Node { return Einsum("bhqd,bhkd->bhqk", in[0], in[1]) },
		},
		{
			desc:   "attention values, long sequences (transposes of v and of dvᵀ)",
			dims:   [][]int{{2, 2, 9, 11}, {2, 2, 11, 3}, {2, 2, 9, 3}},
			fast:   func(in []*Node) *Node { return AttentionValues(in[0], in[1]) },
			gomlxF: func(in []*Node) *Node { return Einsum("bhqk,bhkd->bhqd", in[0], in[1]) },
		},
		{
			desc: "attention with a causal bias",
			dims: [][]int{{2, 3, 5, 4}, {2, 3, 5, 4}, {2, 3, 5, 4}, {1, 1, 5, 5}, {2, 3, 5, 4}},
			fast: func(in []*Node) *Node { return Attention(in[0], in[1], in[2], in[3]) },
			gomlxF: func(in []*Node) *Node {
				scores := Add(MulScalar(Einsum("bhqd,bhkd->bhqk", in[0], in[1]), 0.5), in[3])
				return Einsum("bhqk,bhkd->bhqd", Softmax(scores, -1), in[2])
			},
		},
		{
			desc:   "attention scores",
			dims:   [][]int{{2, 3, 5, 4}, {2, 3, 6, 4}, {2, 3, 5, 6}},
			fast:   func(in []*Node) *Node { return AttentionScores(in[0], in[1]) },
			gomlxF: func(in []*Node) *Node { return Einsum("bhqd,bhkd->bhqk", in[0], in[1]) },
		},
		{
			desc:   "attention values",
			dims:   [][]int{{2, 3, 5, 6}, {2, 3, 6, 4}, {2, 3, 5, 4}},
			fast:   func(in []*Node) *Node { return AttentionValues(in[0], in[1]) },
			gomlxF: func(in []*Node) *Node { return Einsum("bhqk,bhkd->bhqd", in[0], in[1]) },
		},
		{
			desc:   "RMSNorm",
			dims:   [][]int{{6, 8}, {8}, {6, 8}},
			fast:   func(in []*Node) *Node { return RMSNorm(in[0], in[1], 1e-5, false) },
			gomlxF: func(in []*Node) *Node { return rmsNormRef(in[0], in[1], 1e-5) },
		},
		{
			desc:   "RMSNorm with the (1 + w) weight",
			dims:   [][]int{{6, 8}, {8}, {6, 8}},
			fast:   func(in []*Node) *Node { return RMSNorm(in[0], in[1], 1e-6, true) },
			gomlxF: func(in []*Node) *Node { return rmsNormRef(in[0], AddScalar(in[1], 1), 1e-6) },
		},
		{
			desc: "RoPE, rotate-half, 3 heads",
			dims: [][]int{{5, 3 * 8}, {5, 8}, {5, 8}, {5, 3 * 8}},
			fast: func(in []*Node) *Node {
				c, s := RoPETables(in[1], in[2], 3)
				return RoPE(in[0], c, s, 3)
			},
			gomlxF: func(in []*Node) *Node {
				x := Reshape(in[0], 5, 3, 8)
				c, s := Reshape(in[1], 5, 1, 8), Reshape(in[2], 5, 1, 8)
				rot := Concatenate([]*Node{Neg(SliceAxis(x, 2, AxisRange(4, 8))), SliceAxis(x, 2, AxisRange(0, 4))}, 2)
				return Reshape(Add(Mul(x, c), Mul(rot, s)), 5, 24)
			},
		},
		{
			desc: "grouped attention, 2 query heads per key/value head, causal and padded mask",
			dims: [][]int{{2, 4, 5, 4}, {2, 2, 6, 4}, {2, 2, 6, 4}, {2, 4, 5, 4}},
			fast: func(in []*Node) *Node {
				return GroupedAttention(in[0], in[1], in[2], decoderBiasConst(in[0].Graph(), 2, 4, 5, 6), 0.5, 0)
			},
			gomlxF: func(in []*Node) *Node { return groupedAttentionRef(in, 2, 0.5, 0) },
			relMax: true,
		},
		{
			desc: "grouped attention, one query head per key/value head, soft-capped",
			dims: [][]int{{2, 3, 5, 4}, {2, 3, 6, 4}, {2, 3, 6, 4}, {2, 3, 5, 4}},
			fast: func(in []*Node) *Node {
				return GroupedAttention(in[0], in[1], in[2], decoderBiasConst(in[0].Graph(), 2, 3, 5, 6), 0.5, 3)
			},
			gomlxF: func(in []*Node) *Node { return groupedAttentionRef(in, 1, 0.5, 3) },
			relMax: true,
		},
		{
			desc: "grouped attention, long keys (the other token contraction)",
			dims: [][]int{{1, 6, 20, 2}, {1, 2, 20, 2}, {1, 2, 20, 2}, {1, 6, 20, 2}},
			fast: func(in []*Node) *Node {
				return GroupedAttention(in[0], in[1], in[2], decoderBiasConst(in[0].Graph(), 1, 6, 20, 20), 0.7, 0)
			},
			gomlxF: func(in []*Node) *Node { return groupedAttentionRef(in, 3, 0.7, 0) },
			relMax: true,
		},
		{
			desc: "cross-entropy of rows",
			dims: [][]int{{5, 7}, {5}},
			fast: func(in []*Node) *Node {
				return CrossEntropyRows(in[0], Const(in[0].Graph(), []int32{0, 6, 3, 3, 1}))
			},
			gomlxF: func(in []*Node) *Node {
				oh := OneHot(Const(in[0].Graph(), []int32{0, 6, 3, 3, 1}), 7, dtypes.Float32)
				return Neg(ReduceSum(Mul(LogSoftmax(in[0], -1), oh), -1))
			},
		},
		{
			desc:   "SwiGLU",
			dims:   [][]int{{4, 6}, {4, 6}, {4, 6}},
			fast:   func(in []*Node) *Node { return GatedActivation(in[0], in[1], "silu") },
			gomlxF: func(in []*Node) *Node { return Mul(Mul(in[0], Sigmoid(in[0])), in[1]) },
		},
		{
			desc:   "GeGLU, tanh approximation",
			dims:   [][]int{{4, 6}, {4, 6}, {4, 6}},
			fast:   func(in []*Node) *Node { return GatedActivation(in[0], in[1], "gelu_tanh") },
			gomlxF: func(in []*Node) *Node { return Mul(activation.GeluApproximate(in[0]), in[1]) },
		},
		{
			desc: "GeGLU, erf",
			dims: [][]int{{4, 6}, {4, 6}, {4, 6}},
			fast: func(in []*Node) *Node { return GatedActivation(in[0], in[1], "gelu") },
			gomlxF: func(in []*Node) *Node {
				x := in[0]
				return Mul(Mul(x, MulScalar(AddScalar(Erf(MulScalar(x, 1/math.Sqrt2)), 1), 0.5)), in[1])
			},
		},
	}
	for _, c := range []struct {
		seq       int
		firstOnly bool
	}{{5, false}, {5, true}, {20, false}} { // 20 positions: the keys-first products
		firstOnly, seq := c.firstOnly, c.seq
		const batch, d, heads = 2, 8, 2
		tests = append(tests, struct {
			desc   string
			dims   [][]int
			fast   func(in []*Node) *Node
			gomlxF func(in []*Node) *Node
			relMax bool
		}{
			relMax: true,
			desc:   fmt.Sprintf("self-attention block, %d positions, first position only %v", seq, firstOnly),
			dims:   [][]int{{batch, seq, d}, {d, 3 * d}, {3 * d}, {d, d}, {d}, {batch, map[bool]int{false: seq, true: 1}[firstOnly], d}},
			fast: func(in []*Node) *Node {
				return SelfAttention(in[0], keyBiasConst(in[0].Graph(), batch, seq), in[1], in[2], in[3], in[4], heads, firstOnly)
			},
			gomlxF: func(in []*Node) *Node {
				x, wqkv, bqkv, wo, bo := in[0], in[1], in[2], in[3], in[4]
				qkv := Reshape(Add(Einsum("bsd,de->bse", x, wqkv), Reshape(bqkv, 1, 1, 3*d)), batch, seq, 3, heads, d/heads)
				part := func(i int) *Node {
					return TransposeAllDims(Reshape(Slice(qkv, AxisRange(), AxisRange(), AxisElem(i)), batch, seq, heads, d/heads), 0, 2, 1, 3)
				}
				scores := Add(MulScalar(Einsum("bhqe,bhke->bhqk", part(0), part(1)), 1/math.Sqrt(d/heads)), keyBiasConst(x.Graph(), batch, seq))
				o := Einsum("bhqk,bhke->bhqe", Softmax(scores, -1), part(2))
				out := Add(Einsum("bse,ef->bsf", Reshape(TransposeAllDims(o, 0, 2, 1, 3), batch, seq, d), wo), Reshape(bo, 1, 1, d))
				if firstOnly {
					out = Slice(out, AxisRange(), AxisRange(0, 1))
				}
				return out
			},
		})
	}
	// Without fused ops (GOMLX_FUSION=false: what a backend without them gets) the ops fall back to
	// decomposed graphs with their own gradients.
	for _, fusion := range []string{"true", "false"} {
		t.Setenv(FusionEnv, fusion)
		for _, tc := range tests {
			t.Run(tc.desc+", fusion "+fusion, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(1, 2))
				args := make([]any, len(tc.dims))
				for i, d := range tc.dims {
					args[i] = randomTensor(rng, d...)
				}
				build := func(op func([]*Node) *Node) func([]*Node) []*Node {
					return func(in []*Node) []*Node {
						n := len(in) - 1
						y := op(in[:n])
						loss := ReduceAllSum(Mul(y, in[n]))
						return append([]*Node{y}, Gradient(loss, in[:n]...)...)
					}
				}
				before := customGradients.Load()
				fast := MustNewExec(backend, build(tc.fast)).MustExec(args...)
				used := customGradients.Load() - before
				ref := MustNewExec(backend, build(tc.gomlxF)).MustExec(args...)
				// The same op in a checkpointed block (the inputs are checkpoints, the output ends
				// the block): GoMLX differentiates copies of its nodes, recomputed in the backward
				// pass, which must get the same custom gradients.
				before = customGradients.Load()
				ckpt := MustNewExec(backend, build(func(in []*Node) *Node {
					marked := make([]*Node, len(in))
					for i, x := range in {
						marked[i] = x.Checkpoint()
					}
					return tc.fast(marked).StopCheckpoint()
				})).MustExec(args...)
				if got := customGradients.Load() - before; got != used {
					t.Errorf("checkpointed: %d custom gradients used, want %d as without checkpoints", got, used)
				}
				for i := range fast {
					got, want := tensors.MustCopyFlatData[float32](ckpt[i]), tensors.MustCopyFlatData[float32](fast[i])
					for j := range want {
						if d := math.Abs(float64(got[j] - want[j])); d > 1e-6*(1+math.Abs(float64(want[j]))) {
							t.Fatalf("checkpointed: output %d (0: value, then gradients) element %d: %g, want %g as without checkpoints", i, j, got[j], want[j])
						}
					}
				}
				for i := range ref {
					if !fast[i].Shape().Equal(ref[i].Shape()) {
						t.Fatalf("output %d: shape %s, want %s", i, fast[i].Shape(), ref[i].Shape())
					}
					got, want := tensors.MustCopyFlatData[float32](fast[i]), tensors.MustCopyFlatData[float32](ref[i])
					var scale float64
					for _, w := range want {
						scale = max(scale, math.Abs(float64(w)))
					}
					for j := range want {
						if !tc.relMax {
							scale = math.Abs(float64(want[j]))
						}
						if d := math.Abs(float64(got[j] - want[j])); d > 1e-5*(1+scale) {
							t.Fatalf("output %d (0: value, then gradients) element %d: %g, want %g", i, j, got[j], want[j])
						}
					}
				}
			})
		}
	}
}

// TestHalfPrecisionProducts: the product ops give in bfloat16 the values and gradients they give in
// float32, up to bfloat16's rounding (2^-8 relative per value, compounded by the sums), on shapes
// with 16 or more contracted values, where the Go backend's half-precision kernels take only one
// operand layout (see dot).
func TestHalfPrecisionProducts(t *testing.T) {
	backend, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc string
		dims [][]int
		op   func(in []*Node) *Node
	}{
		{"product", [][]int{{20, 32}, {32, 24}, {20, 24}}, func(in []*Node) *Node { return Product(in[0], in[1]) }},
		{"product with the transposed weights", [][]int{{20, 32}, {24, 32}, {20, 24}}, func(in []*Node) *Node { return ProductTransposed(in[0], in[1]) }},
		{"attention scores", [][]int{{2, 3, 18, 16}, {2, 3, 20, 16}, {2, 3, 18, 20}}, func(in []*Node) *Node { return AttentionScores(in[0], in[1]) }},
		{"attention values", [][]int{{2, 3, 18, 20}, {2, 3, 20, 16}, {2, 3, 18, 16}}, func(in []*Node) *Node { return AttentionValues(in[0], in[1]) }},
		{"sum over the last axis", [][]int{{4, 5, 32}, {4, 5}}, func(in []*Node) *Node { return SumLast(in[0]) }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			args := make([]any, len(tc.dims))
			for i, d := range tc.dims {
				args[i] = randomTensor(rng, d...)
			}
			run := func(dt dtypes.DType) [][]float32 {
				out := MustNewExec(backend, func(in []*Node) []*Node {
					n := len(in) - 1
					half := make([]*Node, n)
					for i := range half {
						half[i] = ConvertDType(in[i], dt)
					}
					y := tc.op(half)
					loss := ReduceAllSum(Mul(ConvertDType(y, dtypes.Float32), in[n]))
					res := []*Node{ConvertDType(y, dtypes.Float32)}
					for _, g := range Gradient(loss, half...) {
						res = append(res, ConvertDType(g, dtypes.Float32))
					}
					return res
				}).MustExec(args...)
				var flat [][]float32
				for _, o := range out {
					flat = append(flat, tensors.MustCopyFlatData[float32](o))
				}
				return flat
			}
			f32, bf16 := run(dtypes.Float32), run(dtypes.BFloat16)
			for i := range f32 {
				var worst, scale float64
				for j := range f32[i] {
					worst = max(worst, math.Abs(float64(bf16[i][j]-f32[i][j])))
					scale = max(scale, math.Abs(float64(f32[i][j])))
				}
				if worst > 2e-2*scale {
					t.Errorf("output %d (0: value, then gradients): bfloat16 differs from float32 by %.3g (max |value| %.3g)", i, worst, scale)
				}
			}
		})
	}
}

// rmsNormRef is RMSNorm in plain GoMLX ops (transformers' LlamaRMSNorm), w the full weight.
func rmsNormRef(x, w *Node, eps float64) *Node {
	ms := ReduceAndKeep(Square(x), ReduceMean, -1)
	return Mul(Div(x, Sqrt(AddScalar(ms, eps))), ExpandAxes(w, 0))
}

// decoderBiasConst is a decoder's attention mask [b, h, t, s]: causal (query i, at slot s-t+i,
// sees keys up to its slot) and the first key of the last example padding.
func decoderBiasConst(g *Graph, b, h, t, s int) *Node {
	v := make([]float32, b*h*t*s)
	for bi := range b {
		for hi := range h {
			for i := range t {
				for j := range s {
					if j > s-t+i || (bi == b-1 && j == 0) {
						v[((bi*h+hi)*t+i)*s+j] = -1e30
					}
				}
			}
		}
	}
	return Const(g, tensors.FromFlatDataAndDimensions(v, b, h, t, s))
}

// groupedAttentionRef is GroupedAttention in plain GoMLX ops: keys and values repeated per group
// (transformers' repeat_kv), the mask of decoderBiasConst.
func groupedAttentionRef(in []*Node, rep int, scale, softcap float64) *Node {
	q, k, v := in[0], in[1], in[2]
	dims := q.Shape().Dimensions
	repeat := func(x *Node) *Node {
		d := x.Shape().Dimensions
		return Reshape(BroadcastToDims(ExpandAxes(x, 2), d[0], d[1], rep, d[2], d[3]), d[0], d[1]*rep, d[2], d[3])
	}
	scores := MulScalar(Einsum("bhqd,bhkd->bhqk", q, repeat(k)), scale)
	if softcap > 0 {
		scores = MulScalar(Tanh(MulScalar(scores, 1/softcap)), softcap)
	}
	scores = Add(scores, decoderBiasConst(q.Graph(), dims[0], dims[1], dims[2], k.Shape().Dimensions[2]))
	return Einsum("bhqk,bhkd->bhqd", Softmax(scores, -1), repeat(v))
}
