package summarizer

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX itself.
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/layers"
	"github.com/tracksum/tracksum/model"
)

// Graph decoding: the network of graph.go run through two GoMLX Execs, so that inference runs on
// whatever backend the process has (an XLA GPU included). Both are built from graph.go's own
// functions; a step is the training graph over one position per hypothesis with a KV cache
// (stepCache), and returns the copy-augmented distribution itself, each token's probability once,
// which the host places at the token ids. The host keeps the decoding state: the cache, the copy
// bonuses it adds to the scores, and the constraints it applies to the distribution (Net.Step).
//
//	encode: src, seg [N, S] -> for every decoder layer the cross-attention keys [N, H, dh, S] and
//	        values [N, H, S, dh] (split in heads, keys transposed), the copy keys [N, 1, d, S]
//	        and the encoder states [N, 1, S, d], the attention bias [N, S], each position's
//	        previous token [N, S] (followOfGraph), generation index [N, S] and whether it has one
//	        [N, S] (mixtureGraph):
//	        everything the decoder reads from the sources, computed once and kept as one batch
//	        (sourceBatch).
//	step:   B = n·R hypotheses, R rows per source of n sources (row r reads source r / R): one
//	        token per row [B] and its target position [B], each source's aspect [n], the
//	        self-attention bias [B, C] over the cached tokens, the copy bonuses [B, S]; the cache
//	        (keys [B, H, dh, C] and values [B, H, C, dh] per decoder layer); the n sources'
//	        tensors -> the copy-augmented distribution over each source's extended vocabulary
//	        (the generation ids [B, G], the source positions [B, S]), then the fed token's keys
//	        and values [B, H, dh] per decoder layer.
//
// Inside the step the hypotheses are laid out as the training graph's batch: [n, R, d], the R
// rows of a source as R positions of its target, so that the cross and copy attentions and the
// output layer are training's own (a source's keys read once for its R queries); only the
// self-attention differs, each row attending to its own cache (stepCache.attend).
//
// The cache lives on the host, one buffer per hypothesis: the step reads it as an input and
// returns only the new token's keys and values, which the host writes in place (a beam's clones
// share a buffer until one writes: copy on write). Nothing of the size of the cache is
// concatenated, selected or split inside the graph, which on the pure-Go backend cost more than
// the step's arithmetic. Shapes are bucketed (model.BucketLen): sources to srcBucket, the cache
// to cacheBucket, and n and R to powers of two on a backend that compiles per shape.

// cacheBucket rounds the self-attention cache capacity (decoded tokens).
const cacheBucket = 16

// outEmbScope and outEmbName locate the decoding store's copy of the output embeddings, outside
// the model scope (never saved: a checkpoint holds the tied embeddings only).
const (
	outEmbScope = "/decode"
	outEmbName  = "out_emb"
)

// decodeVars are the layers' variables as decoding reads them: those of training, with the keys
// of the encoder's self-attention transposed first (layers.Vars.KeysTransposed; a pass of one
// 120-token source took 41 ms of CPU in the other layout).
var decodeVars = func() layers.Vars {
	v := layerVars
	v.KeysTransposed = true
	return v
}()

// graphNet holds the Execs of graph decoding and the store of the weights they read.
type graphNet struct {
	h       Hyperparams
	backend compute.Backend
	encode  *gomlxmodel.Exec
	step    *gomlxmodel.Exec
	// mu guards the source batches' subsets. The Execs run concurrently (infer's workers decode
	// side by side): their programs only read the store, whose variables are all created here.
	mu sync.Mutex
	// pow2 pads every shape to a power of two (model.CompilesPerShape: an XLA backend).
	pow2 bool
}

// sourceBatch is what the decoding steps read from the sources of one EncodeAll call, kept
// batched: the encode graph's outputs (see the top of the file), then each position's first
// position of its token [N, S] (mixtureGraph) (N ≥ the number of sources: padded rows repeat the
// last one).
type sourceBatch struct {
	tensors []*tensors.Tensor
	bucket  int
	// subsets caches the tensors of a list of the batch's sources (a step where some sources
	// have finished decoding), keyed by the list.
	subsets map[string][]*tensors.Tensor
}

// graphSource is the part of a Source that graph decoding reads: its batch and row there, and
// the positions that hold a token's first occurrence (placeTokens).
type graphSource struct {
	batch  *sourceBatch
	row    int
	firsts []int
}

// newGraphNet builds the Execs of graph decoding on backend from the model's variables.
func newGraphNet(backend compute.Backend, h Hyperparams, vars map[string]*tensors.Tensor) (*graphNet, error) {
	store := gomlxmodel.NewStore()
	for name, t := range vars {
		// A copy: the variables may live on another backend (training's; see
		// model.DecodingBackend), whose tensors this one cannot read.
		local, err := t.LocalClone()
		if err != nil {
			return nil, fmt.Errorf("summarizer graph: variable %s: %w", name, err)
		}
		if _, err := store.CreateVariable(model.ModelScope+"/"+name, local); err != nil {
			return nil, fmt.Errorf("summarizer graph: variable %s: %w", name, err)
		}
	}
	// The output embeddings (the generation vocabulary's rows of the tied embeddings) are
	// gathered once here, not at every step, and stored transposed [d, G]: the step's product
	// then runs on the Go backend's plain kernel.
	d := h.DModel
	genIDs := h.genIDs()
	nGen := len(genIDs)
	outEmbT := make([]float32, d*nGen)
	tensors.MustConstFlatData(vars["embed/tokens"], func(tokens []float32) {
		for k, id := range genIDs {
			for i := range d {
				outEmbT[i*nGen+k] = tokens[int(id)*d+i]
			}
		}
	})
	if _, err := store.CreateVariable(outEmbScope+"/"+outEmbName, tensors.FromFlatDataAndDimensions(outEmbT, d, nGen)); err != nil {
		return nil, fmt.Errorf("summarizer graph: %w", err)
	}
	g := &graphNet{h: h, backend: backend, pow2: model.CompilesPerShape()}
	scope := store.Scope(model.ModelScope)
	var err error
	g.encode, err = gomlxmodel.NewExec(backend, store, func(_ *gomlxmodel.Scope, in []*Node) []*Node {
		return encodeSourcesGraph(scope, h, in[0], in[1])
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
	// Every (rows, source, cache) bucket is one program: a decoding run meets a handful.
	g.encode.SetMaxCache(-1)
	g.step.SetMaxCache(-1)
	return g, nil
}

// encodeSourcesGraph encodes src, seg [N, S] (PadID-padded) and returns the sourceBatch tensors
// it computes.
func encodeSourcesGraph(scope *gomlxmodel.Scope, h Hyperparams, src, seg *Node) []*Node {
	g := src.Graph()
	bias := sourceBiasGraph(h, src)
	states := encoderGraph(scope, h, decodeVars, src, seg, bias)
	var out []*Node
	for l := range h.DecoderLayers {
		kv := crossKVGraph(scope.At("decoder").At("layer_%d", l).At("cross"), h, states, true)
		out = append(out, kv.keys.k, kv.values)
	}
	n, srcLen := src.Shape().Dimensions[0], src.Shape().Dimensions[1]
	out = append(out, copyKeysGraph(scope, h, states, true).k, Reshape(states, n, 1, srcLen, h.DModel), bias)
	// A padded position never follows the fed token: its previous token is taken as [PAD] (in a
	// training batch the first padded position follows the source's last token; its copy
	// attention is 0 either way, but not its gate term).
	pad := Scalar(g, dtypes.Int32, h.PadID)
	out = append(out, Where(NotEqual(src, pad), previousTokensGraph(h, src), pad))
	// The generation index of each source token (0 when it has none) and whether it has one.
	genIndex, inGen := make([]int32, h.VocabSize), make([]float32, h.VocabSize)
	for k, id := range h.genIDs() {
		genIndex[id], inGen[id] = int32(k), 1
	}
	at := Reshape(src, n*srcLen, 1)
	return append(out, Reshape(Gather(Const(g, genIndex), at), n, srcLen), Reshape(Gather(Const(g, inGen), at), n, srcLen))
}

// Tensors of a sourceBatch after the cross-attention keys and values.
const (
	srcCopyKeys = iota
	srcCopyValues
	srcBias
	srcPrevious
	srcGenIndex
	srcInGen
	srcFirstAt
	srcTensors
)

// Inputs of decodeStepGraph before the cache and the sources' tensors.
const (
	stepToken = iota
	stepPos
	stepAspect
	stepSelfBias
	stepCopyBonus
	stepFixed
)

// stepCache is what a decoding step adds to the training graph's decoder (decoderGraph,
// outputGraph): the rows' self-attention caches, the copy bonuses of the host's decoding state
// and the output embeddings gathered once.
type stepCache struct {
	h Hyperparams
	// rows is the number of hypotheses B, capacity the cache's C.
	rows, capacity int
	// selfBias [B, 1, 1, C] masks each row's cache past its length.
	selfBias *Node
	// keys [B, H, dh, C] and values [B, H, C, dh] of each decoder layer.
	keys, values []*Node
	// copyBonus [n, R, S] is added to the copy attention's scores.
	copyBonus *Node
	// outEmbT [d, G] are the generation vocabulary's output embeddings.
	outEmbT *Node
}

// attend is the self-attention of decoder layer l for the projections q, k, v [n, R, d] of the
// fed tokens, one per row: each row attends to its cached tokens and to its own token, one
// softmax over both. It returns the attention [n, R, d] before the output projection and the fed
// tokens' keys and values [B, H, dh].
func (c *stepCache) attend(l int, q, k, v *Node) (att, kNew, vNew *Node) {
	b, heads, hd := c.rows, c.h.Heads, c.h.headDim()
	scale := 1 / math.Sqrt(float64(hd))
	q4 := Reshape(q, b, heads, 1, hd)
	kNew, vNew = Reshape(k, b, heads, hd), Reshape(v, b, heads, hd)
	// Scores over the cached tokens [B, H, 1, C] (masked past the row's length) and over the fed
	// token itself [B, H, 1, 1].
	past := Add(MulScalar(DotGeneral(q4, []int{3}, []int{0, 1}, c.keys[l], []int{2}, []int{0, 1}), scale), c.selfBias)
	self := MulScalar(Reshape(ReduceSum(Mul(Reshape(q4, b, heads, hd), kNew), 2), b, heads, 1, 1), scale)
	p := layers.SoftmaxLast(Concatenate([]*Node{past, self}, 3))
	att = DotGeneral(Slice(p, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, c.capacity)), []int{3}, []int{0, 1}, c.values[l], []int{2}, []int{0, 1})
	att = Add(Reshape(att, b, heads, hd), Mul(Reshape(Slice(p, AxisRange(), AxisRange(), AxisRange(), AxisRange(c.capacity, c.capacity+1)), b, heads, 1), vNew))
	return Reshape(att, q.Shape().Dimensions...), kNew, vNew
}

// decodeStepGraph is the step described at the top of the file: in lists the inputs above, then
// the cache (keys and values of each decoder layer), then the sources' tensors.
func decodeStepGraph(scope *gomlxmodel.Scope, h Hyperparams, in []*Node) []*Node {
	g := in[0].Graph()
	b := in[stepToken].Shape().Dimensions[0]
	capacity := in[stepSelfBias].Shape().Dimensions[1]
	nl := h.DecoderLayers
	cross, source := in[stepFixed+2*nl:stepFixed+4*nl], in[stepFixed+4*nl:]
	nSrc, srcLen := source[srcBias].Shape().Dimensions[0], source[srcBias].Shape().Dimensions[1]
	rows := b / nSrc // hypotheses per source

	src := &sourceStates{bias: source[srcBias],
		copyKeys: &attnKeys{k: source[srcCopyKeys], transposed: true}, copyValues: source[srcCopyValues]}
	for l := range nl {
		src.cross = append(src.cross, attnKV{keys: attnKeys{k: cross[2*l], transposed: true}, values: cross[2*l+1]})
	}
	cache := &stepCache{h: h, rows: b, capacity: capacity,
		selfBias:  Reshape(in[stepSelfBias], b, 1, 1, capacity),
		keys:      make([]*Node, nl),
		values:    make([]*Node, nl),
		copyBonus: Reshape(in[stepCopyBonus], nSrc, rows, srcLen),
		outEmbT:   scope.Store().Scope(outEmbScope).VariableWithShape(outEmbName, shapes.Make(dtypes.Float32, h.DModel, len(h.genIDs()))).ValueGraph(g),
	}
	for l := range nl {
		cache.keys[l], cache.values[l] = in[stepFixed+2*l], in[stepFixed+2*l+1]
	}

	tokens := Reshape(in[stepToken], nSrc, rows)
	xEmb := targetEmbedGraph(scope, h, tokens, in[stepAspect], Reshape(in[stepPos], nSrc, rows))
	s, newKV := decoderGraph(scope, h, xEmb, src, cache)
	pGen, attn, gate := outputGraph(scope, h, s, xEmb, src, followOfGraph(h, source[srcPrevious], tokens), cache)
	gen, srcPart := mixtureGraph(pGen, attn, gate, source[srcGenIndex], source[srcInGen], source[srcFirstAt])
	return append([]*Node{gen, srcPart}, newKV...)
}

// mixtureGraph is the copy-augmented distribution of the output layer's pGen [N·T, G], copy
// attention attn [N, T, S] over N sources and gate [N, T], over each source's extended vocabulary:
// the generation ids [N·T, G], then the source positions [N·T, S]. A token outside the source has
// its probability at its generation id, gate·pGen; a token of the source at its first position
// (firstAt [N, S]: the first position of each position's token), gate·pGen of its generation id
// (genIndex [N, S]; inGen [N, S] 0 when it has none) plus (1 - gate) times the copy attention of
// all its positions. The host places them at the token ids (placeTokens), the source's last: over
// the whole vocabulary the placement would be a scatter of N·T·G values, which on the Go backend
// costs more than the rest of the mixture.
func mixtureGraph(pGen, attn, gate, genIndex, inGen, firstAt *Node) (gen, src *Node) {
	g := pGen.Graph()
	n, t, srcLen := attn.Shape().Dimensions[0], attn.Shape().Dimensions[1], attn.Shape().Dimensions[2]
	m := n * t
	nGen := pGen.Shape().Dimensions[1]
	gate = Reshape(gate, m, 1)
	// The gate's columns come from a product: cleaned (layers.CleanVectorState) for the scalar
	// code of the mixture that follows (the step took 10% less CPU).
	gen = Mul(pGen, layers.CleanVectorState(expandCols(gate, nGen)))

	perRow := func(x *Node) *Node { // [n, S] -> [m, S]
		return Reshape(BroadcastToDims(Reshape(x, n, 1, srcLen), n, t, srcLen), m, srcLen)
	}
	// The source positions: gate·pGen of the token's generation id ...
	rows := Iota(g, shapes.Make(dtypes.Int32, m, srcLen, 1), 0)
	src = Gather(gen, Concatenate([]*Node{rows, Reshape(perRow(genIndex), m, srcLen, 1)}, 2)) // [m, S]
	src = Mul(src, perRow(inGen))
	// ... plus (1 - gate)·attn summed at the token's first position.
	cp := Mul(Reshape(attn, m, srcLen), expandCols(OneMinus(gate), srcLen))
	first := Add(Mul(Iota(g, shapes.Make(dtypes.Int32, m, srcLen), 0), Scalar(g, dtypes.Int32, srcLen)), perRow(firstAt))
	copied := ScatterSum(Zeros(g, shapes.Make(dtypes.Float32, m*srcLen)), Reshape(first, m*srcLen, 1), Reshape(cp, m*srcLen), false, false)
	return gen, Add(src, Reshape(copied, m, srcLen))
}

// expandCols repeats x [m, 1] on n columns, [m, n], as the product x @ ones[1, n] (exact: one
// product by 1 per element): on the Go backend a matrix kernel, where a broadcast (or an
// elementwise op broadcasting) takes a generic index iterator, several times slower.
func expandCols(x *Node, n int) *Node {
	return DotGeneral(x, []int{1}, nil, Ones(x.Graph(), shapes.Make(x.DType(), 1, n)), []int{0}, nil)
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
	n := g.rowBucket(len(ids))
	src := make([]int32, n*sb)
	segs := make([]int32, n*sb)
	for r := range n {
		i := min(r, len(ids)-1) // rows past the sources repeat the last one
		for j := range sb {
			src[r*sb+j] = h.PadID
			if j < len(ids[i]) {
				src[r*sb+j], segs[r*sb+j] = ids[i][j], seg[i][j]
			}
		}
	}
	out, err := g.encode.Call(tensors.FromFlatDataAndDimensions(src, n, sb), tensors.FromFlatDataAndDimensions(segs, n, sb))
	if err != nil {
		return nil, fmt.Errorf("summarizer encode: %w", err)
	}
	// Each position's first position of its token (a padded one: itself, its copy attention is 0).
	firstAt := make([]int32, n*sb)
	res := make([]*graphSource, len(ids))
	for r := range n {
		i := min(r, len(ids)-1)
		first := map[int32]int32{}
		var firsts []int
		for j := range sb {
			firstAt[r*sb+j] = int32(j)
			if j < len(ids[i]) {
				if _, ok := first[ids[i][j]]; !ok {
					first[ids[i][j]] = int32(j)
					firsts = append(firsts, j)
				}
				firstAt[r*sb+j] = first[ids[i][j]]
			}
		}
		if r < len(ids) {
			res[r] = &graphSource{row: r, firsts: firsts}
		}
	}
	batch := &sourceBatch{tensors: append(out, tensors.FromFlatDataAndDimensions(firstAt, n, sb)), bucket: sb, subsets: map[string][]*tensors.Tensor{}}
	for _, gs := range res {
		gs.batch = batch
	}
	return res, nil
}

// sourcesFor returns the batch's tensors for the sources at rows (in that order): the batch's
// own when rows are all of its rows in order, else copies of those rows, cached. The caller
// holds g.mu.
func (g *graphNet) sourcesFor(batch *sourceBatch, rows []int) []*tensors.Tensor {
	if n := batch.tensors[0].Shape().Dimensions[0]; len(rows) == n {
		identity := true
		for i, r := range rows {
			identity = identity && r == i
		}
		if identity {
			return batch.tensors
		}
	}
	key := fmt.Sprint(rows)
	if t, ok := batch.subsets[key]; ok {
		return t
	}
	out := make([]*tensors.Tensor, len(batch.tensors))
	for i, t := range batch.tensors {
		dims := slices.Clone(t.Shape().Dimensions)
		per := t.Shape().Memory() / uintptr(dims[0]) // bytes per row
		dims[0] = len(rows)
		out[i] = tensors.FromShape(shapes.Make(t.DType(), dims...))
		err := t.ConstBytes(func(all []byte) {
			err := out[i].MutableBytes(func(dst []byte) {
				for k, r := range rows {
					copy(dst[uintptr(k)*per:uintptr(k+1)*per], all[uintptr(r)*per:uintptr(r+1)*per])
				}
			})
			if err != nil {
				panic(err)
			}
		})
		if err != nil {
			panic(err)
		}
	}
	batch.subsets[key] = out
	return out
}

// kvCache is a hypothesis's self-attention cache on the host: per decoder layer the keys
// [H, dh, capacity] (transposed: the step's scores then run on the Go backend's plain kernel)
// and the values [H, capacity, dh] of the tokens fed so far.
type kvCache struct {
	keys, values [][]float32
	capacity, hd int
}

// write stores the keys k and values v [H][dh] of layer l's token at slot pos.
func (c *kvCache) write(l, pos int, k, v [][]float32) {
	keys, values := c.keys[l], c.values[l]
	hd := len(k[0])
	for hh := range k {
		for i, x := range k[hh] {
			keys[(hh*hd+i)*c.capacity+pos] = x
		}
		copy(values[(hh*c.capacity+pos)*hd:(hh*c.capacity+pos+1)*hd], v[hh])
	}
}

// copyLayer copies the first n slots of layer l's keys (or values) into dst, laid out with the
// given capacity.
func (c *kvCache) copyLayer(dst []float32, l int, keys bool, capacity, n int) {
	src, rows, width := c.values[l], len(c.values[l])/(c.capacity*c.hd), c.hd // [H, C, dh]
	if keys {
		src, rows, width = c.keys[l], len(c.keys[l])/c.capacity, 1 // [H·dh, C]
	}
	if capacity == c.capacity {
		copy(dst, src[:rows*capacity*width])
		return
	}
	for r := range rows {
		copy(dst[r*capacity*width:(r*capacity+n)*width], src[r*c.capacity*width:(r*c.capacity+n)*width])
	}
}

// resized returns a copy of c with the given capacity (at least its used slots, n).
func (c *kvCache) resized(capacity, n, heads, hd int) *kvCache {
	out := newKVCache(len(c.keys), capacity, heads, hd)
	for l := range c.keys {
		c.copyLayer(out.keys[l], l, true, capacity, n)
		c.copyLayer(out.values[l], l, false, capacity, n)
	}
	return out
}

// newKVCache returns an empty cache of the given capacity.
func newKVCache(layers, capacity, heads, hd int) *kvCache {
	c := &kvCache{capacity: capacity, hd: hd}
	for range layers {
		c.keys = append(c.keys, make([]float32, heads*hd*capacity))
		c.values = append(c.values, make([]float32, heads*capacity*hd))
	}
	return c
}

// stepGraph feeds tokens[i] to states[i] through the step graph, with the copy bonuses bonus[i]
// (nil: none; else one per source token), and writes the copy-augmented distribution of each
// state's next token into probs[i]; states are grouped by source batch, one call per group (in a
// decoding run, all of them are one).
func (g *graphNet) stepGraph(states []*DecState, tokens []int32, bonus, probs [][]float32) error {
	groups := map[*sourceBatch][]int{}
	var order []*sourceBatch
	for i, st := range states {
		b := st.Src.graph.batch
		if _, ok := groups[b]; !ok {
			order = append(order, b)
		}
		groups[b] = append(groups[b], i)
	}
	for _, b := range order {
		if err := g.stepGroup(b, states, tokens, bonus, groups[b], probs); err != nil {
			return err
		}
	}
	return nil
}

// stepGroup runs the step graph for the states at idx, all of source batch batch, and writes
// their distributions into probs.
func (g *graphNet) stepGroup(batch *sourceBatch, states []*DecState, tokens []int32, bonus [][]float32, idx []int, probs [][]float32) error {
	lay := g.layoutRows(states, idx)
	in := &stepArgs{g: g}
	in.tokens(lay, states, tokens, bonus, batch.bucket)
	in.cache(lay, states)
	if err := errors.Join(in.errs...); err != nil {
		return fmt.Errorf("summarizer step: %w", err)
	}
	args := in.args
	own := len(args) // the inputs made here, released after the call
	g.mu.Lock()
	for _, t := range g.sourcesFor(batch, lay.srcRows) {
		args = append(args, t)
	}
	g.mu.Unlock()
	res, err := g.step.Call(args...)
	if err != nil {
		return fmt.Errorf("summarizer step: %w", err)
	}
	// The step's buffers go back to the backend's pool at once, not when the collector finds
	// them: a step's are the size of the cache and of the vocabulary.
	defer func() {
		for _, t := range args[:own] {
			_ = t.(*tensors.Tensor).FinalizeAll()
		}
		for _, t := range res {
			_ = t.FinalizeAll()
		}
	}()
	g.keepStep(res, lay, states, probs)
	return nil
}

// stepRows lays a step's hypotheses out in rows: the n sources in order of first appearance, R
// rows each (rows past a source's hypotheses, and sources past n on a pow2 backend, repeat the
// last; their outputs are dropped). The layout is the training graph's batch (see graphNet).
type stepRows struct {
	srcRows  []int         // each source's row in its batch, padded to the bucket
	bySource map[int][]int // the state indices reading each source row
	rowState []int         // state index of each row
	kept     []bool        // whether the row's outputs are kept
	capacity int           // the cache capacity, bucketed from the longest hypothesis
}

// layoutRows groups the states at idx by source into a step's rows (stepRows); kept apart from
// stepGroup because the inputs, the sources' tensors and the outputs all follow this one layout.
func (g *graphNet) layoutRows(states []*DecState, idx []int) stepRows {
	lay := stepRows{bySource: map[int][]int{}}
	longest := 1
	for _, i := range idx {
		r := states[i].Src.graph.row
		if _, ok := lay.bySource[r]; !ok {
			lay.srcRows = append(lay.srcRows, r)
		}
		lay.bySource[r] = append(lay.bySource[r], i)
		longest = max(longest, states[i].pos)
	}
	perSource := 0
	for _, rs := range lay.bySource {
		perSource = max(perSource, len(rs))
	}
	perSource = g.rowBucket(perSource)
	nSrc := g.rowBucket(len(lay.srcRows))
	for len(lay.srcRows) < nSrc {
		lay.srcRows = append(lay.srcRows, lay.srcRows[len(lay.srcRows)-1])
	}
	lay.rowState = make([]int, 0, nSrc*perSource)
	lay.kept = make([]bool, 0, nSrc*perSource)
	seen := map[int]bool{}
	for _, r := range lay.srcRows {
		rs := lay.bySource[r]
		for j := range perSource {
			lay.rowState = append(lay.rowState, rs[min(j, len(rs)-1)])
			lay.kept = append(lay.kept, j < len(rs) && !seen[r])
		}
		seen[r] = true
	}
	lay.capacity = g.bucketLen(longest, cacheBucket)
	return lay
}

// stepArgs collects a step's own inputs (all but the sources' tensors), in the step graph's
// order. The inputs are written straight into tensors of the backend: on one that shares host
// memory (the Go one) the graph then reads them without a copy. Every input is made even after
// an error, so that the errors are reported together.
type stepArgs struct {
	g    *graphNet
	args []any
	errs []error
}

// add makes an input of the given dtype and shape, filled by fill (given the flat data).
func (a *stepArgs) add(dtype dtypes.DType, fill func(flat any), dims ...int) {
	t, err := tensors.FromShapeForBackend(a.g.backend, 0, shapes.Make(dtype, dims...))
	if err == nil {
		err = t.MutableFlatData(fill)
	}
	a.args = append(a.args, t)
	a.errs = append(a.errs, err)
}

// tokens adds the per-row inputs: the fed token, its target position, each source's aspect, the
// self-attention bias over the cached tokens and the copy bonuses (over sb source positions).
func (a *stepArgs) tokens(lay stepRows, states []*DecState, tokens []int32, bonus [][]float32, sb int) {
	h, b, capacity := a.g.h, len(lay.rowState), lay.capacity
	ints := func(value func(st *DecState, i int) int32) func(flat any) {
		return func(flat any) {
			for r, i := range lay.rowState {
				flat.([]int32)[r] = value(states[i], i)
			}
		}
	}
	a.add(dtypes.Int32, ints(func(_ *DecState, i int) int32 { return tokens[i] }), b)
	a.add(dtypes.Int32, ints(func(st *DecState, _ int) int32 { return int32(min(st.pos, h.lastTrainedTgtPos())) }), b)
	a.add(dtypes.Int32, func(flat any) {
		for k, r := range lay.srcRows {
			flat.([]int32)[k] = max(states[lay.bySource[r][0]].Src.Aspect, 0)
		}
	}, len(lay.srcRows))
	a.add(dtypes.Float32, func(flat any) {
		for r, i := range lay.rowState {
			row := flat.([]float32)[r*capacity : (r+1)*capacity]
			clear(row)
			for j := states[i].pos; j < capacity; j++ {
				row[j] = maskBias
			}
		}
	}, b, capacity)
	a.add(dtypes.Float32, func(flat any) {
		for r, i := range lay.rowState {
			row := flat.([]float32)[r*sb : (r+1)*sb]
			clear(row[copy(row, bonus[i]):])
		}
	}, b, sb)
}

// cache adds the self-attention cache, keys then values per decoder layer, each row's copied in;
// a row of a smaller cache (or none) is cleared first (the backend's buffers are reused: masked
// slots must still hold finite values).
func (a *stepArgs) cache(lay stepRows, states []*DecState) {
	h := a.g.h
	heads, hd, capacity, b := h.Heads, h.headDim(), lay.capacity, len(lay.rowState)
	per := heads * hd * capacity
	for l := range h.DecoderLayers {
		for _, keys := range []bool{true, false} {
			fill := func(flat any) {
				dst := flat.([]float32)
				for r, i := range lay.rowState {
					row := dst[r*per : (r+1)*per]
					c := states[i].cache
					if c == nil || c.capacity != capacity {
						clear(row)
					}
					if c != nil {
						c.copyLayer(row, l, keys, capacity, states[i].pos)
					}
				}
			}
			dims := []int{b, heads, capacity, hd}
			if keys {
				dims = []int{b, heads, hd, capacity}
			}
			a.add(dtypes.Float32, fill, dims...)
		}
	}
}

// keepStep reads the step's results into the kept rows' states: the distribution into probs
// (placed at the token ids) and the fed token's keys and values into the state's own cache.
func (g *graphNet) keepStep(res []*tensors.Tensor, lay stepRows, states []*DecState, probs [][]float32) {
	h := g.h
	heads, hd, nl, b := h.Heads, h.headDim(), h.DecoderLayers, len(lay.rowState)
	newKV := make([][][][]float32, 2*nl) // [layer·2][row][head][dh]
	for l, t := range res[2:] {
		newKV[l] = t.Value().([][][]float32)
	}
	genIDs := h.genIDs()
	tensors.MustConstFlatData(res[0], func(gen []float32) {
		tensors.MustConstFlatData(res[1], func(src []float32) {
			g, s := len(gen)/b, len(src)/b
			for r, i := range lay.rowState {
				if lay.kept[r] {
					placeTokens(probs[i], gen[r*g:(r+1)*g], src[r*s:(r+1)*s], genIDs, states[i].Src)
				}
			}
		})
	})
	for r, i := range lay.rowState {
		if !lay.kept[r] {
			continue
		}
		st := states[i]
		st.ownCache(g, heads, hd, nl)
		for l := range nl {
			st.cache.write(l, st.pos, newKV[2*l][r], newKV[2*l+1][r])
		}
	}
}

// placeTokens writes into out (the vocabulary) the distribution over src's extended vocabulary
// (mixtureGraph): the generation ids' probabilities gen, then, over them, the source tokens' from
// their first positions in srcPart; the other ids get 0.
func placeTokens(out, gen, srcPart []float32, genIDs []int32, src *Source) {
	clear(out)
	for k, id := range genIDs {
		out[id] = gen[k]
	}
	for _, j := range src.graph.firsts {
		out[src.IDs[j]] = srcPart[j]
	}
}

// ownCache makes st's cache its own (not shared with a clone) with room for slot st.pos.
func (st *DecState) ownCache(g *graphNet, heads, hd, nl int) {
	switch {
	case st.cache == nil:
		st.cache = newKVCache(nl, g.bucketLen(st.pos+1, cacheBucket), heads, hd)
	case st.pos >= st.cache.capacity || st.sharedCache:
		st.cache = st.cache.resized(max(st.cache.capacity, g.bucketLen(st.pos+1, cacheBucket)), st.pos, heads, hd)
	}
	st.sharedCache = false
}

// backendError is a failure of the graph backend (a device out of memory, say) inside Step or
// EncodeAll, which cannot return errors; Summarize turns it back into an error.
type backendError struct{ err error }
