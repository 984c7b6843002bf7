package tracker

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/ml/layers/activation"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/layers"
)

// The graph is split in three separable parts, each under its own scope, so that a pretrained
// backbone's variables can replace the embeddings and encoder (loaded by path with
// model.LoadVariablesInto) while the head is trained from scratch:
//
//	/model/embeddings  token, position and aspect embeddings
//	/model/encoder     transformer layers (or /model/ngram: n-gram embeddings + attention pooling)
//	/model/head        position features + aspect-specific classifier
//
// Inputs of a batch of B sentences padded to T tokens (PadID = 0 marks padding):
//
//	ids    int32   [B, T]  sentence token ids, without special tokens
//	aspect int32   [B]     index of the aspect in Hyperparams.Aspects
//	pos    float32 [B, NumPosFeatures]  see PositionFeatures

// NumPosFeatures is the width of the position features of a sentence (PositionFeatures).
const NumPosFeatures = 4 + numPosBuckets

const numPosBuckets = 10

// PositionFeatures describes where a sentence sits in its abstract: relative position, its square,
// is-first, is-last, then a one-hot of the relative position in 10 buckets. Aims tend to open an
// abstract and outcomes to close it; the head learns a per-aspect weighting of these.
func PositionFeatures(index, docLength int) [NumPosFeatures]float32 {
	var f [NumPosFeatures]float32
	rel := float32(index) / float32(max(docLength-1, 1))
	f[0] = rel
	f[1] = rel * rel
	if index == 0 {
		f[2] = 1
	}
	if index == docLength-1 {
		f[3] = 1
	}
	f[4+min(int(rel*numPosBuckets), numPosBuckets-1)] = 1
	return f
}

// layerVars names and initialises the tracker's layers (checkpoint paths: /model/encoder/layer_0/qkv/weights, ...).
var layerVars = layers.Scoped(0.02)

func weight(scope *gomlxmodel.Scope, g *Graph, name string, dims ...int) *Node {
	return scope.WithInitializer(layers.NormalInit(scope.Store(), 0.02)).
		VariableWithShape(name, shapes.Make(dtypes.Float32, dims...)).NodeValue(g)
}

func zeros(scope *gomlxmodel.Scope, g *Graph, name string, dims ...int) *Node {
	return scope.WithInitializer(Zeros).VariableWithShape(name, shapes.Make(dtypes.Float32, dims...)).NodeValue(g)
}

// LogitsGraph returns the relevance logit of each sentence of the batch, [B].
func LogitsGraph(scope *gomlxmodel.Scope, hp *Hyperparams, ids, aspect, pos *Node) *Node {
	var pooled *Node
	switch hp.Architecture {
	case ArchNgram:
		pooled = NgramPoolGraph(scope.In("ngram"), hp, ids, aspect)
	default:
		x, mask := EmbeddingsGraph(scope.In("embeddings"), hp, ids, aspect)
		pooled = EncoderFirstGraph(scope.In("encoder"), hp, x, mask) // the aspect token's state
	}
	head := scope.In("head")
	logits := HeadGraph(head, hp, pooled, aspect, pos)
	if hp.Lexical {
		logits = Add(logits, LexicalGraph(head.In("lexical"), hp, ids, aspect))
	}
	return logits
}

// LexicalGraph is a per-aspect logistic-regression term over the sentence's TF-IDF vector of
// tokens and hashed bigrams: a learned weight per (aspect, token) and per (aspect, bigram bucket),
// applied to tf*idf and divided by the vector's L2 norm (repeated tokens are counted as distinct
// for the norm); [B]. The IDF tables (idf_tokens, idf_bigrams) are non-trainable variables that
// Train fills from the training split (SetIDF); they are 1 when never set.
func LexicalGraph(scope *gomlxmodel.Scope, hp *Hyperparams, ids, aspect *Node) *Node {
	g := ids.Graph()
	batch, seq := ids.Shape().Dimensions[0], ids.Shape().Dimensions[1]
	na := len(hp.Aspects)
	idfTok := scope.WithInitializer(Ones).VariableWithShape("idf_tokens", shapes.Make(dtypes.Float32, hp.VocabSize)).SetTrainable(false)
	idfBi := scope.WithInitializer(Ones).VariableWithShape("idf_bigrams", shapes.Make(dtypes.Float32, hp.NgramBuckets)).SetTrainable(false)
	valid := ConvertDType(NotEqual(ids, ZerosLike(ids)), dtypes.Float32) // [B, T]
	asp := BroadcastToDims(ExpandAxes(aspect, -1), batch, seq)           // [B, T]
	at := func(table, index *Node) *Node {
		return Gather(table, Stack([]*Node{asp, index}, -1)) // [B, T]
	}
	idf := Mul(Gather(idfTok.NodeValue(g), ExpandAxes(ids, -1)), valid)
	sum := Mul(at(zeros(scope, g, "tokens", na, hp.VocabSize), ids), idf)
	sumSq := Mul(idf, idf)
	if seq > 1 {
		hash, ok := BigramHashGraph(ids, hp.NgramBuckets)
		bidf := Mul(Gather(idfBi.NodeValue(g), ExpandAxes(hash, -1)), ok)
		sum = Add(sum, Mul(at(zeros(scope, g, "bigrams", na, hp.NgramBuckets), hash), bidf))
		sumSq = Add(sumSq, Mul(bidf, bidf))
	}
	norm := Sqrt(MaxScalar(ReduceSum(sumSq, -1), 1e-6))
	return Div(ReduceSum(sum, -1), norm)
}

// BigramHashGraph returns, for each token, the hash bucket of the bigram ending at it, int32 [B, T],
// and whether that bigram exists (both tokens are not padding), float32 [B, T]. BigramHash is the
// same function on the host.
func BigramHashGraph(ids *Node, buckets int) (hash, ok *Node) {
	g := ids.Graph()
	batch, seq := ids.Shape().Dimensions[0], ids.Shape().Dimensions[1]
	ids64 := ConvertDType(ids, dtypes.Int64)
	prev := Concatenate([]*Node{Zeros(g, shapes.Make(dtypes.Int64, batch, 1)), Slice(ids64, AxisRange(), AxisRange(0, seq-1))}, 1)
	hash = ConvertDType(ModScalar(Add(MulScalar(ids64, 1000003), MulScalar(prev, 7919)), float64(buckets)), dtypes.Int32)
	ok = ConvertDType(LogicalAnd(NotEqual(ids, ZerosLike(ids)), NotEqual(prev, ZerosLike(prev))), dtypes.Float32)
	return hash, ok
}

// BigramHash is the bucket of the bigram (prev, id), as BigramHashGraph computes it.
func BigramHash(prev, id int32, buckets int) int32 {
	return int32((int64(id)*1000003 + int64(prev)*7919) % int64(buckets))
}

// EmbeddingsGraph builds the encoder input: a learned aspect token followed by the sentence tokens,
// each plus a learned position embedding; [B, 1+T, d]. mask [B, 1+T] is false on padding.
func EmbeddingsGraph(scope *gomlxmodel.Scope, hp *Hyperparams, ids, aspect *Node) (x, mask *Node) {
	g := ids.Graph()
	batch, seq := ids.Shape().Dimensions[0], ids.Shape().Dimensions[1]+1
	d := hp.DModel
	tok := weight(scope, g, "tokens", hp.VocabSize, d)
	asp := weight(scope, g, "aspects", len(hp.Aspects), d)
	posEmb := weight(scope, g, "positions", hp.MaxLen, d)
	tokens := Gather(tok, ExpandAxes(ids, -1))                           // [B, T, d]
	aspects := Reshape(Gather(asp, ExpandAxes(aspect, -1)), batch, 1, d) // [B, 1, d]
	x = Concatenate([]*Node{aspects, tokens}, 1)
	// The positions repeated over the batch as one matrix (its gradient a product with ones), so
	// that the addition runs on operands of one shape (see layers).
	pos := layers.BroadcastRows(Reshape(Slice(posEmb, AxisRange(0, seq)), seq*d), batch)
	x = Add(x, Reshape(pos, batch, seq, d))
	x = layerVars.LayerNorm(scope.In("norm"), x)
	x = layers.Dropout(scope, x, hp.Dropout)
	mask = Concatenate([]*Node{Ones(g, shapes.Make(dtypes.Bool, batch, 1)), NotEqual(ids, ZerosLike(ids))}, 1)
	return x, mask
}

// EncoderGraph applies hp.NumLayers pre-norm transformer layers to x [B, S, d] under mask [B, S].
func EncoderGraph(scope *gomlxmodel.Scope, hp *Hyperparams, x, mask *Node) *Node {
	return encoderGraph(scope, hp, x, mask, false)
}

// EncoderFirstGraph is the final state of the first (aspect) token under EncoderGraph, [B, d],
// computed without the rest of the last layer: there only the first position's query, attention,
// feed-forward and norm are formed (the keys and values still come from every position). The
// tracker's logit reads nothing else, so the last layer costs about a third of a full one, with
// the same variables and values.
func EncoderFirstGraph(scope *gomlxmodel.Scope, hp *Hyperparams, x, mask *Node) *Node {
	x = encoderGraph(scope, hp, x, mask, true)
	return Reshape(x, x.Shape().Dimensions[0], hp.DModel)
}

// encoderGraph is EncoderGraph; with firstOnly it returns the first position only, [B, 1, d].
func encoderGraph(scope *gomlxmodel.Scope, hp *Hyperparams, x, mask *Node, firstOnly bool) *Node {
	g := x.Graph()
	batch, seq, d := x.Shape().Dimensions[0], x.Shape().Dimensions[1], x.Shape().Dimensions[2]
	// Additive key mask [B, 1, 1, S]: 0 on tokens, -1e9 on padding, broadcast over heads and queries.
	keyBias := Reshape(MulScalar(OneMinus(ConvertDType(mask, dtypes.Float32)), -1e9), batch, 1, 1, seq)
	for l := range hp.NumLayers {
		layer := scope.In("layer_%d", l)
		last := firstOnly && l == hp.NumLayers-1
		h := layerVars.LayerNorm(layer.In("attention_norm"), x)
		wqkv, bqkv := layerVars.DenseWeights(layer, g, "qkv", d, 3*d)
		wo, bo := layerVars.DenseWeights(layer, g, "attention_output", d, d)
		att := layers.SelfAttention(h, keyBias, wqkv, bqkv, wo, bo, hp.NumHeads, last)
		if last {
			x = Slice(x, AxisRange(), AxisRange(0, 1))
		}
		x = Add(x, layers.Dropout(layer, att, hp.Dropout))
		h = layerVars.LayerNorm(layer.In("ffn_norm"), x)
		h = layerVars.FeedForward(layer, h, hp.FFNDim, "ffn_hidden", "ffn_output")
		x = Add(x, layers.Dropout(layer, h, hp.Dropout))
	}
	if firstOnly && hp.NumLayers == 0 {
		x = Slice(x, AxisRange(), AxisRange(0, 1))
	}
	return layerVars.LayerNorm(scope.In("final_norm"), x)
}

// NgramPoolGraph is the lighter architecture: each token is the sum of its unigram embedding and
// the hashed embeddings of the n-grams (n = 2..NgramOrder) ending at it; the sentence vector
// concatenates an aspect-conditioned attention pooling and a mean pooling; [B, 2d].
func NgramPoolGraph(scope *gomlxmodel.Scope, hp *Hyperparams, ids, aspect *Node) *Node {
	g := ids.Graph()
	batch, seq := ids.Shape().Dimensions[0], ids.Shape().Dimensions[1]
	d := hp.DModel
	valid := NotEqual(ids, ZerosLike(ids)) // [B, T]
	x := Gather(weight(scope, g, "unigrams", hp.VocabSize, d), ExpandAxes(ids, -1))
	if hp.NgramOrder >= 2 {
		table := weight(scope, g, "ngrams", hp.NgramBuckets, d)
		ids64 := ConvertDType(ids, dtypes.Int64)
		hash := ids64
		ok := valid
		for n := 2; n <= hp.NgramOrder; n++ {
			if seq-(n-1) <= 0 {
				break
			}
			// The token n-1 positions back, with padding (id 0) shifted in on the left.
			prev := Concatenate([]*Node{Zeros(g, shapes.Make(dtypes.Int64, batch, n-1)),
				Slice(ids64, AxisRange(), AxisRange(0, seq-(n-1)))}, 1)
			hash = ModScalar(Add(MulScalar(hash, 1000003), MulScalar(prev, 7919)), float64(hp.NgramBuckets))
			ok = LogicalAnd(ok, NotEqual(prev, ZerosLike(prev)))
			e := Gather(table, ExpandAxes(ConvertDType(hash, dtypes.Int32), -1))
			x = Add(x, Mul(e, ExpandAxes(ConvertDType(ok, dtypes.Float32), -1)))
		}
	}
	x = layers.Dropout(scope, x, hp.Dropout)
	// Aspect-conditioned attention pooling: score_t = <tanh(x_t W), q_aspect>.
	keys := Tanh(layerVars.Dense(scope, "attention_keys", x, d, activation.TypeNone))                 // [B, T, d]
	queries := Gather(weight(scope, g, "aspect_queries", len(hp.Aspects), d), ExpandAxes(aspect, -1)) // [B, d]
	scores := ReduceSum(Mul(keys, ExpandAxes(queries, 1)), -1)                                        // [B, T]
	weights := MaskedSoftmax(scores, valid, -1)
	attPool := ReduceSum(Mul(x, ExpandAxes(weights, -1)), 1)
	count := MaxScalar(ReduceSum(ConvertDType(valid, dtypes.Float32), -1), 1)
	validF := ExpandAxes(ConvertDType(valid, dtypes.Float32), -1)
	meanPool := Div(ReduceSum(Mul(x, validF), 1), ExpandAxes(count, -1))
	return Concatenate([]*Node{attPool, meanPool}, -1)
}

// HeadGraph turns the sentence vector pooled [B, P] and the position features into a logit with an
// aspect-specific classifier: logit = <hidden, w[aspect]> + b[aspect] + <pos, v[aspect]>, where
// hidden = ReLU(Dense([pooled, pos])). Sharing hidden across aspects and keeping only the last layer
// per aspect suits the few examples per aspect.
func HeadGraph(scope *gomlxmodel.Scope, hp *Hyperparams, pooled, aspect, pos *Node) *Node {
	g := pooled.Graph()
	na := len(hp.Aspects)
	h := Concatenate([]*Node{pooled, pos}, -1)
	h = layers.Dropout(scope, h, hp.Dropout)
	h = layerVars.Dense(scope, "hidden", h, hp.DModel, activation.TypeRelu)
	h = layers.Dropout(scope, h, hp.Dropout)
	idx := ExpandAxes(aspect, -1)
	w := Gather(weight(scope, g, "aspect_weights", na, hp.DModel), idx)               // [B, d]
	b := Gather(zeros(scope, g, "aspect_bias", na, 1), idx)                           // [B, 1]
	pw := Gather(zeros(scope, g, "aspect_position_weights", na, NumPosFeatures), idx) // [B, F]
	logit := Add(ReduceSum(Mul(h, w), -1), ReduceSum(Mul(pos, pw), -1))
	return Add(logit, Squeeze(b, -1))
}

// WeightedBCEGraph is the binary cross-entropy of logits against labels (0/1), weighted per example
// and normalised by the total weight: sum(w * bce) / sum(w).
func WeightedBCEGraph(logits, labels, weights *Node) *Node {
	// log(1 + exp(z)) - y z, in the overflow-free form max(z, 0) + log1p(exp(-|z|)) - y z.
	z := logits
	l := Sub(Add(Max(z, ZerosLike(z)), Log1p(Exp(Neg(Abs(z))))), Mul(labels, z))
	return Div(ReduceAllSum(Mul(l, weights)), MaxScalar(ReduceAllSum(weights), 1e-9))
}
