package decoder

import (
	"maps"
	"math"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/layers/attention"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/decoder/layout"
	"github.com/tracksum/tracksum/layers"
)

// The forward pass follows transformers' modeling_llama.py (LlamaModel) and its siblings:
//
//	h = embed_tokens[ids]                       (gemma: * sqrt(hidden), rounded to the dtype)
//	for each layer:
//	  a = input_layernorm(h)                    RMSNorm: x / sqrt(mean(x²) + eps) * w   (gemma: * (1 + w))
//	  q, k, v = q/k/v_proj(a)                   (qwen2: with biases), heads split (qwen3: q_norm,
//	                                            k_norm per head), RoPE on q and k
//	  h = h + o_proj(softmax(q kᵀ / sqrt(head_dim) + mask) v)   keys/values repeated per group (GQA)
//	                                            (gemma2/3: scaled by query_pre_attn_scalar, scores
//	                                            soft-capped, o_proj normed; sliding layers: a window
//	                                            in the mask, gemma3's local RoPE base)
//	  h = h + down_proj(act(gate_proj(m)) * up_proj(m)),  m = post_attention_layernorm(h)
//	                                            (gemma2/3: m = pre_feedforward_layernorm(h), the sum
//	                                            normed by post_feedforward_layernorm)
//	hidden = norm(h); logits = hidden @ (lm_head or embed_tokens)ᵀ   (gemma2: soft-capped)
//
// By default everything is computed in float32; half-precision weights are converted in the graph.
// With SetCompute(Compute{BF16: true}) the base weights, their products and the activations between
// them are bfloat16, as transformers' model in torch_dtype=bfloat16 with PEFT and no autocast: the
// adapters (float32) read the input cast to float32 and their sum with the base output is cast back;
// RMSNorm's statistics, the attention softmax (with its mask), the final norm, the hidden states
// Hidden returns, the logits and the loss are float32.
//
// On the pure-Go backend the float32 graph is built from layers' decoder blocks
// (layers.DecoderFastPath): RMSNorm, RoPE on the projections' layout, grouped-query attention
// without repeated keys and values, the gated MLP activation and the cross-entropy, each with a
// hand-written gradient, and the LoRA scale folded into B. They compute the same values (to float
// rounding: the parity goldens hold unchanged); XLA backends and bf16 keep the plain graph.

// maskedScore is added to the scores of keys a query may not see: exp underflows to exactly 0, and
// a row with every key masked (a padding query) stays finite (uniform), as with transformers'
// finfo.min.
const maskedScore = -1e30

// dtype is the dtype of the base products and activations: bfloat16 with Compute.BF16, else float32.
func (m *Model) dtype() dtypes.DType {
	if m.compute.BF16 {
		return dtypes.BFloat16
	}
	return dtypes.Float32
}

// weight returns the base weight of Hugging Face key name as a float32 node of g.
func (m *Model) weight(g *Graph, name string) *Node { return m.weightAs(g, name, dtypes.Float32, nil) }

// weightAs returns the base weight of key name as a dt node of g. With anchor (a node of a
// checkpointed layer, under gradient checkpointing), a conversion is made to depend on it, so that
// GoMLX recomputes the converted copy in the backward pass instead of keeping it from the forward
// pass (a float32 copy of every bf16 weight of the model, otherwise).
func (m *Model) weightAs(g *Graph, name string, dt dtypes.DType, anchor *Node) *Node {
	if pw, ok := m.packed[name]; ok {
		return pw.graph(g, dt, anchor)
	}
	return layers.ConvertFrozen(m.base[name].ValueGraph(g), dt, anchor)
}

// linear applies projection p to x [n, in], n = batch·tokens: x Wᵀ (+ b) (+ scale · dropout(x) Aᵀ Bᵀ
// with an adapter), in x's dtype. The adapter's path is float32 (PEFT without autocast casts the
// input to the adapter's dtype, adds in float32 and casts the sum back to the base output's dtype).
// anchor: see weightAs.
func (m *Model) linear(scope *gomlxmodel.Scope, p projection, x *Node, batch int, anchor *Node) *Node {
	g := x.Graph()
	dt := x.DType()
	y := layers.ProductTransposed(x, m.weightAs(g, p.Key+".weight", dt, anchor))
	if p.Bias {
		y = Add(y, ExpandAxes(m.weightAs(g, p.Key+".bias", dt, anchor), 0))
	}
	if ad, ok := m.adapters[p.Key]; ok {
		xd := layers.As(x, dtypes.Float32)
		if m.lora.Dropout > 0 {
			// Dropout sees the examples on axis 0, as the sharded training step requires.
			n, in := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
			xd = Reshape(layers.Dropout(scope, Reshape(x, batch, n/batch, in), m.lora.Dropout), n, in)
		}
		low := layers.ProductTransposed(xd, ad.A.ValueGraph(g)) // [n, r]
		if layers.DecoderFastPath(g, dt) {
			// The scale folded into B [out, r]: no pass over the [n, out] output (nor over its
			// gradient) for it.
			return Add(y, layers.ProductTransposed(low, MulScalar(ad.B.ValueGraph(g), m.lora.Scale())))
		}
		delta := layers.ProductTransposed(low, ad.B.ValueGraph(g)) // [n, out]
		y = layers.As(Add(layers.As(y, dtypes.Float32), MulScalar(delta, m.lora.Scale())), dt)
	}
	return y
}

// rmsNorm normalises x [n, H] with weight key name (gemma: scaled by 1 + w), in float32 as
// transformers' RMSNorm, and returns it in dtype out: llama's norm casts the normalised value to
// out before the product with the weight (of dtype out), gemma's after it (weight in float32).
// anchor: see weightAs.
func (m *Model) rmsNorm(x *Node, name string, out dtypes.DType, anchor *Node) *Node {
	g := x.Graph()
	if x.DType() == dtypes.Float32 && out == dtypes.Float32 && layers.DecoderFastPath(g, dtypes.Float32) {
		return layers.RMSNorm(x, m.weightAs(g, name, dtypes.Float32, anchor), m.cfg.RMSNormEps, m.cfg.NormPlusOne)
	}
	x = layers.As(x, dtypes.Float32)
	ms := ReduceAndKeep(Square(x), ReduceMean, -1)
	// Div by Sqrt rather than Rsqrt: GoMLX v0.28.6 defines no gradient for Rsqrt.
	normed := Div(x, Sqrt(AddScalar(ms, m.cfg.RMSNormEps)))
	if m.cfg.NormPlusOne {
		w := AddScalar(m.weightAs(g, name, dtypes.Float32, anchor), 1)
		return layers.As(Mul(normed, ExpandAxes(w, 0)), out)
	}
	return Mul(layers.As(normed, out), ExpandAxes(m.weightAs(g, name, out, anchor), 0))
}

// headNorm is Qwen3's q_norm / k_norm: the RMSNorm of each head of x [n, heads*HeadDim] over its
// HeadDim values, with weight key name [HeadDim], in x's dtype.
func (m *Model) headNorm(x *Node, name string, heads int, anchor *Node) *Node {
	n := x.Shape().Dimensions[0]
	y := m.rmsNorm(Reshape(x, n*heads, m.cfg.HeadDim), name, x.DType(), anchor)
	return Reshape(y, n, heads*m.cfg.HeadDim)
}

// embed looks tokens [B, T] up: [B*T, H] in the model's dtype.
func (m *Model) embed(tokens *Node) *Node {
	g := tokens.Graph()
	b, t := tokens.Shape().Dimensions[0], tokens.Shape().Dimensions[1]
	ids := Reshape(ConvertDType(tokens, dtypes.Int32), b*t, 1)
	h := Gather(m.weightAs(g, "model.embed_tokens.weight", m.dtype(), nil), ids)
	if m.cfg.ScaleEmbeddings {
		// transformers multiplies by sqrt(hidden) as a tensor of the hidden states' dtype.
		h = MulScalar(h, float64(float32(math.Sqrt(float64(m.cfg.Hidden)))))
	}
	return h
}

// rope returns cos and sin [B, 1, T, HeadDim] of positions [B, T], computed in float32 and returned
// in the model's dtype (transformers' rotary embedding casts them to the states' dtype); local:
// the sliding layers' (Config.LocalRopeTheta).
func (m *Model) rope(positions *Node, local bool) (cos, sin *Node) {
	g := positions.Graph()
	inv := Const(g, m.cfg.invFreq(local))                       // [D/2]
	pos := ConvertDType(positions, dtypes.Float32)              // [B, T]
	freqs := Mul(ExpandAxes(pos, -1), ExpandLeftToRank(inv, 3)) // [B, T, D/2]
	emb := Concatenate([]*Node{freqs, freqs}, -1)               // [B, T, D]
	return layers.As(ExpandAxes(Cos(emb), 1), m.dtype()), layers.As(ExpandAxes(Sin(emb), 1), m.dtype())
}

// ropeRows returns cos and sin [B*T, HeadDim] of positions [B, T] in float32: the tables of
// layers.RoPE (decoder fast path; see rope).
func (m *Model) ropeRows(positions *Node, local bool) (cos, sin *Node) {
	g := positions.Graph()
	b, t := positions.Shape().Dimensions[0], positions.Shape().Dimensions[1]
	inv := Const(g, m.cfg.invFreq(local))                                        // [D/2]
	pos := Reshape(ConvertDType(positions, dtypes.Float32), b*t, 1)              // [B*T, 1]
	freqs := Mul(BroadcastToDims(pos, b*t, m.cfg.HeadDim/2), ExpandAxes(inv, 0)) // [B*T, D/2]
	emb := Concatenate([]*Node{freqs, freqs}, -1)                                // [B*T, D]
	return Cos(emb), Sin(emb)
}

// ropeTables is what one layer's RoPE reads on the fast path: the tables repeated over the query
// heads and over the key/value heads (layers.RoPETables).
type ropeTables struct{ cosQ, sinQ, cosK, sinK *Node }

func (m *Model) ropeTablesOf(positions *Node, local bool) ropeTables {
	cos, sin := m.ropeRows(positions, local)
	var r ropeTables
	r.cosQ, r.sinQ = layers.RoPETables(cos, sin, m.cfg.Heads)
	r.cosK, r.sinK = layers.RoPETables(cos, sin, m.cfg.KVHeads)
	return r
}

// applyRope rotates x [B, heads, T, D]: x cos + rotate_half(x) sin, rotate_half(x) = [-x2, x1].
func applyRope(x, cos, sin *Node) *Node {
	d := x.Shape().Dimensions[3]
	x1 := SliceAxis(x, 3, AxisRange(0, d/2))
	x2 := SliceAxis(x, 3, AxisRange(d/2, d))
	rot := Concatenate([]*Node{Neg(x2), x1}, 3)
	return Add(Mul(x, cos), Mul(rot, sin))
}

// splitHeads turns x [B*T, heads*D] into [B, heads, T, D].
func splitHeads(x *Node, b, t, heads, d int) *Node {
	return TransposeAllDims(Reshape(x, b, t, heads, d), 0, 2, 1, 3)
}

// repeatKV repeats each key/value head for its group of query heads (transformers' repeat_kv):
// [B, kv, S, D] -> [B, kv*rep, S, D], query head i reading kv head i/rep.
func repeatKV(x *Node, rep int) *Node {
	if rep == 1 {
		return x
	}
	dims := x.Shape().Dimensions
	b, kv, s, d := dims[0], dims[1], dims[2], dims[3]
	x = BroadcastToDims(ExpandAxes(x, 2), b, kv, rep, s, d)
	return Reshape(x, b, kv*rep, s, d)
}

// attentionBias returns the additive mask [B, heads, T, S] for queries at slots qSlots [T] (int32)
// over keys at slots 0..S-1 of which keyMask [B, S] marks the real ones: a key is seen when it is
// real, not after the query, and (sliding window w > 0) fewer than w slots before it.
func (m *Model) attentionBias(qSlots, keyMask *Node, heads, w int) *Node {
	g := qSlots.Graph()
	t := qSlots.Shape().Dimensions[0]
	b, s := keyMask.Shape().Dimensions[0], keyMask.Shape().Dimensions[1]
	q := ExpandAxes(qSlots, -1)                      // [T, 1]
	k := Iota(g, shapes.Make(dtypes.Int32, 1, s), 1) // [1, S]
	ok := LessOrEqual(k, q)                          // [T, S]
	if w > 0 {
		ok = LogicalAnd(ok, LessThan(Sub(q, k), Const(g, int32(w))))
	}
	real := NotEqual(ConvertDType(keyMask, dtypes.Float32), ScalarZero(g, dtypes.Float32)) // [B, S]
	all := LogicalAnd(BroadcastToDims(ExpandAxes(ok, 0), b, t, s), BroadcastToDims(ExpandAxes(real, 1), b, t, s))
	return biasOf(all, heads)
}

// packedBias is the additive mask [R, heads, L, L] of packed rows whose tokens belong to segments
// [R, L] (int32, 0 for padding): a key is seen when it is of the query's segment, not after the
// query, and (w > 0) fewer than w slots before it. Within a segment slots and positions advance
// together, so the window in slots is transformers' window in positions of the unpacked example.
func packedBias(segments *Node, heads, w int) *Node {
	g := segments.Graph()
	r, l := segments.Shape().Dimensions[0], segments.Shape().Dimensions[1]
	seg := ConvertDType(segments, dtypes.Int32)
	q := Iota(g, shapes.Make(dtypes.Int32, l, 1), 0) // [L, 1]
	k := Iota(g, shapes.Make(dtypes.Int32, 1, l), 1) // [1, L]
	ok := LessOrEqual(k, q)                          // [L, L]
	if w > 0 {
		ok = LogicalAnd(ok, LessThan(Sub(q, k), Const(g, int32(w))))
	}
	same := LogicalAnd(Equal(ExpandAxes(seg, -1), ExpandAxes(seg, 1)), // [R, L, L]
		BroadcastToDims(ExpandAxes(NotEqual(seg, ZerosLike(seg)), 1), r, l, l))
	return biasOf(LogicalAnd(same, BroadcastToDims(ExpandAxes(ok, 0), r, l, l)), heads)
}

// biasOf turns what each query sees, seen [B, T, S], into the additive mask [B, heads, T, S].
func biasOf(seen *Node, heads int) *Node {
	g := seen.Graph()
	dims := seen.Shape().Dimensions
	bias := Where(seen, ScalarZero(g, dtypes.Float32), Scalar(g, dtypes.Float32, maskedScore))
	return BroadcastToDims(ExpandAxes(bias, 1), dims[0], heads, dims[1], dims[2])
}

// attnMask is what one run's attention sees: bias(w) the additive mask [B, heads, T, S] of the
// window w (0: none); lengths, when not nil, the real tokens [B] (int32) of right-padded rows whose
// queries are their keys (Hidden), which cuDNN's fused attention reads instead of a mask.
type attnMask struct {
	bias    func(w int) *Node
	lengths *Node
}

// layerState is what one layer's attention reads and writes: keys and values of all slots.
type layerKV struct{ k, v *Node }

// run is the decoder over tokens [B, T] at RoPE positions [B, T]; kv(l, k, v) gives layer l's keys
// and values [B, KV, S, D] to attend to given the new ones (the new ones themselves without a
// cache), mask says which of them each query sees. It returns the final-norm hidden states [B, T,
// Hidden] in float32. With checkpoint (training graphs under Compute.GradientCheckpointing) each
// layer is a checkpointed block: only its input is kept for the backward pass, which recomputes
// the rest.
func (m *Model) run(scope *gomlxmodel.Scope, tokens, positions *Node, mask attnMask, kv func(l int, k, v *Node) layerKV, checkpoint bool) *Node {
	h := m.embed(tokens) // [B*T, H]
	r := m.newLayerRun(scope, tokens, positions, mask, kv)
	for l := range m.cfg.Layers {
		var anchor *Node
		if checkpoint {
			h = h.Checkpoint()
			anchor = h
		}
		h = m.layer(r, l, h, anchor)
	}
	if checkpoint {
		h = h.StopCheckpoint()
	}
	h = m.rmsNorm(h, "model.norm.weight", dtypes.Float32, nil)
	if r.dt != dtypes.Float32 {
		// transformers' final norm returns the model's dtype: the float32 hidden states hold
		// those values (exactly: a widening conversion).
		h = layers.As(layers.As(h, r.dt), dtypes.Float32)
	}
	return Reshape(h, r.b, r.t, m.cfg.Hidden)
}

// layerRun is what the layers of one run share: its arguments, the batch's sizes, the RoPE
// tables of the full and the sliding layers, the masks and the attention's scale.
type layerRun struct {
	scope *gomlxmodel.Scope
	mask  attnMask
	kv    func(l int, k, v *Node) layerKV
	dt    dtypes.DType
	b, t  int
	// fast: the blocks of layers differentiated by hand for the Go backend (float32 only; XLA
	// backends and bf16 keep the plain graph), which read tables instead of cos and sin.
	fast                         bool
	cos, sin, localCos, localSin *Node
	tables, localTables          ropeTables
	// The masks are built once, when a layer first reads them (none when every layer is fused).
	fullBias, slidingBias *Node
	window                int
	scale                 float64
	rep                   int // query heads per key/value head
}

func (m *Model) newLayerRun(scope *gomlxmodel.Scope, tokens, positions *Node, mask attnMask, kv func(l int, k, v *Node) layerKV) *layerRun {
	c := m.cfg
	r := &layerRun{scope: scope, mask: mask, kv: kv, dt: m.dtype(), window: c.SlidingWindow, rep: c.Heads / c.KVHeads}
	r.b, r.t = tokens.Shape().Dimensions[0], tokens.Shape().Dimensions[1]
	r.fast = layers.DecoderFastPath(tokens.Graph(), r.dt)
	if r.fast {
		r.tables = m.ropeTablesOf(positions, false)
		r.localTables = r.tables
		if c.LocalRopeTheta > 0 {
			r.localTables = m.ropeTablesOf(positions, true)
		}
	} else {
		r.cos, r.sin = m.rope(positions, false)
		r.localCos, r.localSin = r.cos, r.sin
		if c.LocalRopeTheta > 0 {
			r.localCos, r.localSin = m.rope(positions, true)
		}
	}
	r.scale = 1 / math.Sqrt(float64(c.HeadDim))
	if c.QueryPreAttnScalar > 0 {
		r.scale = 1 / math.Sqrt(c.QueryPreAttnScalar)
	}
	return r
}

// biasOf returns the additive mask of a sliding or a full layer.
func (r *layerRun) biasOf(sliding bool) *Node {
	if sliding && r.window > 0 {
		if r.slidingBias == nil {
			r.slidingBias = r.mask.bias(r.window)
		}
		return r.slidingBias
	}
	if r.fullBias == nil {
		r.fullBias = r.mask.bias(0)
	}
	return r.fullBias
}

// layer is decoder layer l over the hidden states h [B*T, H]: attention and MLP, each added to
// the residual stream (with Gemma 2's and 3's sandwich norms around them).
func (m *Model) layer(r *layerRun, l int, h, anchor *Node) *Node {
	c := m.cfg
	pre := layout.LayerKey(l)
	a := m.rmsNorm(h, pre+".input_layernorm.weight", r.dt, anchor)
	att := m.attention(r, l, a, anchor)
	o := m.linear(r.scope, c.projection(l, "o_proj"), att, r.b, anchor)
	mlpNorm := ".post_attention_layernorm.weight"
	if c.SandwichNorms {
		o = m.rmsNorm(o, pre+".post_attention_layernorm.weight", r.dt, anchor)
		mlpNorm = ".pre_feedforward_layernorm.weight"
	}
	h = Add(h, o)
	mm := m.rmsNorm(h, pre+mlpNorm, r.dt, anchor)
	var gate, up *Node
	if c.FusedGateUp {
		// Phi3MLP: gate, up = gate_up_proj(m).chunk(2).
		gu := m.linear(r.scope, c.projection(l, "gate_up_proj"), mm, r.b, anchor)
		gate, up = SliceAxis(gu, 1, AxisRange(0, c.Intermediate)), SliceAxis(gu, 1, AxisRange(c.Intermediate, 2*c.Intermediate))
	} else {
		gate, up = m.linear(r.scope, c.projection(l, "gate_proj"), mm, r.b, anchor), m.linear(r.scope, c.projection(l, "up_proj"), mm, r.b, anchor)
	}
	var gated *Node
	if r.fast {
		gated = layers.GatedActivation(gate, up, activations[c.HiddenAct])
	} else {
		gated = Mul(m.act(gate), up)
	}
	down := m.linear(r.scope, c.projection(l, "down_proj"), gated, r.b, anchor)
	if c.SandwichNorms {
		down = m.rmsNorm(down, pre+".post_feedforward_layernorm.weight", r.dt, anchor)
	}
	return Add(h, down)
}

// attention is layer l's self-attention over its normed input a [B*T, H], before o_proj: the
// heads' outputs [B*T, heads*D].
func (m *Model) attention(r *layerRun, l int, a, anchor *Node) *Node {
	c := m.cfg
	b, t := r.b, r.t
	proj := func(module string) projection { return c.projection(l, module) }
	pre := layout.LayerKey(l)
	cos, sin, tables := r.cos, r.sin, r.tables
	if c.slides(l) {
		cos, sin, tables = r.localCos, r.localSin, r.localTables
	}
	var q, k, v *Node
	if c.FusedQKV {
		// Phi3Attention: the fused output's rows are [q | k | v].
		qkv := m.linear(r.scope, proj("qkv_proj"), a, b, anchor)
		qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
		q = SliceAxis(qkv, 1, AxisRange(0, qd))
		k = SliceAxis(qkv, 1, AxisRange(qd, qd+kvd))
		v = SliceAxis(qkv, 1, AxisRange(qd+kvd, qd+2*kvd))
	} else {
		q, k, v = m.linear(r.scope, proj("q_proj"), a, b, anchor), m.linear(r.scope, proj("k_proj"), a, b, anchor), m.linear(r.scope, proj("v_proj"), a, b, anchor)
	}
	if c.QKNorm {
		q = m.headNorm(q, pre+".self_attn.q_norm.weight", c.Heads, anchor)
		k = m.headNorm(k, pre+".self_attn.k_norm.weight", c.KVHeads, anchor)
	}
	var att *Node // [B, heads, T, D]
	if r.fast {
		// RoPE on the projections' layout, the attention of each key/value head's group in
		// one block (layers.GroupedAttention: no repeated keys or values).
		q = splitHeads(layers.RoPE(q, tables.cosQ, tables.sinQ, c.Heads), b, t, c.Heads, c.HeadDim)
		k = splitHeads(layers.RoPE(k, tables.cosK, tables.sinK, c.KVHeads), b, t, c.KVHeads, c.HeadDim)
		v = splitHeads(v, b, t, c.KVHeads, c.HeadDim)
		all := r.kv(l, k, v)
		att = layers.GroupedAttention(q, all.k, all.v, r.biasOf(c.slides(l)), r.scale, c.AttnSoftcap)
	} else {
		q = applyRope(splitHeads(q, b, t, c.Heads, c.HeadDim), cos, sin)
		k = applyRope(splitHeads(k, b, t, c.KVHeads, c.HeadDim), cos, sin)
		v = splitHeads(v, b, t, c.KVHeads, c.HeadDim)
		all := r.kv(l, k, v)
		if m.fused(r.mask, l, t) {
			att = fusedAttention(q, all.k, all.v, r.mask.lengths, r.scale)
		} else {
			scores := MulScalar(layers.AttentionScores(q, repeatKV(all.k, r.rep)), r.scale)
			if c.AttnSoftcap > 0 {
				scores = softcap(scores, c.AttnSoftcap)
			}
			// The softmax and its mask in float32 (transformers' eager attention: softmax in
			// float32, cast back to the values' dtype).
			probs := layers.As(layers.SoftmaxLast(Add(layers.As(scores, dtypes.Float32), r.biasOf(c.slides(l)))), r.dt)
			att = layers.AttentionValues(probs, repeatKV(all.v, r.rep))
		}
	}
	return Reshape(TransposeAllDims(att, 0, 2, 1, 3), b*t, c.Heads*c.HeadDim)
}

// fused reports whether layer l of a run over t tokens takes cuDNN's fused attention
// (Compute.FlashAttention): when the rows are right padded and attend to themselves (mask.lengths),
// in half precision, and the layer's shape allows it (FlashFits). Packed rows, float32 and the
// KV-cache steps take the decomposed path.
func (m *Model) fused(mask attnMask, l, t int) bool {
	return m.compute.FlashAttention && mask.lengths != nil && m.dtype() == dtypes.BFloat16 && m.cfg.FlashFits(l, t)
}

// FlashFits reports whether cuDNN's fused attention can compute layer l over rows of t tokens: a
// head dim that is a multiple of 8, no soft-cap (Gemma 2) and no sliding window shorter than the
// rows. The graph (Model.fused) and the memory plan (hf/plan) ask it.
func (c Config) FlashFits(l, t int) bool {
	return c.HeadDim%8 == 0 && c.AttnSoftcap == 0 && (!c.slides(l) || c.SlidingWindow == 0 || c.SlidingWindow >= t)
}

// fusedAttention is causal attention over right-padded rows of lengths [B] (int32) by GoMLX's
// attention.Core, which lowers to cuDNN's flash attention (forward and backward) on the CUDA XLA
// plugin and falls back to its own decomposed graph elsewhere: q [B, H, T, D], k and v [B, KV, T, D]
// -> [B, H, T, D]. The queries of the padding (never read) may differ from the decomposed path's.
func fusedAttention(q, k, v, lengths *Node, scale float64) *Node {
	bshd := func(x *Node) *Node { return TransposeAllDims(x, 0, 2, 1, 3) }
	out, _ := attention.Core(bshd(q), bshd(k), bshd(v), attention.LayoutBSHD, attention.CoreOptions{
		Scale: scale, UseCausalMask: true, QuerySeqLen: lengths, KVSeqLen: lengths})
	return bshd(out)
}

// softcap is Gemma 2's soft-capping, limit * tanh(x / limit), in x's dtype.
func softcap(x *Node, limit float64) *Node { return MulScalar(Tanh(MulScalar(x, 1/limit)), limit) }

// slides reports whether layer l is a sliding layer: its keys within SlidingWindow (when set) and
// its RoPE base LocalRopeTheta (when set).
func (c Config) slides(l int) bool {
	if c.SlidingLayers != nil {
		return c.SlidingLayers[l]
	}
	return c.SlidingWindow > 0
}

// act is the MLP's activation.
func (m *Model) act(x *Node) *Node {
	switch activations[m.cfg.HiddenAct] {
	case "gelu_tanh":
		return activation.GeluApproximate(x)
	case "gelu":
		return activation.Gelu(x)
	}
	return Mul(x, Sigmoid(x))
}

func (m *Model) hidden(scope *gomlxmodel.Scope, tokens, mask *Node) *Node {
	g := tokens.Graph()
	b, t := tokens.Shape().Dimensions[0], tokens.Shape().Dimensions[1]
	slots := Iota(g, shapes.Make(dtypes.Int32, t), 0)
	positions := BroadcastToDims(ExpandAxes(slots, 0), b, t)
	am := attnMask{bias: func(w int) *Node { return m.attentionBias(slots, mask, m.cfg.Heads, w) }}
	if m.compute.FlashAttention {
		// Right padding: the real tokens of a row are its first sum(mask) slots.
		real := ConvertDType(NotEqual(ConvertDType(mask, dtypes.Float32), ScalarZero(g, dtypes.Float32)), dtypes.Int32)
		am.lengths = ReduceSum(real, 1)
	}
	return m.run(scope, tokens, positions, am, selfKV, m.compute.GradientCheckpointing)
}

// selfKV is the kv of run without a cache: the layer's own keys and values.
func selfKV(_ int, k, v *Node) layerKV { return layerKV{k, v} }

func (m *Model) hiddenPacked(scope *gomlxmodel.Scope, tokens, segments, positions *Node) *Node {
	am := attnMask{bias: func(w int) *Node { return packedBias(segments, m.cfg.Heads, w) }}
	return m.run(scope, tokens, ConvertDType(positions, dtypes.Int32), am, selfKV, m.compute.GradientCheckpointing)
}

func (m *Model) logits(_ *gomlxmodel.Scope, hidden *Node) *Node {
	// In bf16 the product is bfloat16 (transformers' lm_head), its logits widened to float32.
	head := m.headName()
	return m.headProduct(hidden, m.weightAs(hidden.Graph(), head, m.dtype(), nil), m.cfg.Vocab)
}

// headName is the output layer's weight: lm_head, or the embeddings when the model ties them.
func (m *Model) headName() string {
	if m.cfg.TieWordEmbeddings {
		return "model.embed_tokens.weight"
	}
	return "lm_head.weight"
}

// headProduct multiplies hidden [..., Hidden] by the head's rows [width, Hidden] in the compute
// dtype and returns float32 logits [..., width], soft-capped as the family asks.
func (m *Model) headProduct(hidden, rows *Node, width int) *Node {
	dims := hidden.Shape().Dimensions
	n := hidden.Shape().Size() / m.cfg.Hidden
	y := layers.As(layers.ProductTransposed(layers.As(Reshape(hidden, n, m.cfg.Hidden), m.dtype()), rows), dtypes.Float32)
	if m.cfg.FinalSoftcap > 0 {
		y = softcap(y, m.cfg.FinalSoftcap)
	}
	return Reshape(y, append(slices.Clone(dims[:len(dims)-1]), width)...)
}

// logitsOf is logits restricted to the vocabulary entries ids: the head's rows of ids are gathered
// before the product, so that reading a few answer tokens (the generative tracker's yes and no)
// costs len(ids) rows of the head rather than the whole vocabulary.
func (m *Model) logitsOf(hidden *Node, ids []int) *Node {
	g := hidden.Graph()
	head := m.headName()
	dt := m.dtype()
	idx := make([][]int32, len(ids))
	for i, id := range ids {
		idx[i] = []int32{int32(id)}
	}
	var rows *Node
	if _, packed := m.packed[head]; packed {
		rows = Gather(m.weightAs(g, head, dt, nil), Const(g, idx))
	} else {
		// Gathered, then converted: the same rows as logits' converted head, at len(ids) rows' cost.
		rows = layers.ConvertFrozen(Gather(m.base[head].ValueGraph(g), Const(g, idx)), dt, nil)
	}
	return m.headProduct(hidden, rows, len(ids))
}

func causalLMLoss(logits, labels *Node) *Node {
	g := logits.Graph()
	dims := logits.Shape().Dimensions
	b, t, v := dims[0], dims[1], dims[2]
	if t < 2 {
		return ScalarZero(g, dtypes.Float32)
	}
	x := Reshape(SliceAxis(logits, 1, AxisRange(0, t-1)), b*(t-1), v)
	y := Reshape(ConvertDType(SliceAxis(labels, 1, AxisRange(1, t)), dtypes.Int32), b*(t-1))
	valid := NotEqual(y, Const(g, int32(IgnoreLabel)))
	safe := Where(valid, y, ZerosLike(y))
	w := ConvertDType(valid, dtypes.Float32)
	count := Max(ReduceAllSum(w), ScalarOne(g, dtypes.Float32))
	if x.DType() == dtypes.Float32 && layers.DecoderFastPath(g, dtypes.Float32) {
		return Div(ReduceAllSum(Mul(layers.CrossEntropyRows(x, safe), w)), count)
	}
	logp := LogSoftmax(x, -1)
	picked := layers.SumLast(Mul(logp, OneHot(safe, v, dtypes.Float32))) // [n]
	total := ReduceAllSum(Mul(picked, w))
	return Neg(Div(total, count))
}

func (m *Model) cacheShapes(batch, maxLen int) []shapes.Shape {
	s := shapes.Make(m.dtype(), batch, m.cfg.KVHeads, maxLen, m.cfg.HeadDim)
	out := make([]shapes.Shape, 2*m.cfg.Layers)
	for i := range out {
		out[i] = s
	}
	return out
}

func (m *Model) newCache(g *Graph, batch, maxLen int) *KVCache {
	var nodes []*Node
	for _, s := range m.cacheShapes(batch, maxLen) {
		nodes = append(nodes, Zeros(g, s))
	}
	return m.cacheFrom(nodes)
}

func (c *KVCache) flatten() []*Node {
	var out []*Node
	for l := range c.Keys {
		out = append(out, c.Keys[l], c.Values[l])
	}
	return out
}

func (m *Model) cacheFrom(nodes []*Node) *KVCache {
	c := &KVCache{}
	for l := 0; l+1 < len(nodes); l += 2 {
		c.Keys = append(c.Keys, nodes[l])
		c.Values = append(c.Values, nodes[l+1])
	}
	return c
}

// NewCacheTensors returns the zero host tensors of an empty cache, in Flatten's order.
func (m *Model) NewCacheTensors(batch, maxLen int) []*tensors.Tensor {
	var out []*tensors.Tensor
	for _, s := range m.cacheShapes(batch, maxLen) {
		out = append(out, tensors.FromShape(s))
	}
	return out
}

func (m *Model) step(scope *gomlxmodel.Scope, cache *KVCache, tokens, positions, keyMask, offset *Node) (*Node, *KVCache) {
	g := tokens.Graph()
	s := tokens.Shape().Dimensions[1]
	maxLen := keyMask.Shape().Dimensions[1]
	off := ConvertDType(offset, dtypes.Int32)
	slots := Add(Iota(g, shapes.Make(dtypes.Int32, s), 0), off) // [S]
	// The Go backend has no DynamicUpdateSlice: the new rows are placed with a one-hot product
	// (exact: each slot receives one value times 1 plus zeros) and the old ones kept by a mask.
	onehot := ConvertDType(Equal(ExpandAxes(slots, -1), Iota(g, shapes.Make(dtypes.Int32, 1, maxLen), 1)), dtypes.Float32) // [S, L]
	keep := OneMinus(ReduceSum(onehot, 0))                                                                                 // [L]
	keep = Reshape(keep, 1, 1, maxLen, 1)
	next := &KVCache{Keys: make([]*Node, len(cache.Keys)), Values: make([]*Node, len(cache.Values))}
	onehot, keep = layers.As(onehot, m.dtype()), layers.As(keep, m.dtype())
	place := func(old, nw *Node) *Node {
		var placed *Node
		switch {
		case s == 1:
			// A decoding step: a broadcast product. As an Einsum it is a dot product of length 1
			// per cache element, which the Go backend's small-matrix kernel computes with a
			// horizontal reduction each: most of a batched step's time.
			placed = Mul(nw, Reshape(onehot, 1, 1, maxLen, 1))
		case m.compute.BF16:
			// The Go backend's half-precision products need the left operand contracted on its
			// last axis (see layers' dot).
			placed = Einsum("bhds,sl->bhld", TransposeAllDims(nw, 0, 1, 3, 2), onehot)
		default:
			placed = Einsum("bhsd,sl->bhld", nw, onehot)
		}
		return Add(Mul(old, keep), placed)
	}
	am := attnMask{bias: func(w int) *Node { return m.attentionBias(slots, keyMask, m.cfg.Heads, w) }}
	hidden := m.run(scope, tokens, positions, am, func(l int, k, v *Node) layerKV {
		next.Keys[l] = place(cache.Keys[l], k)
		next.Values[l] = place(cache.Values[l], v)
		return layerKV{next.Keys[l], next.Values[l]}
	}, false)
	return hidden, next
}

// sortedKeys returns the keys of m in order, so loading is deterministic.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
