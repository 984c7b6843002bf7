package summarizer

import (
	"fmt"
	"math"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX itself.
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers/activation"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/layers"
	"github.com/tracksum/tracksum/model"
)

// Graph decoding: the network of graph.go run through two GoMLX Execs, so that inference runs on
// whatever backend the process has (an XLA GPU included), with the decoding bonuses and
// constraints of Net.mix kept on the host, shared with the Go network.
//
//	encode: src, seg [B, S] -> the gate term of each encoder state (states . gate_c) [B, S],
//	        then per source row, for every decoder layer, the cross-attention keys [1, H, dh, S]
//	        and values [1, H, S, dh] (split in heads, keys transposed), and the copy keys
//	        [1, d, S]: everything the decoder reads from the source, computed once.
//	step:   one token per hypothesis [B], its target position and aspect, the self-attention
//	        bias [B, C] over the cache slots, the source bias [B, S], the slot written; then each
//	        row's self-attention cache (keys and values per layer, [1, H, C, dh]) and its source's
//	        tensors -> logits over the generation vocabulary [B, G], copy scores [B, S], the
//	        gate's state and input terms [B], then each row's new cache.
//
// Like model/pretrained's generator, every hypothesis holds its own rows of the cache as [1, ...]
// tensors, never changed in place, so that beam search forks a hypothesis by sharing them. Lengths
// are bucketed (model.BucketLen): sources to srcBucket, the cache capacity to cacheBucket, the
// batch to powers of two on a backend that compiles per shape.

// cacheBucket rounds the self-attention cache capacity (decoded tokens).
const cacheBucket = 16

// outEmbScope and outEmbName locate the decoding store's copy of the output embeddings, outside
// the model scope (never saved: a checkpoint holds the tied embeddings only).
const (
	outEmbScope = "/decode"
	outEmbName  = "out_emb"
)

// graphNet holds the Execs of graph decoding and the store of the weights they read.
type graphNet struct {
	h      Hyperparams
	encode *gomlxmodel.Exec
	step   *gomlxmodel.Exec
	mu     sync.Mutex
	// pow2 pads every shape to a power of two (model.CompilesPerShape: an XLA backend).
	pow2 bool
	// zeros caches the empty cache row per capacity (immutable, shared by all states).
	zeros map[int]*tensors.Tensor
}

// graphSource is the part of a Source that graph decoding reads: the source's length bucket, its
// per-layer cross-attention keys ([1, H, dh, S]) and values ([1, H, S, dh]) and its copy keys
// ([1, d, S]), and the gate term of each encoder state.
type graphSource struct {
	rows    []*tensors.Tensor
	srcGate []float32
	bucket  int
}

// NewGraphNet builds a Net that runs its network through GoMLX graphs on backend (encoder once
// per source, then one batched decoder step per token with a KV cache), from the same variables
// as NewNet. The host copy of the weights is kept for the few scalars the copy mixture reads.
func NewGraphNet(backend compute.Backend, h Hyperparams, vars map[string]*tensors.Tensor) (*Net, error) {
	n, err := NewNet(h, vars)
	if err != nil {
		return nil, err
	}
	store := gomlxmodel.NewStore()
	for name, t := range vars {
		if _, err := store.CreateVariable(model.ModelScope+"/"+name, t); err != nil {
			return nil, fmt.Errorf("summarizer graph: variable %s: %w", name, err)
		}
	}
	// The output embeddings (the generation vocabulary's rows of the tied embeddings) are
	// gathered once here, not at every step.
	nGen, d := len(n.genIDs), h.DModel
	outEmbT := make([]float32, d*nGen) // [d, G]: the step's product then runs on the Go backend's plain kernel
	for k := range nGen {
		for i := range d {
			outEmbT[i*nGen+k] = n.outEmb[k*d+i]
		}
	}
	outEmb := tensors.FromFlatDataAndDimensions(outEmbT, d, nGen)
	if _, err := store.CreateVariable(outEmbScope+"/"+outEmbName, outEmb); err != nil {
		return nil, fmt.Errorf("summarizer graph: %w", err)
	}
	g := &graphNet{h: h, pow2: model.CompilesPerShape(), zeros: map[int]*tensors.Tensor{}}
	scope := store.Scope(model.ModelScope)
	g.encode, err = gomlxmodel.NewExec(backend, store, func(_ *gomlxmodel.Scope, in []*Node) []*Node {
		return encodeRowsGraph(scope, h, in[0], in[1])
	})
	if err != nil {
		return nil, fmt.Errorf("summarizer graph: %w", err)
	}
	g.step, err = gomlxmodel.NewExec(backend, store, func(_ *gomlxmodel.Scope, in []*Node) []*Node {
		return decodeStepGraph(scope, h, in)
	})
	if err != nil {
		return nil, fmt.Errorf("summarizer graph: %w", err)
	}
	// Every (batch, source, cache) bucket is one program: a decoding run meets a handful.
	g.encode.SetMaxCache(-1)
	g.step.SetMaxCache(-1)
	n.graph = g
	return n, nil
}

// backendError is a failure of the graph backend (a device out of memory, say) inside Step or
// EncodeAll, which cannot return errors; Summarize turns it back into an error.
type backendError struct{ err error }

// OnGraph reports whether the Net runs its network through GoMLX graphs (NewGraphNet).
func (n *Net) OnGraph() bool { return n.graph != nil }

// perSource is the number of tensors a source row holds: cross keys and values per decoder
// layer, and the copy keys.
func (h Hyperparams) perSource() int { return 2*h.DecoderLayers + 1 }

// encodeRowsGraph encodes src, seg [B, S] (PadID-padded) and returns the gate terms [B, S] of the
// encoder states, then each row's perSource tensors.
func encodeRowsGraph(scope *gomlxmodel.Scope, h Hyperparams, src, seg *Node) []*Node {
	g := src.Graph()
	b := src.Shape().Dimensions[0]
	d := h.DModel
	srcBias := Where(NotEqual(src, Scalar(g, dtypes.Int32, h.PadID)), ZerosLike(ConvertDType(src, dtypes.Float32)), Scalar(g, dtypes.Float32, maskBias))
	enc := EncoderGraph(scope, h, src, seg, srcBias)
	var perRow []*Node
	for l := range h.DecoderLayers {
		cs := scope.At("decoder").At("layer_%d", l).At("cross")
		kT := TransposeAllDims(layers.SplitHeads(layerVars.Dense(cs, "k", enc, d, activation.TypeNone), h.Heads), 0, 1, 3, 2)
		perRow = append(perRow, kT, layers.SplitHeads(layerVars.Dense(cs, "v", enc, d, activation.TypeNone), h.Heads))
	}
	perRow = append(perRow, Transpose(layerVars.Dense(scope.At("copy"), "k", enc, d, activation.TypeNone), 1, 2))
	gc := scope.At("copy").VariableWithShape("gate_c", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	srcLen := src.Shape().Dimensions[1]
	srcGate := Reshape(layers.Product(Reshape(enc, b*srcLen, d), Reshape(gc, d, 1)), b, srcLen)
	return append([]*Node{srcGate}, layers.SplitRows(perRow, b)...)
}

// Inputs of decodeStepGraph before the per-row tensors.
const (
	stepToken = iota
	stepPos
	stepAspect
	stepSelfBias
	stepSrcBias
	stepSlot
	stepFixed
)

// decodeStepGraph feeds one token per row (see the inputs above, then each row's 2·DecoderLayers
// cache tensors [1, H, C, dh], then each row's perSource tensors) and returns the logits
// [B, G], the copy scores [B, S], the gate terms of the state and of the input [B], then each
// row's new cache tensors.
func decodeStepGraph(scope *gomlxmodel.Scope, h Hyperparams, in []*Node) []*Node {
	g := in[0].Graph()
	b := in[stepToken].Shape().Dimensions[0]
	capacity := in[stepSelfBias].Shape().Dimensions[1]
	srcLen := in[stepSrcBias].Shape().Dimensions[1]
	d, nl := h.DModel, h.DecoderLayers
	perCache := 2 * nl
	rows := in[stepFixed:]
	cache := layers.JoinRows(rows[:b*perCache], b, perCache)
	source := layers.JoinRows(rows[b*perCache:], b, h.perSource())

	es := scope.At("embed")
	tokens := es.VariableWithShape("tokens", shapes.Make(dtypes.Float32, h.VocabSize, d)).ValueGraph(g)
	pos := es.VariableWithShape("tgt_pos", shapes.Make(dtypes.Float32, h.maxPositions(), d)).ValueGraph(g)
	x := Add(Gather(tokens, Reshape(in[stepToken], b, 1)), Gather(pos, Reshape(in[stepPos], b, 1))) // [B, d]
	if h.NumAspects > 0 {
		table := es.VariableWithShape("aspect", shapes.Make(dtypes.Float32, h.NumAspects+1, d)).ValueGraph(g)
		x = Add(x, Gather(table, Reshape(in[stepAspect], b, 1)))
	}
	xEmb := x
	x = Reshape(x, b, 1, d)

	// The new keys and values go to the cache slot of the fed token (the Go backend has no
	// DynamicUpdateSlice: a select on the slot, exact). Caches and source keys are kept split
	// in heads, [B, H, ·, dh], so that no step transposes them.
	hd := d / h.Heads
	dims := []int{b, h.Heads, capacity, hd}
	slots := Iota(g, shapes.Make(dtypes.Int32, 1, 1, capacity, 1), 2)
	atSlot := BroadcastToDims(Equal(slots, BroadcastToDims(in[stepSlot], 1, 1, capacity, 1)), dims...)
	place := func(old, nw *Node) *Node {
		return Where(atSlot, BroadcastToDims(layers.SplitHeads(nw, h.Heads), dims...), old)
	}
	selfBias := Reshape(in[stepSelfBias], b, 1, 1, capacity)
	srcBias := Reshape(in[stepSrcBias], b, 1, 1, srcLen)
	proj := func(s *gomlxmodel.Scope, name string, y *Node) *Node {
		return layerVars.Dense(s, name, y, d, activation.TypeNone)
	}
	next := make([]*Node, perCache)
	for l := range nl {
		ls := scope.At("decoder").At("layer_%d", l)
		y := layerVars.LayerNorm(ls.At("ln1"), x)
		ss := ls.At("self")
		next[2*l] = place(cache[2*l], proj(ss, "k", y))
		next[2*l+1] = place(cache[2*l+1], proj(ss, "v", y))
		att := layers.Attention(layers.SplitHeads(proj(ss, "q", y), h.Heads), next[2*l], next[2*l+1], selfBias)
		x = Add(x, proj(ss, "o", layers.MergeHeads(att)))
		y = layerVars.LayerNorm(ls.At("ln2"), x)
		cs := ls.At("cross")
		att = attendKeysT(layers.SplitHeads(proj(cs, "q", y), h.Heads), source[2*l], source[2*l+1], srcBias)
		x = Add(x, proj(cs, "o", layers.MergeHeads(att)))
		y = layerVars.LayerNorm(ls.At("ln3"), x)
		x = Add(x, ffnGraph(ls.At("ffn"), h, y))
	}
	s := Reshape(layerVars.LayerNorm(scope.At("decoder").At("ln"), x), b, d)

	nGen := len(h.genIDs())
	outEmbT := scope.Store().Scope(outEmbScope).VariableWithShape(outEmbName, shapes.Make(dtypes.Float32, d, nGen)).ValueGraph(g)
	outBias := es.VariableWithShape("out_bias", shapes.Make(dtypes.Float32, nGen)).ValueGraph(g)
	logits := Add(layers.Product(s, outEmbT), layers.BroadcastRows(outBias, b))

	cs := scope.At("copy")
	qc := Reshape(proj(cs, "q", s), b, 1, d)
	scores := DotGeneral(qc, []int{2}, []int{0}, source[2*nl], []int{1}, []int{0}) // copy keys [B, d, S]
	scores = Reshape(MulScalar(scores, 1/math.Sqrt(float64(d))), b, srcLen)

	gs := cs.VariableWithShape("gate_s", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	gx := cs.VariableWithShape("gate_x", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	gateS := Reshape(layers.Product(s, Reshape(gs, d, 1)), b)
	gateX := Reshape(layers.Product(xEmb, Reshape(gx, d, 1)), b)
	return append([]*Node{logits, scores, gateS, gateX}, layers.SplitRows(next, b)...)
}

// attendKeysT is layers.Attention with the keys given transposed, kT [B, H, dh, S]: the encoder
// stores the source's keys so, once, and each step's scores then run on the Go backend's plain
// matmul kernel rather than its slower transposed one.
func attendKeysT(q, kT, values, bias *Node) *Node {
	scores := DotGeneral(q, []int{3}, []int{0, 1}, kT, []int{2}, []int{0, 1})
	scores = Add(MulScalar(scores, 1/math.Sqrt(float64(q.Shape().Dimensions[3]))), bias)
	return layers.AttentionValues(layers.SoftmaxLast(scores), values)
}

// bucketLen is model.BucketLen for this net's backend (pow2).
func (g *graphNet) bucketLen(n, step int) int { return model.BucketLenFor(n, step, g.pow2) }

// rowBucket is the number of rows a batch of n runs as: n on the go backend, the next power of
// two on a backend that compiles per shape (beam search's live hypotheses shrink as they finish).
func (g *graphNet) rowBucket(n int) int { return g.bucketLen(n, 1) }

// encodeAll runs the encoder over the sources (ids and segment ids, no padding), padded to one
// length bucket, and returns their graph parts.
func (g *graphNet) encodeAll(ids, seg [][]int32) ([]*graphSource, error) {
	h := g.h
	longest := 0
	for _, s := range ids {
		longest = max(longest, len(s))
	}
	// The bucket stops at the position table (the sources are built within it).
	sb := max(longest, min(g.bucketLen(longest, srcBucket), h.maxPositions()))
	b := g.rowBucket(len(ids))
	src := make([]int32, b*sb)
	segs := make([]int32, b*sb)
	for r := range b {
		i := min(r, len(ids)-1) // rows past the sources repeat the last one; dropped
		for j := range sb {
			src[r*sb+j] = h.PadID
			if j < len(ids[i]) {
				src[r*sb+j], segs[r*sb+j] = ids[i][j], seg[i][j]
			}
		}
	}
	g.mu.Lock()
	out, err := g.encode.Call(tensors.FromFlatDataAndDimensions(src, b, sb), tensors.FromFlatDataAndDimensions(segs, b, sb))
	g.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("summarizer encode: %w", err)
	}
	per := h.perSource()
	res := make([]*graphSource, len(ids))
	tensors.MustConstFlatData(out[0], func(flat []float32) {
		for i := range res {
			res[i] = &graphSource{rows: out[1+i*per : 1+(i+1)*per], srcGate: append([]float32(nil), flat[i*sb:i*sb+len(ids[i])]...), bucket: sb}
		}
	})
	return res, nil
}

// emptyCache returns the cache rows of a fresh state: zeros [1, H, C, dh], shared.
func (g *graphNet) emptyCache() []*tensors.Tensor {
	capacity := g.bucketLen(1, cacheBucket)
	g.mu.Lock()
	z, ok := g.zeros[capacity]
	if !ok {
		z = tensors.FromShape(shapes.Make(dtypes.Float32, 1, g.h.Heads, capacity, g.h.headDim()))
		g.zeros[capacity] = z
	}
	g.mu.Unlock()
	rows := make([]*tensors.Tensor, 2*g.h.DecoderLayers)
	for i := range rows {
		rows[i] = z
	}
	return rows
}

// grow copies a state's cache rows into a larger capacity (zeros after the used slots): a
// summary longer than the cache bucket.
func (g *graphNet) grow(rows []*tensors.Tensor, capacity int) []*tensors.Tensor {
	heads, hd := g.h.Heads, g.h.headDim()
	out := make([]*tensors.Tensor, len(rows))
	for i, t := range rows {
		old := t.Shape().Dimensions[2]
		flat := make([]float32, heads*capacity*hd)
		tensors.MustConstFlatData(t, func(prev []float32) {
			for hh := range heads {
				copy(flat[hh*capacity*hd:], prev[hh*old*hd:(hh+1)*old*hd])
			}
		})
		out[i] = tensors.FromFlatDataAndDimensions(flat, 1, heads, capacity, hd)
	}
	return out
}

// capacity is the cache capacity of a state's rows ([1, H, C, dh]).
func capacity(rows []*tensors.Tensor) int { return rows[0].Shape().Dimensions[2] }

// stepGraph feeds tokens[i] to states[i] through the step graph and returns each state's network
// outputs; states are grouped by (position, cache capacity, source bucket), one call per group
// (in a decoding run, all of them move together).
func (g *graphNet) stepGraph(states []*DecState, tokens []int32) ([]stepOut, error) {
	h := g.h
	for _, st := range states {
		if st.pos >= capacity(st.cache) {
			st.cache = g.grow(st.cache, g.bucketLen(st.pos+1, cacheBucket))
		}
	}
	type key struct{ pos, capacity, bucket int }
	groups := map[key][]int{}
	var order []key
	for i, st := range states {
		k := key{st.pos, capacity(st.cache), st.Src.graph.bucket}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	out := make([]stepOut, len(states))
	for _, k := range order {
		idx := groups[k]
		b := g.rowBucket(len(idx))
		tok, pos, asp := make([]int32, b), make([]int32, b), make([]int32, b)
		selfBias := make([]float32, b*k.capacity)
		srcBias := make([]float32, b*k.bucket)
		var cacheRows, sourceRows []any
		for r := range b {
			i := idx[min(r, len(idx)-1)] // rows past the group repeat its last state; dropped
			st := states[i]
			tok[r], pos[r], asp[r] = tokens[i], int32(min(st.pos, h.lastTrainedTgtPos())), max(st.Src.Aspect, 0)
			for j := k.pos + 1; j < k.capacity; j++ {
				selfBias[r*k.capacity+j] = maskBias
			}
			for j := len(st.Src.IDs); j < k.bucket; j++ {
				srcBias[r*k.bucket+j] = maskBias
			}
			for _, t := range st.cache {
				cacheRows = append(cacheRows, t)
			}
			for _, t := range st.Src.graph.rows {
				sourceRows = append(sourceRows, t)
			}
		}
		args := []any{tensors.FromFlatDataAndDimensions(tok, b), tensors.FromFlatDataAndDimensions(pos, b), tensors.FromFlatDataAndDimensions(asp, b),
			tensors.FromFlatDataAndDimensions(selfBias, b, k.capacity), tensors.FromFlatDataAndDimensions(srcBias, b, k.bucket),
			tensors.FromScalarAndDimensions(int32(k.pos))}
		args = append(append(args, cacheRows...), sourceRows...)
		g.mu.Lock()
		res, err := g.step.Call(args...)
		g.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("summarizer step: %w", err)
		}
		per := 2 * h.DecoderLayers
		logits, scores := res[0].Value().([][]float32), res[1].Value().([][]float32)
		gateS, gateX := res[2].Value().([]float32), res[3].Value().([]float32)
		for r, i := range idx {
			out[i] = stepOut{logits: logits[r], copyScores: scores[r], gateS: gateS[r], gateX: gateX[r]}
			states[i].cache = res[4+r*per : 4+(r+1)*per]
		}
	}
	return out, nil
}
