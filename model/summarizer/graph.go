package summarizer

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX itself.
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/layers"
)

// The network, written here as GoMLX graphs for training (differentiable) and, from the same
// functions, run for decoding in graphnet.go (encoder once, decoder step with a KV cache:
// decoderGraph and outputGraph given a stepCache, any backend). Both read the same variables,
// named below; TestDecodingMatchesTraining checks that they compute the same probabilities. The layers come from
// layers (gradients laid out for the Go backend), with the summarizer's variable names
// (layerVars: "q_w", "q_b", layer norms "gain" and "bias").
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
	// lnEpsilon is the layer norms' epsilon (layerVars.NormEpsilon).
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

// layerVars names and initialises the summarizer's layers: dense variables name_w and name_b in the
// enclosing scope, weights with the store's default (He) initializer.
var layerVars = func() layers.Vars {
	v := layers.Suffixed()
	v.NormEpsilon = lnEpsilon
	return v
}()

// Batch holds the tensors of one training batch, as graph nodes.
//
//	Src, Seg: [batch, srcLen]   source ids (PadID-padded) and segment ids
//	TgtIn:    [batch, tgtLen]   [BOS] + summary ids
//	TgtOut:   [batch, tgtLen]   summary ids + [EOS]; PadID marks positions without a loss
//	TgtGen:   [batch, tgtLen]   position of TgtOut in the generation vocabulary (0 when absent)
//	InGen:    [batch, tgtLen]   float32 1 when TgtOut is in the generation vocabulary, else 0
//	Aspect:   [batch]           aspect index (Hyperparams.NumAspects > 0 only; nil otherwise)
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
func LossGraph(scope *model.Scope, h Hyperparams, b Batch) *Node {
	nll, mask := TokenNLLGraph(scope, h, b)
	return Div(ReduceAllSum(Mul(nll, mask)), Max(ReduceAllSum(mask), OnesLike(ReduceAllSum(mask))))
}

// TokenNLLGraph returns the per-token negative log-likelihood [batch, tgtLen] and the float mask of
// the positions that count (target not padding).
func TokenNLLGraph(scope *model.Scope, h Hyperparams, b Batch) (nll, mask *Node) {
	probs := TargetProbGraph(scope, h, b)
	g := probs.Graph()
	nll = Neg(Log(Max(probs, Scalar(g, dtypes.Float32, minProb))))
	mask = ConvertDType(NotEqual(b.TgtOut, Scalar(g, dtypes.Int32, h.PadID)), dtypes.Float32)
	return nll, mask
}

// TargetProbGraph returns p(TgtOut[b,t] | TgtIn[b,:t+1], Src[b]) for every position, [batch, tgtLen].
func TargetProbGraph(scope *model.Scope, h Hyperparams, b Batch) *Node {
	g := b.Src.Graph()
	batch, srcLen := b.Src.Shape().Dimensions[0], b.Src.Shape().Dimensions[1]
	tgtLen := b.TgtIn.Shape().Dimensions[1]

	src := &sourceStates{bias: sourceBiasGraph(h, b.Src)}
	src.states = EncoderGraph(scope, h, b.Src, b.Seg, src.bias)
	xEmb := targetEmbedGraph(scope, h, b.TgtIn, b.Aspect, nil)
	s, _ := decoderGraph(scope, h, xEmb, src, nil)
	pGen, attn, gate := outputGraph(scope, h, s, xEmb, src, followGraph(h, b.Src, b.TgtIn), nil)

	// The target's probability under the generation vocabulary (0 when it is outside), gathered
	// from the softmax of each row (its gradient a scatter into one entry per row, where a one-hot
	// product would cost passes over all nGen entries).
	n := batch * tgtLen
	rows := Iota(g, shapes.Make(dtypes.Int32, n, 1), 0)
	target := Concatenate([]*Node{rows, Reshape(b.TgtGen, n, 1)}, 1)
	pVocab := Mul(Reshape(Gather(pGen, target), batch, tgtLen), b.InGen) // [B,T]

	// Copy probability: the copy attention summed over the source positions holding the target.
	same := Equal(
		BroadcastToDims(Reshape(b.TgtOut, batch, tgtLen, 1), batch, tgtLen, srcLen),
		BroadcastToDims(Reshape(b.Src, batch, 1, srcLen), batch, tgtLen, srcLen))
	pCopy := layers.SumLast(Mul(attn, ConvertDType(same, dtypes.Float32))) // [B,T]
	return Add(Mul(gate, pVocab), Mul(OneMinus(gate), pCopy))
}

// sourceBiasGraph is the attention bias of source ids [N, S]: 0 on tokens, maskBias on padding.
func sourceBiasGraph(h Hyperparams, src *Node) *Node {
	g := src.Graph()
	valid := NotEqual(src, Scalar(g, dtypes.Int32, h.PadID))
	return Where(valid, ZerosLike(ConvertDType(src, dtypes.Float32)), Scalar(g, dtypes.Float32, maskBias))
}

// EncoderGraph embeds and encodes the source: [batch, srcLen] ids -> [batch, srcLen, d].
func EncoderGraph(scope *model.Scope, h Hyperparams, src, seg, srcBias *Node) *Node {
	return encoderGraph(scope, h, layerVars, src, seg, srcBias)
}

// encoderGraph is EncoderGraph with the layers' variables and layout given (decoding transposes
// the keys first: layers.Vars.KeysTransposed).
func encoderGraph(scope *model.Scope, h Hyperparams, vars layers.Vars, src, seg, srcBias *Node) *Node {
	g := src.Graph()
	batch, srcLen := src.Shape().Dimensions[0], src.Shape().Dimensions[1]
	d := h.DModel
	es := scope.At("embed")
	tokens := es.VariableWithShape("tokens", shapes.Make(dtypes.Float32, h.VocabSize, d)).ValueGraph(g)
	pos := es.VariableWithShape("src_pos", shapes.Make(dtypes.Float32, h.maxPositions(), d)).ValueGraph(g)
	segTable := es.VariableWithShape("segment", shapes.Make(dtypes.Float32, 2, d)).ValueGraph(g)
	x := Gather(tokens, Reshape(src, batch, srcLen, 1))
	x = Add(x, Gather(segTable, Reshape(seg, batch, srcLen, 1)))
	x = Add(x, broadcastPositions(pos, batch, srcLen))
	x = layers.Dropout(scope, x, h.Dropout)

	bias := Reshape(srcBias, batch, 1, 1, srcLen) // broadcast over heads and queries
	for l := range h.EncoderLayers {
		ls := scope.At("encoder").At("layer_%d", l)
		y := vars.LayerNorm(ls.At("ln1"), x)
		x = Add(x, layers.Dropout(ls, vars.MultiHeadAttention(ls.At("self"), y, y, bias, h.Heads), h.Dropout))
		y = vars.LayerNorm(ls.At("ln2"), x)
		x = Add(x, layers.Dropout(ls, ffnGraph(ls.At("ffn"), h, y), h.Dropout))
	}
	return vars.LayerNorm(scope.At("encoder").At("ln"), x)
}

// sourceStates is what the decoder reads from a batch of N encoded sources of length S: their
// attention bias [N, S] and encoder states [N, S, d], and the keys and values its
// attentions take from the states. Training computes those from the states where a layer first
// reads them (the variables are then created in the layers' order); decoding computes them once
// per source, in the encode graph (sourceKeysGraph), and passes them to every step.
type sourceStates struct {
	bias, states *Node
	// cross holds the cross-attention keys and values of each decoder layer, copyKeys the copy
	// attention's keys and copyValues its values (the states as [N, 1, S, d]): nil where computed
	// from the states.
	cross      []attnKV
	copyKeys   *attnKeys
	copyValues *Node
}

// attnKeys are attention keys [.., S, e], or [.., e, S] when transposed (layers.Vars.KeysTransposed:
// the Go backend's fast layout for forward passes).
type attnKeys struct {
	k          *Node
	transposed bool
}

// scores returns the attention scores q·k of queries q [B, H, T, e]: [B, H, T, S].
func (k attnKeys) scores(q *Node) *Node {
	if k.transposed {
		return layers.AttentionScoresKT(q, k.k)
	}
	return layers.AttentionScores(q, k.k)
}

// attnKV are the keys and values [B, H, S, e] of an attention.
type attnKV struct {
	keys   attnKeys
	values *Node
}

// attend is attention of the queries q [B, H, T, e] over the keys and values, with an additive
// bias (nil or broadcastable to the scores [B, H, T, S]).
func (kv attnKV) attend(q, bias *Node) *Node {
	if kv.keys.transposed {
		return layers.AttentionKT(q, kv.keys.k, kv.values, bias)
	}
	return layers.Attention(q, kv.keys.k, kv.values, bias)
}

// crossKV returns the cross-attention keys and values of decoder layer l (scope cs), split in
// heads.
func (src *sourceStates) crossKV(cs *model.Scope, h Hyperparams, l int) attnKV {
	if src.cross != nil {
		return src.cross[l]
	}
	return crossKVGraph(cs, h, src.states, false)
}

// crossKVGraph projects the encoder states [N, S, d] to the keys and values of a cross-attention
// (scope cs), split in heads; with transposed the keys are [N, H, e, S].
func crossKVGraph(cs *model.Scope, h Hyperparams, states *Node, transposed bool) attnKV {
	k := layers.SplitHeads(projGraph(cs, h, "k", states), h.Heads)
	if transposed {
		k = TransposeAllDims(k, 0, 1, 3, 2)
	}
	return attnKV{keys: attnKeys{k: k, transposed: transposed}, values: layers.SplitHeads(projGraph(cs, h, "v", states), h.Heads)}
}

// copyKeysGraph projects the encoder states [N, S, d] to the copy attention's keys (one head over
// the whole width): [N, 1, S, d], or [N, 1, d, S] transposed.
func copyKeysGraph(scope *model.Scope, h Hyperparams, states *Node, transposed bool) attnKeys {
	n, srcLen, d := states.Shape().Dimensions[0], states.Shape().Dimensions[1], h.DModel
	k := projGraph(scope.At("copy"), h, "k", states)
	if transposed {
		return attnKeys{k: Reshape(Transpose(k, 1, 2), n, 1, d, srcLen), transposed: true}
	}
	return attnKeys{k: Reshape(k, n, 1, srcLen, d)}
}

// projGraph is the dense projection name (width d to d, no activation) of scope.
func projGraph(scope *model.Scope, h Hyperparams, name string, x *Node) *Node {
	return layerVars.Dense(scope, name, x, h.DModel, activation.TypeNone)
}

// targetEmbedGraph embeds the decoder input: [batch, tgtLen] -> [batch, tgtLen, d], plus the
// aspect vector of each example ([batch] indices) when the model has them. The tokens are at
// target positions 0..tgtLen-1, or at positions [batch, tgtLen] when given (a decoding step).
func targetEmbedGraph(scope *model.Scope, h Hyperparams, tgtIn, aspect, positions *Node) *Node {
	g := tgtIn.Graph()
	batch, tgtLen := tgtIn.Shape().Dimensions[0], tgtIn.Shape().Dimensions[1]
	d := h.DModel
	es := scope.At("embed")
	tokens := es.VariableWithShape("tokens", shapes.Make(dtypes.Float32, h.VocabSize, d)).ValueGraph(g)
	pos := es.VariableWithShape("tgt_pos", shapes.Make(dtypes.Float32, h.maxPositions(), d)).ValueGraph(g)
	x := Gather(tokens, Reshape(tgtIn, batch, tgtLen, 1))
	if positions == nil {
		x = Add(x, broadcastPositions(pos, batch, tgtLen))
	} else {
		x = Add(x, Gather(pos, Reshape(positions, batch, tgtLen, 1)))
	}
	if h.NumAspects > 0 {
		table := es.VariableWithShape("aspect", shapes.Make(dtypes.Float32, h.NumAspects+1, d)).ValueGraph(g)
		x = Add(x, BroadcastToDims(Reshape(Gather(table, Reshape(aspect, batch, 1)), batch, 1, d), batch, tgtLen, d))
	}
	return x
}

// decoderGraph runs the decoder stack over embedded inputs x [N, T, d] attending to the sources
// src (N of them) and returns the final states [N, T, d]. Without a cache (training) the T
// positions are one target sequence each, under a causal mask. With one (a decoding step, see
// graphnet.go) they are T hypotheses of each source, one token each, whose self-attention reads
// the cache; it then also returns the fed tokens' keys and values [N·T, H, e] of each layer, for
// the host to cache.
func decoderGraph(scope *model.Scope, h Hyperparams, x *Node, src *sourceStates, cache *stepCache) (*Node, []*Node) {
	g := x.Graph()
	tgtLen := x.Shape().Dimensions[1]
	batch, srcLen := src.bias.Shape().Dimensions[0], src.bias.Shape().Dimensions[1]
	x = layers.Dropout(scope, x, h.Dropout)

	var selfBias *Node
	if cache == nil {
		// Causal mask: position t sees positions <= t.
		row := Iota(g, shapes.Make(dtypes.Int32, tgtLen, tgtLen), 0)
		col := Iota(g, shapes.Make(dtypes.Int32, tgtLen, tgtLen), 1)
		causal := Where(GreaterOrEqual(row, col), Zeros(g, shapes.Make(dtypes.Float32, tgtLen, tgtLen)),
			BroadcastToDims(Scalar(g, dtypes.Float32, maskBias), tgtLen, tgtLen))
		selfBias = Reshape(causal, 1, 1, tgtLen, tgtLen) // broadcast in the addition to the scores [B, H, T, T]
	}
	crossBias := Reshape(src.bias, batch, 1, 1, srcLen)

	var newKV []*Node
	for l := range h.DecoderLayers {
		ls := scope.At("decoder").At("layer_%d", l)
		y := layerVars.LayerNorm(ls.At("ln1"), x)
		ss := ls.At("self")
		q, k, v := projGraph(ss, h, "q", y), projGraph(ss, h, "k", y), projGraph(ss, h, "v", y)
		var att *Node
		if cache == nil {
			att = layers.MergeHeads(layers.Attention(layers.SplitHeads(q, h.Heads), layers.SplitHeads(k, h.Heads), layers.SplitHeads(v, h.Heads), selfBias))
		} else {
			var kNew, vNew *Node
			att, kNew, vNew = cache.attend(l, q, k, v)
			newKV = append(newKV, kNew, vNew)
		}
		x = Add(x, layers.Dropout(ls, projGraph(ss, h, "o", att), h.Dropout))

		y = layerVars.LayerNorm(ls.At("ln2"), x)
		cs := ls.At("cross")
		qc := layers.SplitHeads(projGraph(cs, h, "q", y), h.Heads)
		att = layers.MergeHeads(src.crossKV(cs, h, l).attend(qc, crossBias))
		x = Add(x, layers.Dropout(ls, projGraph(cs, h, "o", att), h.Dropout))

		y = layerVars.LayerNorm(ls.At("ln3"), x)
		x = Add(x, layers.Dropout(ls, ffnGraph(ls.At("ffn"), h, y), h.Dropout))
	}
	return layerVars.LayerNorm(scope.At("decoder").At("ln"), x), newKV
}

// broadcastPositions repeats the first length rows of a position table [maxLen, d] for every
// example: [batch, length, d] (its gradient sums over the examples as a product, BroadcastRows).
func broadcastPositions(table *Node, batch, length int) *Node {
	d := table.Shape().Dimensions[1]
	rows := Reshape(Slice(table, AxisRange(0, length)), length*d)
	return Reshape(layers.BroadcastRows(rows, batch), batch, length, d)
}

// ffnGraph is the position-wise feed-forward block: ReLU(x in_w + in_b) out_w + out_b.
func ffnGraph(scope *model.Scope, h Hyperparams, x *Node) *Node {
	return layerVars.FeedForward(scope, x, h.FFNDim, "in", "out")
}

// outputGraph is the output layer over the decoder states s [N, T, d] of inputs embedded as xEmb:
// the distribution over the generation vocabulary [N·T, nGen], the copy attention [N, T, S] over
// the sources (with follow [N, T, S], see followGraph; a decoding step adds its cache's copy
// bonuses to the scores) and the generation gate [N, T].
func outputGraph(scope *model.Scope, h Hyperparams, s, xEmb *Node, src *sourceStates, follow *Node, cache *stepCache) (pGen, attn, gate *Node) {
	batch, tgtLen := s.Shape().Dimensions[0], s.Shape().Dimensions[1]
	pGen = layers.SoftmaxLast(logitsGraph(scope, h, Reshape(s, batch*tgtLen, h.DModel), cache))
	var copyBonus *Node
	if cache != nil {
		copyBonus = cache.copyBonus
	}
	attn, ctxVec := copyAttentionGraph(scope, h, s, src, follow, copyBonus)
	return pGen, attn, copyGateGraph(scope, h, s, ctxVec, xEmb, ReduceMax(follow, 2))
}

// logitsGraph returns the logits over the generation vocabulary of states s [n, d]: tied
// embeddings, the product with the generation vocabulary's rows of the token embeddings (a
// decoding step reads them gathered once, transposed: stepCache.outEmbT).
func logitsGraph(scope *model.Scope, h Hyperparams, s *Node, cache *stepCache) *Node {
	g := s.Graph()
	n, d := s.Shape().Dimensions[0], h.DModel
	genIDs := h.genIDs()
	nGen := len(genIDs)
	var product *Node
	if cache != nil {
		product = layers.Product(s, cache.outEmbT)
	} else {
		outEmb := scope.At("embed").VariableWithShape("tokens", shapes.Make(dtypes.Float32, h.VocabSize, d)).ValueGraph(g)
		if len(h.GenIDs) > 0 {
			outEmb = Gather(outEmb, Reshape(Const(g, genIDs), nGen, 1))
		}
		product = layers.ProductTransposed(s, outEmb)
	}
	outBias := scope.At("embed").VariableWithShape("out_bias", shapes.Make(dtypes.Float32, nGen)).ValueGraph(g)
	return Add(product, layers.BroadcastRows(outBias, n))
}

// followGraph marks, for each decoder input token x_t and source position i, whether the source
// token just before i is x_t: [B,T,S] float32 0/1. Position i is then the natural continuation of
// a copy in progress ("copy the next token"), a prior that lets a small model learn to copy whole
// spans from few examples.
func followGraph(h Hyperparams, src, tgtIn *Node) *Node {
	return followOfGraph(h, previousTokensGraph(h, src), tgtIn)
}

// previousTokensGraph returns the token before each source position, [PAD] at the first: [B, S].
func previousTokensGraph(h Hyperparams, src *Node) *Node {
	g := src.Graph()
	batch, srcLen := src.Shape().Dimensions[0], src.Shape().Dimensions[1]
	return Concatenate([]*Node{BroadcastToDims(Scalar(g, dtypes.Int32, h.PadID), batch, 1), Slice(src, AxisRange(), AxisRange(0, srcLen-1))}, 1)
}

// followOfGraph is followGraph given the previous tokens prev [B, S] (previousTokensGraph).
func followOfGraph(h Hyperparams, prev, tgtIn *Node) *Node {
	g := prev.Graph()
	batch, srcLen := prev.Shape().Dimensions[0], prev.Shape().Dimensions[1]
	tgtLen := tgtIn.Shape().Dimensions[1]
	same := Equal(
		BroadcastToDims(Reshape(tgtIn, batch, tgtLen, 1), batch, tgtLen, srcLen),
		BroadcastToDims(Reshape(prev, batch, 1, srcLen), batch, tgtLen, srcLen))
	notPad := BroadcastToDims(Reshape(NotEqual(prev, Scalar(g, dtypes.Int32, h.PadID)), batch, 1, srcLen), batch, tgtLen, srcLen)
	return ConvertDType(LogicalAnd(same, notPad), dtypes.Float32)
}

// copyAttentionGraph returns the copy attention [B,T,S] of decoder states s over the encoder
// states (plus a learned bonus on "follow" positions, see followGraph, and the decoding bonuses
// extra [B,T,S] when not nil) and the attended context vectors [B,T,d].
func copyAttentionGraph(scope *model.Scope, h Hyperparams, s *Node, src *sourceStates, follow, extra *Node) (attn, ctxVec *Node) {
	batch, tgtLen := s.Shape().Dimensions[0], s.Shape().Dimensions[1]
	srcLen := src.bias.Shape().Dimensions[1]
	d := h.DModel
	cs := scope.At("copy")
	// One attention "head" over the whole width: [B, 1, T, S].
	q := Reshape(projGraph(cs, h, "q", s), batch, 1, tgtLen, d)
	var keys attnKeys
	if src.copyKeys != nil {
		keys = *src.copyKeys
	} else {
		keys = copyKeysGraph(scope, h, src.states, false)
	}
	scores := MulScalar(keys.scores(q), 1/math.Sqrt(float64(d)))
	scores = Add(scores, Reshape(src.bias, batch, 1, 1, srcLen))
	bonus := cs.VariableWithValue("follow_bonus", float32(followBonusInit)).ValueGraph(s.Graph())
	scores = Add(scores, Reshape(Mul(follow, BroadcastToDims(bonus, batch, tgtLen, srcLen)), batch, 1, tgtLen, srcLen))
	if extra != nil {
		scores = Add(scores, Reshape(extra, batch, 1, tgtLen, srcLen))
	}
	p := layers.SoftmaxLast(scores)
	values := src.copyValues
	if values == nil {
		values = Reshape(src.states, batch, 1, srcLen, d)
	}
	ctxVec = layers.AttentionValues(p, values)
	return Reshape(p, batch, tgtLen, srcLen), Reshape(ctxVec, batch, tgtLen, d)
}

// copyGateGraph returns g_t, the probability of generating from the vocabulary, [B,T]. following
// [B,T] is 1 when the input token occurs in the source (a copy may be in progress).
func copyGateGraph(scope *model.Scope, h Hyperparams, s, ctxVec, xEmb, following *Node) *Node {
	g := s.Graph()
	cs := scope.At("copy")
	d := h.DModel
	gs := cs.VariableWithShape("gate_s", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	gc := cs.VariableWithShape("gate_c", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	gx := cs.VariableWithShape("gate_x", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	gb := cs.VariableWithValue("gate_b", float32(gateBiasInit)).ValueGraph(g)
	gf := cs.VariableWithShape("gate_follow", shapes.Make(dtypes.Float32)).ValueGraph(g)
	batch, tgtLen := s.Shape().Dimensions[0], s.Shape().Dimensions[1]
	dot := func(x, w *Node) *Node { // x [B,T,d] · w [d] -> [B,T]
		return Reshape(layers.Product(Reshape(x, batch*tgtLen, d), Reshape(w, d, 1)), batch, tgtLen)
	}
	z := Add(Add(dot(s, gs), dot(ctxVec, gc)), dot(xEmb, gx))
	z = Add(z, Mul(following, BroadcastToDims(gf, z.Shape().Dimensions...)))
	return Sigmoid(Add(z, BroadcastToDims(gb, z.Shape().Dimensions...)))
}
