package summarizer

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX itself.
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"
)

// The network, written once here for training (GoMLX graph, differentiable) and once in forward.go
// for inference (plain Go, with a KV cache). Both read the same variables, named below; the test
// TestGraphMatchesForward checks that they compute the same probabilities.
//
//	source:  tokens + src_pos + segment (0 = aspect and tracked sentences, 1 = full abstract)
//	encoder: pre-LN blocks of self-attention and ReLU feed-forward, final LN
//	target:  tokens + tgt_pos;  decoder: pre-LN blocks of causal self-attention, cross-attention,
//	         feed-forward, final LN -> state s_t
//	output:  p(w) = g_t * softmax(s_t E^T + b)[w] + (1 - g_t) * sum_{i: src_i = w} a_t,i
//	         where a_t is a separate copy attention of s_t over the encoder states, with a learned
//	         bonus on positions i whose previous source token is the input token x_t (continuing
//	         a copy), and g_t = sigmoid(s_t.gs + c_t.gc + x_t.gx + f_t.gf + gb) (pointer-generator,
//	         See et al. 2017), c_t = a_t-weighted encoder states, x_t the decoder input embedding,
//	         f_t = 1 when x_t occurs in the source (before a non-first position).
const (
	lnEpsilon = 1e-5
	// maskBias is added to the attention scores of masked positions.
	maskBias = -1e9
	// followBonusInit is the initial copy-attention bonus of "follow" positions (see followGraph).
	followBonusInit = 2.0
	// gateBiasInit starts the generation gate at sigmoid(-1) = 0.27: summaries copy most of their
	// words from the tracked sentences, so the copy path gets most of the mass from the start.
	gateBiasInit = -1.0
	// minProb keeps log(p) finite for a target that neither softmax nor copy can produce.
	minProb = 1e-9
)

// Batch holds the tensors of one training batch, as graph nodes.
//
//	Src, Seg: [batch, srcLen]   source ids (PadID-padded) and segment ids
//	TgtIn:    [batch, tgtLen]   [BOS] + summary ids
//	TgtOut:   [batch, tgtLen]   summary ids + [EOS]; PadID marks positions without a loss
//	TgtGen:   [batch, tgtLen]   position of TgtOut in the generation vocabulary (0 when absent)
//	InGen:    [batch, tgtLen]   float32 1 when TgtOut is in the generation vocabulary, else 0
//	Aspect:   [batch]           aspect index (Hyper.NumAspects > 0 only; nil otherwise)
type Batch struct {
	Src, Seg, TgtIn, TgtOut, TgtGen, InGen, Aspect *Node
}

// BatchFromInputs names the graph inputs of a batch, in the order of training.Batch.Inputs.
func BatchFromInputs(inputs []*Node) Batch {
	b := Batch{Src: inputs[0], Seg: inputs[1], TgtIn: inputs[2], TgtOut: inputs[3], TgtGen: inputs[4], InGen: inputs[5]}
	if len(inputs) > 6 {
		b.Aspect = inputs[6]
	}
	return b
}

// LossGraph returns the mean negative log-likelihood per target token of the batch under the
// copy-augmented output distribution.
func LossGraph(scope *model.Scope, h Hyper, b Batch) *Node {
	nll, mask := TokenNLLGraph(scope, h, b)
	return Div(ReduceAllSum(Mul(nll, mask)), Max(ReduceAllSum(mask), OnesLike(ReduceAllSum(mask))))
}

// TokenNLLGraph returns the per-token negative log-likelihood [batch, tgtLen] and the float mask of
// the positions that count (target not padding).
func TokenNLLGraph(scope *model.Scope, h Hyper, b Batch) (nll, mask *Node) {
	probs := TargetProbGraph(scope, h, b)
	g := probs.Graph()
	nll = Neg(Log(Max(probs, Scalar(g, dtypes.Float32, minProb))))
	mask = ConvertDType(NotEqual(b.TgtOut, Scalar(g, dtypes.Int32, h.PadID)), dtypes.Float32)
	return nll, mask
}

// TargetProbGraph returns p(TgtOut[b,t] | TgtIn[b,:t+1], Src[b]) for every position, [batch, tgtLen].
func TargetProbGraph(scope *model.Scope, h Hyper, b Batch) *Node {
	g := b.Src.Graph()
	batch, srcLen := b.Src.Shape().Dimensions[0], b.Src.Shape().Dimensions[1]
	tgtLen := b.TgtIn.Shape().Dimensions[1]
	d := h.DModel

	srcValid := NotEqual(b.Src, Scalar(g, dtypes.Int32, h.PadID))                                                   // [B,S]
	srcBias := Where(srcValid, ZerosLike(ConvertDType(b.Src, dtypes.Float32)), Scalar(g, dtypes.Float32, maskBias)) // [B,S]

	enc := EncoderGraph(scope, h, b.Src, b.Seg, srcBias)
	xEmb := targetEmbedGraph(scope, h, b.TgtIn, b.Aspect)
	s := DecoderGraph(scope, h, xEmb, enc, srcBias)

	// Vocabulary distribution over the generation vocabulary (tied embeddings), probability of the
	// target token (0 when it is outside the generation vocabulary).
	genIDs := h.genIDs()
	nGen := len(genIDs)
	tokens := scope.At("embed").VariableWithShape("tokens", shapes.Make(dtypes.Float32, h.VocabSize, d)).ValueGraph(g)
	outBias := scope.At("embed").VariableWithShape("out_bias", shapes.Make(dtypes.Float32, nGen)).ValueGraph(g)
	outEmb := tokens
	if len(h.GenIDs) > 0 {
		outEmb = Gather(tokens, Reshape(Const(g, genIDs), nGen, 1))
	}
	logits := Add(Einsum("btd,vd->btv", s, outEmb), BroadcastToDims(Reshape(outBias, 1, 1, nGen), batch, tgtLen, nGen))
	logp := LogSoftmax(logits, 2)
	pVocab := Mul(Exp(ReduceSum(Mul(OneHot(b.TgtGen, nGen, dtypes.Float32), logp), 2)), b.InGen) // [B,T]

	// Copy distribution: attention of s over the encoder states, summed over the source positions
	// holding the target token.
	follow := followGraph(h, b.Src, b.TgtIn)
	attn, ctxVec := copyAttentionGraph(scope, h, s, enc, srcBias, follow)
	same := Equal(
		BroadcastToDims(Reshape(b.TgtOut, batch, tgtLen, 1), batch, tgtLen, srcLen),
		BroadcastToDims(Reshape(b.Src, batch, 1, srcLen), batch, tgtLen, srcLen))
	pCopy := ReduceSum(Mul(attn, ConvertDType(same, dtypes.Float32)), 2) // [B,T]

	gate := copyGateGraph(scope, h, s, ctxVec, xEmb, ReduceMax(follow, 2)) // [B,T]
	return Add(Mul(gate, pVocab), Mul(OneMinus(gate), pCopy))
}

// EncoderGraph embeds and encodes the source: [batch, srcLen] ids -> [batch, srcLen, d].
func EncoderGraph(scope *model.Scope, h Hyper, src, seg, srcBias *Node) *Node {
	g := src.Graph()
	batch, srcLen := src.Shape().Dimensions[0], src.Shape().Dimensions[1]
	d := h.DModel
	es := scope.At("embed")
	tokens := es.VariableWithShape("tokens", shapes.Make(dtypes.Float32, h.VocabSize, d)).ValueGraph(g)
	pos := es.VariableWithShape("src_pos", shapes.Make(dtypes.Float32, h.maxPositions(), d)).ValueGraph(g)
	segTable := es.VariableWithShape("segment", shapes.Make(dtypes.Float32, 2, d)).ValueGraph(g)
	x := Gather(tokens, Reshape(src, batch, srcLen, 1))
	x = Add(x, Gather(segTable, Reshape(seg, batch, srcLen, 1)))
	x = Add(x, BroadcastToDims(Reshape(Slice(pos, AxisRange(0, srcLen)), 1, srcLen, d), batch, srcLen, d))
	x = layers.DropoutStatic(scope, x, h.Dropout)

	bias := keyBias(srcBias, h.Heads, srcLen)
	for l := range h.EncoderLayers {
		ls := scope.At("encoder").At("layer_%d", l)
		y := layerNormGraph(ls.At("ln1"), x)
		x = Add(x, layers.DropoutStatic(ls, attentionGraph(ls.At("self"), h, y, y, bias), h.Dropout))
		y = layerNormGraph(ls.At("ln2"), x)
		x = Add(x, layers.DropoutStatic(ls, ffnGraph(ls.At("ffn"), h, y), h.Dropout))
	}
	return layerNormGraph(scope.At("encoder").At("ln"), x)
}

// targetEmbedGraph embeds the decoder input: [batch, tgtLen] -> [batch, tgtLen, d], plus the
// aspect vector of each example ([batch] indices) when the model has them.
func targetEmbedGraph(scope *model.Scope, h Hyper, tgtIn, aspect *Node) *Node {
	g := tgtIn.Graph()
	batch, tgtLen := tgtIn.Shape().Dimensions[0], tgtIn.Shape().Dimensions[1]
	d := h.DModel
	es := scope.At("embed")
	tokens := es.VariableWithShape("tokens", shapes.Make(dtypes.Float32, h.VocabSize, d)).ValueGraph(g)
	pos := es.VariableWithShape("tgt_pos", shapes.Make(dtypes.Float32, h.maxPositions(), d)).ValueGraph(g)
	x := Gather(tokens, Reshape(tgtIn, batch, tgtLen, 1))
	x = Add(x, BroadcastToDims(Reshape(Slice(pos, AxisRange(0, tgtLen)), 1, tgtLen, d), batch, tgtLen, d))
	if h.NumAspects > 0 {
		table := es.VariableWithShape("aspect", shapes.Make(dtypes.Float32, h.NumAspects+1, d)).ValueGraph(g)
		x = Add(x, BroadcastToDims(Reshape(Gather(table, Reshape(aspect, batch, 1)), batch, 1, d), batch, tgtLen, d))
	}
	return x
}

// DecoderGraph runs the decoder stack over embedded inputs x [batch, tgtLen, d] attending to the
// encoder states enc [batch, srcLen, d]; it returns the final states [batch, tgtLen, d].
func DecoderGraph(scope *model.Scope, h Hyper, x, enc, srcBias *Node) *Node {
	g := x.Graph()
	tgtLen := x.Shape().Dimensions[1]
	batch, srcLen := enc.Shape().Dimensions[0], enc.Shape().Dimensions[1]
	x = layers.DropoutStatic(scope, x, h.Dropout)

	// Causal mask: position t sees positions <= t.
	row := Iota(g, shapes.Make(dtypes.Int32, tgtLen, tgtLen), 0)
	col := Iota(g, shapes.Make(dtypes.Int32, tgtLen, tgtLen), 1)
	causal := Where(GreaterOrEqual(row, col), Zeros(g, shapes.Make(dtypes.Float32, tgtLen, tgtLen)),
		BroadcastToDims(Scalar(g, dtypes.Float32, maskBias), tgtLen, tgtLen))
	selfBias := BroadcastToDims(Reshape(causal, 1, 1, tgtLen, tgtLen), batch, h.Heads, tgtLen, tgtLen)
	crossBias := BroadcastToDims(Reshape(srcBias, batch, 1, 1, srcLen), batch, h.Heads, tgtLen, srcLen)

	for l := range h.DecoderLayers {
		ls := scope.At("decoder").At("layer_%d", l)
		y := layerNormGraph(ls.At("ln1"), x)
		x = Add(x, layers.DropoutStatic(ls, attentionGraph(ls.At("self"), h, y, y, selfBias), h.Dropout))
		y = layerNormGraph(ls.At("ln2"), x)
		x = Add(x, layers.DropoutStatic(ls, attentionGraph(ls.At("cross"), h, y, enc, crossBias), h.Dropout))
		y = layerNormGraph(ls.At("ln3"), x)
		x = Add(x, layers.DropoutStatic(ls, ffnGraph(ls.At("ffn"), h, y), h.Dropout))
	}
	return layerNormGraph(scope.At("decoder").At("ln"), x)
}

// keyBias broadcasts a [batch, keys] additive mask to [batch, heads, queries, keys].
func keyBias(bias *Node, heads, queries int) *Node {
	batch, keys := bias.Shape().Dimensions[0], bias.Shape().Dimensions[1]
	return BroadcastToDims(Reshape(bias, batch, 1, 1, keys), batch, heads, queries, keys)
}

// attentionGraph is multi-head attention of queries xq [B,T,d] over xkv [B,S,d] with an additive
// bias [B,H,T,S].
func attentionGraph(scope *model.Scope, h Hyper, xq, xkv, bias *Node) *Node {
	batch, tq := xq.Shape().Dimensions[0], xq.Shape().Dimensions[1]
	tk := xkv.Shape().Dimensions[1]
	hd := h.headDim()
	q := Reshape(denseGraph(scope, "q", xq, h.DModel), batch, tq, h.Heads, hd)
	k := Reshape(denseGraph(scope, "k", xkv, h.DModel), batch, tk, h.Heads, hd)
	v := Reshape(denseGraph(scope, "v", xkv, h.DModel), batch, tk, h.Heads, hd)
	scores := MulScalar(Einsum("bthd,bshd->bhts", q, k), 1/math.Sqrt(float64(hd)))
	probs := Softmax(Add(scores, bias), 3)
	out := Reshape(Einsum("bhts,bshd->bthd", probs, v), batch, tq, h.DModel)
	return denseGraph(scope, "o", out, h.DModel)
}

// ffnGraph is the position-wise feed-forward block: ReLU(x W1 + b1) W2 + b2.
func ffnGraph(scope *model.Scope, h Hyper, x *Node) *Node {
	return denseGraph(scope, "out", activation.Relu(denseGraph(scope, "in", x, h.FFNDim)), h.DModel)
}

// denseGraph is x [B,T,in] W [in,out] + b, with variables name_w and name_b.
func denseGraph(scope *model.Scope, name string, x *Node, out int) *Node {
	g := x.Graph()
	in := x.Shape().Dimensions[2]
	w := scope.VariableWithShape(name+"_w", shapes.Make(dtypes.Float32, in, out)).ValueGraph(g)
	b := scope.VariableWithShape(name+"_b", shapes.Make(dtypes.Float32, out)).ValueGraph(g)
	y := Einsum("bti,io->bto", x, w)
	dims := y.Shape().Dimensions
	return Add(y, BroadcastToDims(Reshape(b, 1, 1, out), dims...))
}

// layerNormGraph normalises the last axis, with learned gain (init 1) and bias (init 0).
func layerNormGraph(scope *model.Scope, x *Node) *Node {
	g := x.Graph()
	d := x.Shape().Dimensions[2]
	ones := make([]float32, d)
	for i := range ones {
		ones[i] = 1
	}
	gain := scope.VariableWithValue("gain", ones).ValueGraph(g)
	bias := scope.VariableWithShape("bias", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	return nn.LayerNorm(x, []int{2}, lnEpsilon, gain, bias, nil)
}

// followGraph marks, for each decoder input token x_t and source position i, whether the source
// token just before i is x_t: [B,T,S] float32 0/1. Position i is then the natural continuation of
// a copy in progress ("copy the next token"), a prior that lets a small model learn to copy whole
// spans from few examples. Shared with the Go decoder, which knows x_t at each step.
func followGraph(h Hyper, src, tgtIn *Node) *Node {
	g := src.Graph()
	batch, srcLen := src.Shape().Dimensions[0], src.Shape().Dimensions[1]
	tgtLen := tgtIn.Shape().Dimensions[1]
	prev := Concatenate([]*Node{BroadcastToDims(Scalar(g, dtypes.Int32, h.PadID), batch, 1), Slice(src, AxisRange(), AxisRange(0, srcLen-1))}, 1)
	same := Equal(
		BroadcastToDims(Reshape(tgtIn, batch, tgtLen, 1), batch, tgtLen, srcLen),
		BroadcastToDims(Reshape(prev, batch, 1, srcLen), batch, tgtLen, srcLen))
	notPad := BroadcastToDims(Reshape(NotEqual(prev, Scalar(g, dtypes.Int32, h.PadID)), batch, 1, srcLen), batch, tgtLen, srcLen)
	return ConvertDType(LogicalAnd(same, notPad), dtypes.Float32)
}

// copyAttentionGraph returns the copy attention [B,T,S] of decoder states s over the encoder
// states (plus a learned bonus on "follow" positions, see followGraph) and the attended context
// vectors [B,T,d].
func copyAttentionGraph(scope *model.Scope, h Hyper, s, enc, srcBias, follow *Node) (attn, ctxVec *Node) {
	batch, tgtLen := s.Shape().Dimensions[0], s.Shape().Dimensions[1]
	srcLen := enc.Shape().Dimensions[1]
	cs := scope.At("copy")
	q := denseGraph(cs, "q", s, h.DModel)
	k := denseGraph(cs, "k", enc, h.DModel)
	scores := MulScalar(Einsum("btd,bsd->bts", q, k), 1/math.Sqrt(float64(h.DModel)))
	scores = Add(scores, BroadcastToDims(Reshape(srcBias, batch, 1, srcLen), batch, tgtLen, srcLen))
	bonus := cs.VariableWithValue("follow_bonus", float32(followBonusInit)).ValueGraph(s.Graph())
	scores = Add(scores, Mul(follow, BroadcastToDims(bonus, batch, tgtLen, srcLen)))
	attn = Softmax(scores, 2)
	return attn, Einsum("bts,bsd->btd", attn, enc)
}

// copyGateGraph returns g_t, the probability of generating from the vocabulary, [B,T]. following
// [B,T] is 1 when the input token occurs in the source (a copy may be in progress).
func copyGateGraph(scope *model.Scope, h Hyper, s, ctxVec, xEmb, following *Node) *Node {
	g := s.Graph()
	cs := scope.At("copy")
	d := h.DModel
	gs := cs.VariableWithShape("gate_s", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	gc := cs.VariableWithShape("gate_c", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	gx := cs.VariableWithShape("gate_x", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	gb := cs.VariableWithValue("gate_b", float32(gateBiasInit)).ValueGraph(g)
	gf := cs.VariableWithShape("gate_follow", shapes.Make(dtypes.Float32)).ValueGraph(g)
	z := Add(Add(Einsum("btd,d->bt", s, gs), Einsum("btd,d->bt", ctxVec, gc)), Einsum("btd,d->bt", xEmb, gx))
	z = Add(z, Mul(following, BroadcastToDims(gf, z.Shape().Dimensions...)))
	return Sigmoid(Add(z, BroadcastToDims(gb, z.Shape().Dimensions...)))
}
