package encoder

import (
	"math"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/tracksum/tracksum/hf/encoder/layout"
	"github.com/tracksum/tracksum/layers"
)

// DeBERTa-v2 / DeBERTa-v3 (Config.Disentangled), written from transformers'
// modeling_deberta_v2.py: DebertaV2Embeddings, DebertaV2Encoder with DisentangledSelfAttention,
// and ContextPooler (Pooled). The output layers (attention output, intermediate, output) are
// BERT's post-LN blocks under the same names.

// LogBucketPosition is make_log_bucket_position of one relative position rel = q - k: rel itself
// within ±bucketSize/2, else a logarithmic bucket up to about ±bucketSize/2·2 at maxPosition. The
// arithmetic is float32, as torch computes it there, so that the buckets' edges agree.
func LogBucketPosition(rel, bucketSize, maxPosition int) int {
	mid := bucketSize / 2
	abs := rel
	if abs < 0 {
		abs = -abs
	}
	if rel < mid && rel > -mid {
		abs = mid - 1
	}
	if abs <= mid {
		return rel
	}
	logf := func(x float32) float32 { return float32(math.Log(float64(x))) }
	ratio := float32(abs) / float32(mid)
	base := logf(float32(float64(maxPosition-1) / float64(mid)))
	v := float32(math.Ceil(float64(logf(ratio)/base*float32(mid-1)))) + float32(mid)
	if rel < 0 {
		return -int(v)
	}
	return int(v)
}

// relativePosition is build_relative_position(seq, seq): [q][k] = q - k, bucketed when
// PositionBuckets is set.
func (c Config) relativePosition(seq int) [][]int {
	out := make([][]int, seq)
	for q := range seq {
		out[q] = make([]int, seq)
		for k := range seq {
			r := q - k
			if c.PositionBuckets > 0 && c.MaxRelativePositions > 0 {
				r = LogBucketPosition(r, c.PositionBuckets, c.MaxRelativePositions)
			}
			out[q][k] = r
		}
	}
	return out
}

// maxRelativeBlock is the most query (or key) rows of one of relativeScores' products, for heads
// up to as wide. Fewer rows make narrower products, whose columns are the distances the block's
// rows need (rows + T - 1), so less to compute and to copy per score, but more blocks of
// relative rows, each broadcast over the batch: HeadDim values per column against the product's
// rows per column, so a block has at least HeadDim rows and those rows stay the larger tensor
// (hidden 768, 12 heads: 64 rows). On the Go backend (16 rows of 192-512 tokens, 16-wide heads, a
// loaded machine) blocks of 16, 32 and 64 rows were within the noise of each other and took
// 25-40% less CPU than one block.
const maxRelativeBlock = 32

// relativeBlock is the rows of relativeScores' blocks for seq tokens and heads of headDim: the
// largest divisor of seq up to max(maxRelativeBlock, headDim), or seq itself where that is under
// 8 (a prime length: one block).
func relativeBlock(seq, headDim int) int {
	most := max(maxRelativeBlock, headDim)
	if seq <= most {
		return seq
	}
	for tb := most; tb >= 8; tb-- {
		if seq%tb == 0 {
			return tb
		}
	}
	return seq
}

// relativeRows returns, for seq tokens in blocks of tb rows (relativeBlock), the rows of the
// relative embeddings that disentangled_attention_bias reads at each distance, in the column
// order of relativeScores' products: block b (rows b·tb to b·tb+tb-1) has tb+seq-1 columns, its
// column m at the distance d = b·tb + tb-1 - m (d = q - k for c2p, k - q for p2c). c2p holds
// clamp(rel(d) + span), torch's c2p_pos at [q][k], and p2c clamp(-rel(d) + span), its p2c_pos
// at [k][q] (gathered over the keys' rows), each in [0, 2·span); rel is relativePosition's
// bucketing.
func (c Config) relativeRows(seq, tb int) (c2p, p2c []int32) {
	span := c.AttentionSpan()
	clamp := func(v int) int32 { return int32(min(max(v+span, 0), 2*span-1)) }
	w := tb + seq - 1
	c2p, p2c = make([]int32, seq/tb*w), make([]int32, seq/tb*w)
	for b := range seq / tb {
		for m := range w {
			r := b*tb + tb - 1 - m
			if c.PositionBuckets > 0 && c.MaxRelativePositions > 0 {
				r = LogBucketPosition(r, c.PositionBuckets, c.MaxRelativePositions)
			}
			c2p[b*w+m], p2c[b*w+m] = clamp(r), clamp(-r)
		}
	}
	return c2p, p2c
}

// relativeScores returns the c2p scores of the queries x [B, H, T, e], or the p2c scores of the
// keys before their transpose, [B, H, T, T]: out[b, h, i, j] = x[b, h, i] · the relative row at
// the distance i - j. posT [B, H·n, e, W] holds those rows for each of the n blocks of tb = T/n
// rows (relativeRows' columns, W = tb+T-1), transposed: the keys' layout of
// layers.AttentionScoresKT.
//
// This is Transformer-XL's relative shift. A block's product M [tb, W] = x_block · posT_block
// has row r's wanted scores at columns tb-1-r+j, j < T: one slice per row of the block (all
// blocks, rows and heads at once) and a concatenation copy every score into place, where torch's
// gather (and the Go backend's Gather, which moves one value per index) would look each one up.
// (The flat form, dropping the first tb-1 values and reading rows of W-1, took two slices, which
// the Go backend copies one value at a time; its concatenation copies whole runs.) The blocks are
// a batch axis of one product, and since each block needs only the distances of its own rows, a
// product of T·(tb+T-1) values rather than T·(2T-1).
func relativeScores(x, posT *Node, tb int) *Node {
	dims := x.Shape().Dimensions
	b, h, t, e := dims[0], dims[1], dims[2], dims[3]
	n := t / tb
	m := layers.AttentionScoresKT(Reshape(x, b, h*n, tb, e), posT) // [B, H·n, tb, W]
	if tb == 1 {
		return Reshape(m, b, h, t, t) // W = T: one row, no shift
	}
	// Row r of a block wants M[r, tb-1-r : tb-1-r+T]: one slice per row, joined by block copies
	// (the Go backend's Slice moves one value at a time, its Concatenate whole runs).
	rows := make([]*Node, tb)
	for r := range tb {
		rows[r] = Slice(m, AxisRange(), AxisRange(), AxisElem(r), AxisRange(tb-1-r, tb-1-r+t))
	}
	return Reshape(Concatenate(rows, 2), b, h, t, t)
}

// hiddenDisentangled is Hidden for DeBERTa: DebertaV2Model(input_ids, attention_mask,
// token_type_ids).last_hidden_state, every position included (padded queries attend to nothing,
// as XSoftmax zeroes their row).
func (m *Model) hiddenDisentangled(scope *gomlxmodel.Scope, tokens, tokenTypes, mask *Node) *Node {
	g := tokens.Graph()
	batch, seq := tokens.Shape().Dimensions[0], tokens.Shape().Dimensions[1]
	c := m.cfg
	if c.PositionBiasedInput && seq > c.MaxPositions {
		exceptions.Panicf("encoder.Hidden: %d tokens, more than max_position_embeddings %d", seq, c.MaxPositions)
	}
	if mask == nil {
		mask = Ones(g, shapes.Make(dtypes.Float32, batch, seq))
	}
	keep := ConvertDType(mask, dtypes.Float32) // [B, T]
	x := m.embedDisentangled(scope, tokens, tokenTypes, keep)
	embedded := x
	r := m.newDebertaRun(g, batch, seq, keep)
	return m.eachLayer(x, func(i int, x, anchor *Node) *Node {
		x = m.disentangledLayer(r, scope.In("layer_%d", i), i, x, anchor)
		if i == 0 && c.ConvKernel > 0 {
			x = m.convLayer(scope, embedded, x, keep)
		}
		return x
	})
}

// embedDisentangled is DebertaV2Embeddings: the embeddings of tokens [B, T] the config asks for,
// projected to Hidden when embedding_size differs, normed, zero at padded tokens (keep [B, T]).
func (m *Model) embedDisentangled(scope *gomlxmodel.Scope, tokens, tokenTypes, keep *Node) *Node {
	g := tokens.Graph()
	batch, seq := tokens.Shape().Dimensions[0], tokens.Shape().Dimensions[1]
	c := m.cfg
	dt := m.dtype()
	x := Gather(m.weightAs(g, "embeddings.word_embeddings.weight", dt, nil), ExpandAxes(ConvertDType(tokens, dtypes.Int32), -1))
	if c.PositionBiasedInput {
		pos := Slice(m.weightAs(g, "embeddings.position_embeddings.weight", dt, nil), AxisRange(0, seq))
		x = Add(x, BroadcastToDims(ExpandAxes(pos, 0), batch, seq, c.EmbeddingSize))
	}
	if c.TypeVocab > 0 {
		if tokenTypes == nil {
			tokenTypes = Zeros(g, shapes.Make(dtypes.Int32, batch, seq))
		}
		x = Add(x, Gather(m.weightAs(g, "embeddings.token_type_embeddings.weight", dt, nil), ExpandAxes(ConvertDType(tokenTypes, dtypes.Int32), -1)))
	}
	if c.EmbeddingSize != c.Hidden {
		x = dense(x, m.weightAs(g, "embeddings.embed_proj.weight", dt, nil), nil)
	}
	x = m.layerNorm(g, "embeddings.LayerNorm", x, nil)
	x = Mul(x, layers.As(BroadcastToDims(ExpandAxes(keep, -1), batch, seq, c.Hidden), x.DType()))
	return layers.Dropout(scope, x, c.HiddenDropout)
}

// debertaRun is what the layers of one DeBERTa run share: the batch's sizes, the masks, the
// attention's scale and the relative embeddings with the rows relativeScores' blocks pick.
type debertaRun struct {
	g          *Graph
	batch, seq int
	dt         dtypes.DType
	// XSoftmax over the mask [B, 1, T, T] = mask_q · mask_k: padded keys get no weight (a large
	// negative bias before the softmax) and padded queries' rows are zeroed after it, which is
	// done to their attention output [B, T, Hidden] (the same zeros, a smaller tensor).
	// In float32 the key bias rides in the content product as one more contracted row: queries
	// get a column of ones, the transposed keys a row of biases, so no pass over the [B, Heads,
	// T, T] scores adds it (nor broadcasts it first). bf16 adds it to the float32 scores.
	keyBiasRow, keyBias, queryKeep *Node
	biasInProduct                  bool
	scale                          float64
	relEmb                         *Node
	c2pRows, p2cRows               []int32
	tb                             int // relativeScores' block of query rows
}

func (m *Model) newDebertaRun(g *Graph, batch, seq int, keep *Node) *debertaRun {
	c := m.cfg
	r := &debertaRun{g: g, batch: batch, seq: seq, dt: m.dtype()}
	r.keyBiasRow = BroadcastToDims(Reshape(MulScalar(OneMinus(keep), -math.MaxFloat32), batch, 1, 1, seq), batch, c.Heads, 1, seq)
	r.biasInProduct = r.dt == dtypes.Float32
	if !r.biasInProduct {
		r.keyBias = BroadcastToDims(r.keyBiasRow, batch, c.Heads, seq, seq)
	}
	r.queryKeep = BroadcastToDims(ExpandAxes(keep, -1), batch, seq, c.Hidden)
	scaleFactor := 1
	if c.C2P {
		scaleFactor++
	}
	if c.P2C {
		scaleFactor++
	}
	r.scale = 1 / math.Sqrt(float64(c.HeadDim()*scaleFactor))
	r.tb = relativeBlock(seq, c.HeadDim())
	if c.RelativeAttention {
		relEmb := m.weightAs(g, "encoder.rel_embeddings.weight", dtypes.Float32, nil)
		if c.NormRelEmbed {
			relEmb = m.layerNorm(g, "encoder.LayerNorm", relEmb, nil)
		}
		r.relEmb = layers.As(relEmb, r.dt)
		r.c2pRows, r.p2cRows = c.relativeRows(seq, r.tb)
	}
	return r
}

// posHeadsT projects the relative embeddings [2·span, Hidden] through module key, scales them by
// the attention's scale, and picks the rows of relativeScores' blocks (relativeRows), split into
// heads and transposed, broadcast over the batch: [B, Heads·n, HeadDim, W]. Picking rows by
// distance (a few thousand rows of Hidden values) is what lets the scores be moved into place by
// relativeScores' copies instead of a gather per score.
func (m *Model) posHeadsT(r *debertaRun, layer *gomlxmodel.Scope, key string, re *Node, rows []int32, anchor *Node) *Node {
	c := m.cfg
	n, w := r.seq/r.tb, r.tb+r.seq-1
	p := MulScalar(Squeeze(m.linearIn(layer, key, ExpandAxes(re, 0), anchor), 0), r.scale) // [2·span, Hidden]
	p = Reshape(Gather(p, Reshape(Const(r.g, rows), len(rows), 1)), 1, n, w, c.Heads, c.HeadDim())
	p = TransposeAllDims(p, 0, 3, 1, 4, 2) // [1, Heads, n, HeadDim, W]
	// Repeated over the batch by block copies (the Go backend broadcasts one value at a time).
	return Reshape(Concatenate(slices.Repeat([]*Node{p}, r.batch), 0), r.batch, c.Heads*n, c.HeadDim(), w)
}

// disentangledLayer is DeBERTa-v2's layer i (its scope layer) over x [B, T, Hidden]: disentangled
// self-attention, then the feed-forward block, each with its residual LayerNorm.
func (m *Model) disentangledLayer(r *debertaRun, layer *gomlxmodel.Scope, i int, x, anchor *Node) *Node {
	c := m.cfg
	p := layout.LayerKey(i)
	q := layers.SplitHeads(m.linearIn(layer, p+".attention.self.query_proj", x, anchor), c.Heads)
	k := layers.SplitHeads(m.linearIn(layer, p+".attention.self.key_proj", x, anchor), c.Heads)
	v := layers.SplitHeads(m.linearIn(layer, p+".attention.self.value_proj", x, anchor), c.Heads)
	scores := m.disentangledScores(r, layer, p, q, k, anchor)
	probs := layers.As(layers.Dropout(layer, layers.SoftmaxLast(scores), c.AttentionDropout), r.dt)
	ctx := Mul(layers.MergeHeads(layers.AttentionValues(probs, v)), layers.As(r.queryKeep, r.dt))
	h := layers.Dropout(layer, m.linearIn(layer, p+".attention.output.dense", ctx, anchor), c.HiddenDropout)
	a := m.layerNorm(r.g, p+".attention.output.LayerNorm", Add(h, x), anchor)
	inter := m.activation(m.linearIn(layer, p+".intermediate.dense", a, anchor))
	h = layers.Dropout(layer, m.linearIn(layer, p+".output.dense", inter, anchor), c.HiddenDropout)
	return m.layerNorm(r.g, p+".output.LayerNorm", Add(h, a), anchor)
}

// disentangledScores are the attention scores [B, Heads, T, T] in float32 of the layer whose keys
// start with p: content to content, plus content to position and position to content as the config
// asks, with the padded keys' bias.
func (m *Model) disentangledScores(r *debertaRun, layer *gomlxmodel.Scope, p string, q, k, anchor *Node) *Node {
	c := m.cfg
	// The keys transposed first: the fast layout of the Go backend's small products
	// (layers.AttentionScoresKT). The scale goes on the queries of the content scores and on
	// the relative rows of c2p and p2c (posHeadsT), not on the [B, Heads, T, T] sum.
	qs := MulScalar(q, r.scale)
	kT := TransposeAllDims(k, 0, 1, 3, 2)
	if r.biasInProduct {
		qs = Concatenate([]*Node{qs, Ones(r.g, shapes.Make(r.dt, r.batch, c.Heads, r.seq, 1))}, 3)
		kT = Concatenate([]*Node{kT, r.keyBiasRow}, 2)
	}
	scores := layers.As(layers.AttentionScoresKT(qs, kT), dtypes.Float32)
	if c.RelativeAttention && (c.C2P || c.P2C) {
		re := layers.Dropout(layer.In("pos_dropout"), r.relEmb, c.HiddenDropout)
		posKey, posQuery := p+".attention.self.pos_key_proj", p+".attention.self.pos_query_proj"
		if c.ShareAttKey {
			posKey, posQuery = p+".attention.self.key_proj", p+".attention.self.query_proj"
		}
		if c.C2P {
			// content -> position: query i · pos_key at distance i - j.
			c2p := relativeScores(q, m.posHeadsT(r, layer, posKey, re, r.c2pRows, anchor), r.tb) // [B, Heads, T(q), T(k)]
			scores = Add(scores, layers.As(c2p, dtypes.Float32))
		}
		if c.P2C {
			// position -> content: key j · pos_query at distance j - i, transposed.
			p2c := relativeScores(k, m.posHeadsT(r, layer, posQuery, re, r.p2cRows, anchor), r.tb) // [B, Heads, T(k), T(q)]
			scores = Add(scores, Transpose(layers.As(p2c, dtypes.Float32), 2, 3))
		}
	}
	if !r.biasInProduct {
		scores = Add(scores, r.keyBias)
	}
	return scores
}

// convLayer is DeBERTa-v2's ConvLayer (conv_groups 1): conv = Conv1d(embedded) with (k - 1) / 2
// zeros on each side of the sequence, zero at padded tokens, conv_act, dropout, then
// LayerNorm(residual + conv), times the mask. The convolution is a sum over the kernel's taps of
// the shifted sequence times the tap's [out, in] weights.
func (m *Model) convLayer(scope *gomlxmodel.Scope, embedded, residual, keep *Node) *Node {
	g := embedded.Graph()
	c := m.cfg
	dims := embedded.Shape().Dimensions
	batch, seq := dims[0], dims[1]
	pad := (c.ConvKernel - 1) / 2
	dt := embedded.DType()
	x := embedded
	if pad > 0 {
		zeros := Zeros(g, shapes.Make(dt, batch, pad, c.Hidden))
		x = Concatenate([]*Node{zeros, x, zeros}, 1)
	}
	w := m.weightAs(g, "encoder.conv.conv.weight", dt, nil) // [out, in, k]
	var out *Node
	for j := range c.ConvKernel {
		tap := Squeeze(Slice(w, AxisRange(), AxisRange(), AxisElem(j)), 2)
		y := dense(Slice(x, AxisRange(), AxisRange(j, j+seq)), tap, nil)
		if out == nil {
			out = y
		} else {
			out = Add(out, y)
		}
	}
	out = Add(out, BroadcastToDims(ExpandAxes(ExpandAxes(m.weightAs(g, "encoder.conv.conv.bias", dt, nil), 0), 0), batch, seq, c.Hidden))
	mask := layers.As(BroadcastToDims(ExpandAxes(keep, -1), batch, seq, c.Hidden), dt)
	out = Mul(out, mask)
	out = layers.Dropout(scope.In("conv"), m.activationOf(c.ConvAct, out), c.HiddenDropout)
	y := m.layerNorm(g, "encoder.conv.LayerNorm", Add(residual, out), nil)
	return Mul(y, layers.As(mask, y.DType()))
}

// poolerActivation is ContextPooler's ACT2FN[pooler_hidden_act] (DeBERTa), BertPooler's tanh
// otherwise.
func (m *Model) poolerActivation(x *Node) *Node { return m.activationOf(m.cfg.PoolerAct, x) }
