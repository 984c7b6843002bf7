package encoder

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/ml/layers/activation"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/tracksum/tracksum/hf/encoder/layout"
	"github.com/tracksum/tracksum/layers"
)

// Hidden runs the encoder over tokens [B, T] (int32 ids) with tokenTypes [B, T] (int32 segment
// ids; nil means all 0) and mask [B, T] (1 for real tokens, 0 for padding, any numeric dtype; nil
// means no padding), and returns the last hidden state [B, T, Hidden] in float32, as transformers'
// BertModel(input_ids, attention_mask, token_type_ids).last_hidden_state (DeBERTa:
// DebertaV2Model's, see deberta.go). Positions are 0..T-1; T may not exceed MaxTokens (when not
// 0). Dropout (hidden, attention and the adapters') applies only when scope's store is training
// the graph. Ids out of range are the caller's to prevent (the tokenizer's vocabulary is the
// model's).
func (m *Model) Hidden(scope *gomlxmodel.Scope, tokens, tokenTypes, mask *Node) *Node {
	g := tokens.Graph()
	if tokens.Rank() != 2 {
		exceptions.Panicf("encoder.Hidden: tokens shape %s, want [batch, seq]", tokens.Shape())
	}
	if m.cfg.Disentangled {
		return m.hiddenDisentangled(scope, tokens, tokenTypes, mask)
	}
	batch, seq := tokens.Shape().Dimensions[0], tokens.Shape().Dimensions[1]
	c := m.cfg
	if seq > c.MaxPositions-c.PositionOffset {
		exceptions.Panicf("encoder.Hidden: %d tokens, more than max_position_embeddings %d allows (position offset %d)", seq, c.MaxPositions, c.PositionOffset)
	}
	if tokenTypes == nil || c.TypeVocab == 1 {
		// One token type (RoBERTa): transformers' RoBERTa tokenizers return no segment ids.
		tokenTypes = Zeros(g, shapes.Make(dtypes.Int32, batch, seq))
	}
	dt := m.dtype()
	// BertEmbeddings: word + token type + absolute position, LayerNorm, dropout.
	x := Gather(m.weightAs(g, "embeddings.word_embeddings.weight", dt, nil), ExpandAxes(ConvertDType(tokens, dtypes.Int32), -1))
	x = Add(x, Gather(m.weightAs(g, "embeddings.token_type_embeddings.weight", dt, nil), ExpandAxes(ConvertDType(tokenTypes, dtypes.Int32), -1)))
	posTable := m.weightAs(g, "embeddings.position_embeddings.weight", dt, nil)
	if c.PositionOffset == 0 {
		pos := Slice(posTable, AxisRange(0, seq))
		x = Add(x, BroadcastToDims(ExpandAxes(pos, 0), batch, seq, c.Hidden))
	} else {
		// create_position_ids_from_input_ids: cumsum(ids != pad) * (ids != pad) + pad.
		ids := ConvertDType(tokens, dtypes.Int32)
		notPad := ConvertDType(NotEqual(ids, Scalar(g, dtypes.Int32, c.PadTokenID)), dtypes.Int32)
		pos := AddScalar(Mul(CumSum(notPad, 1), notPad), float64(c.PadTokenID))
		x = Add(x, Gather(posTable, ExpandAxes(pos, -1)))
	}
	x = m.layerNorm(g, "embeddings.LayerNorm", x, nil)
	x = layers.Dropout(scope, x, c.HiddenDropout)

	// BertModel.get_extended_attention_mask: (1 - mask) * finfo(float32).min added to the scores of
	// every head and query, so padded keys get no attention weight.
	var bias *Node
	if mask != nil {
		keep := ConvertDType(mask, dtypes.Float32)
		bias = MulScalar(OneMinus(keep), -math.MaxFloat32)
		bias = BroadcastToDims(Reshape(bias, batch, 1, 1, seq), batch, c.Heads, seq, seq)
	}
	return m.eachLayer(x, func(i int, x, anchor *Node) *Node {
		layer := scope.In("layer_%d", i)
		p := layout.LayerKey(i)
		// BertSelfAttention.
		q := layers.SplitHeads(m.linearIn(layer, p+".attention.self.query", x, anchor), c.Heads)
		k := layers.SplitHeads(m.linearIn(layer, p+".attention.self.key", x, anchor), c.Heads)
		v := layers.SplitHeads(m.linearIn(layer, p+".attention.self.value", x, anchor), c.Heads)
		// The softmax and its mask in float32 (the scores' product in the model's dtype), the keys
		// transposed first: the fast layout of the Go backend's small products (layers.AttentionScoresKT).
		scores := layers.As(MulScalar(layers.AttentionScoresKT(q, TransposeAllDims(k, 0, 1, 3, 2)), 1/math.Sqrt(float64(c.HeadDim()))), dtypes.Float32)
		if bias != nil {
			scores = Add(scores, bias)
		}
		probs := layers.As(layers.Dropout(layer, layers.SoftmaxLast(scores), c.AttentionDropout), dt)
		ctx := layers.MergeHeads(layers.AttentionValues(probs, v))
		// BertSelfOutput: dense, dropout, LayerNorm of the residual sum (post-LN).
		h := layers.Dropout(layer, m.linearIn(layer, p+".attention.output.dense", ctx, anchor), c.HiddenDropout)
		a := m.layerNorm(g, p+".attention.output.LayerNorm", Add(h, x), anchor)
		// BertIntermediate and BertOutput.
		inter := m.activation(m.linearIn(layer, p+".intermediate.dense", a, anchor))
		h = layers.Dropout(layer, m.linearIn(layer, p+".output.dense", inter, anchor), c.HiddenDropout)
		return m.layerNorm(g, p+".output.LayerNorm", Add(h, a), anchor)
	})
}

// eachLayer runs layer over x for every encoder layer i and returns the last one's output in
// float32. Under gradient checkpointing each layer is a checkpointed block (see decoder): only its
// input is kept for the backward pass, and anchor, that input, is what the layer's weights are
// converted under (see weightAs); without checkpointing anchor is nil.
func (m *Model) eachLayer(x *Node, layer func(i int, x, anchor *Node) *Node) *Node {
	for i := range m.cfg.Layers {
		var anchor *Node
		if m.compute.GradientCheckpointing {
			x = x.Checkpoint()
			anchor = x
		}
		x = layer(i, x, anchor)
	}
	if m.compute.GradientCheckpointing {
		x = x.StopCheckpoint()
	}
	return layers.As(x, dtypes.Float32)
}

// CLS returns the hidden state of the first token ([CLS]) of hidden [B, T, Hidden]: [B, Hidden].
func CLS(hidden *Node) *Node {
	return Squeeze(Slice(hidden, AxisRange(), AxisElem(0)), 1)
}

// Pooled returns BertPooler's output, tanh(dense(CLS)) [B, Hidden] (DeBERTa's ContextPooler:
// pooler_hidden_act instead of tanh), when the checkpoint has pooler weights, and the [CLS] hidden
// state itself when it has none (a BertForMaskedLM checkpoint such as PubMedBERT; transformers
// would add a randomly initialised pooler there, which we leave out).
func (m *Model) Pooled(scope *gomlxmodel.Scope, hidden *Node) *Node {
	cls := CLS(hidden)
	if !m.pooler {
		return cls
	}
	return layers.As(m.poolerActivation(m.linear(scope.In("pooler"), "pooler.dense", layers.As(cls, m.dtype()))), dtypes.Float32)
}

// Classify applies the sequence-classification head to pooled [B, Hidden] (Pooled's output) and
// returns [B, labels] in float32; AddClassifier must have been called. BertForSequenceClassification's
// head is dropout (hidden dropout, training graphs only) then classifier. RobertaClassificationHead
// (a snapshot carrying classifier.dense and classifier.out_proj; RoBERTa has no pooler, so pooled
// is the <s> token's hidden state) is dropout, dense, tanh, dropout, out_proj.
func (m *Model) Classify(scope *gomlxmodel.Scope, pooled *Node) *Node {
	g := pooled.Graph()
	sc := scope.In("classifier")
	if ow, ob := m.head["classifier.out_proj.weight"], m.head["classifier.out_proj.bias"]; ow != nil && ob != nil {
		dw, db := m.head["classifier.dense.weight"], m.head["classifier.dense.bias"]
		x := layers.Dropout(sc, pooled, m.cfg.HiddenDropout)
		x = Tanh(dense(x, dw.NodeValue(g), db.NodeValue(g)))
		x = layers.Dropout(sc.In("out_proj"), x, m.cfg.HiddenDropout)
		return dense(x, ow.NodeValue(g), ob.NodeValue(g))
	}
	w, b := m.head["classifier.weight"], m.head["classifier.bias"]
	if w == nil || b == nil {
		exceptions.Panicf("encoder.Classify: no classifier: call AddClassifier first")
	}
	x := layers.Dropout(sc, pooled, m.cfg.HiddenDropout)
	return dense(x, w.NodeValue(g), b.NodeValue(g))
}

// dtype is the dtype of the base products and activations: bfloat16 with Compute.BF16, else float32.
func (m *Model) dtype() dtypes.DType {
	if m.compute.BF16 {
		return dtypes.BFloat16
	}
	return dtypes.Float32
}

// weightAs returns the base weight of relative key rel as a dt node. With anchor (a node of a
// checkpointed layer), a conversion depends on it, so that GoMLX recomputes the converted copy in
// the backward pass instead of keeping it from the forward pass.
func (m *Model) weightAs(g *Graph, rel string, dt dtypes.DType, anchor *Node) *Node {
	v := m.base[m.keys[rel]]
	if v == nil {
		exceptions.Panicf("encoder: weight %s was not loaded", m.prefix+rel)
	}
	return layers.ConvertFrozen(v.NodeValue(g), dt, anchor)
}

// linear is nn.Linear of module key (relative, without ".weight") over the last axis of x, plus
// the module's adapter when it has one: x Wᵀ + b + Scale · (dropout(x) Aᵀ) Bᵀ, in x's dtype.
func (m *Model) linear(scope *gomlxmodel.Scope, key string, x *Node) *Node {
	return m.linearIn(scope, key, x, nil)
}

// linearIn is linear with the base weights converted under anchor (see weightAs). The adapter's
// path is float32 (PEFT without autocast: the input cast to the adapter's dtype, the sum with the
// base output cast back).
func (m *Model) linearIn(scope *gomlxmodel.Scope, key string, x, anchor *Node) *Node {
	g := x.Graph()
	dt := x.DType()
	y := dense(x, m.weightAs(g, key+".weight", dt, anchor), m.weightAs(g, key+".bias", dt, anchor))
	mod := m.prefix + key
	ad, ok := m.adapters[mod]
	if !ok {
		return y
	}
	xin := layers.Dropout(scope.In("%s", key+".lora"), layers.As(x, dtypes.Float32), m.lora.Dropout)
	down := dense(xin, ad.A.NodeValue(g), nil)
	return layers.As(Add(layers.As(y, dtypes.Float32), MulScalar(dense(down, ad.B.NodeValue(g), nil), m.lora.Scale())), dt)
}

// dense is x [..., in] @ wᵀ (w [out, in], Hugging Face's layout) + b ([out] or nil): [..., out].
func dense(x, w, b *Node) *Node {
	dims := x.Shape().Dimensions
	in, out := w.Shape().Dimensions[1], w.Shape().Dimensions[0]
	n := x.Shape().Size() / in
	y := layers.ProductTransposed(Reshape(x, n, in), w)
	if b != nil {
		y = Add(y, layers.BroadcastRows(b, n))
	}
	return Reshape(y, append(append([]int{}, dims[:len(dims)-1]...), out)...)
}

// layerNorm is nn.LayerNorm(Hidden, eps=layer_norm_eps) of module key (relative), computed in
// float32 and returned in x's dtype. anchor: see weightAs.
func (m *Model) layerNorm(g *Graph, key string, x, anchor *Node) *Node {
	y := layers.LayerNorm(layers.As(x, dtypes.Float32), m.weightAs(g, key+".weight", dtypes.Float32, anchor), m.weightAs(g, key+".bias", dtypes.Float32, anchor), m.cfg.LayerNormEps)
	return layers.As(y, x.DType())
}

// activation is transformers' ACT2FN[hidden_act].
func (m *Model) activation(x *Node) *Node { return m.activationOf(m.cfg.HiddenAct, x) }

// activationOf is ACT2FN[name] for the activations ConfigOf accepts; "" is tanh.
func (m *Model) activationOf(name string, x *Node) *Node {
	switch name {
	case "", "tanh":
		return Tanh(x)
	case "gelu":
		return activation.Gelu(x) // erf form, as nn.functional.gelu
	case "gelu_new", "gelu_pytorch_tanh":
		return activation.GeluApproximate(x)
	case "relu":
		return activation.Relu(x)
	case "silu", "swish":
		return activation.Swish(x)
	}
	exceptions.Panicf("encoder: activation %q", name)
	return nil
}
