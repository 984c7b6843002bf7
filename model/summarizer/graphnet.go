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
	"github.com/gomlx/gomlx/ml/layers/activation"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/layers"
	"github.com/tracksum/tracksum/model"
)

// Graph decoding: the network of graph.go run through two GoMLX Execs, so that inference runs on
// whatever backend the process has (an XLA GPU included), with the decoding bonuses and
// constraints of Net.mix kept on the host.
//
//	encode: src, seg [N, S] -> the gate term of each encoder state (states . gate_c) [N, S],
//	        then, for every decoder layer, the cross-attention keys [N, H, dh, S] and values
//	        [N, H, S, dh] (split in heads, keys transposed), and the copy keys [N, d, S]:
//	        everything the decoder reads from the sources, computed once and kept as one batch.
//	step:   B = n·R hypotheses, R rows per source of n sources (row r reads source r / R): one
//	        token per row [B], its target position and aspect, the self-attention bias [B, C]
//	        over the cached tokens, the source bias [n, S]; the cache (keys [B, H, dh, C] and
//	        values [B, H, C, dh] per decoder layer); the n sources' tensors -> logits over the
//	        generation vocabulary [B, G], copy scores [B, S], the gate's state and input terms
//	        [B], then the fed token's keys and values [B, H, dh] per decoder layer.
//
// The cache lives on the host, one buffer per hypothesis: the step reads it as an input and
// returns only the new token's keys and values, which the host writes in place (a beam's clones
// share a buffer until one writes: copy on write). Nothing of the size of the cache is
// concatenated, selected or split inside the graph, which on the pure-Go backend cost more than
// the step's arithmetic. The rows of one source attend to its keys together (R queries of one
// [H, dh, S] block), so a beam reads its source once. Shapes are bucketed (model.BucketLen):
// sources to srcBucket, the cache to cacheBucket, and n and R to powers of two on a backend that
// compiles per shape.

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

// sourceBatch is the encoder's output for the sources of one EncodeAll call, kept batched: per
// decoder layer the cross-attention keys [N, H, dh, S] and values [N, H, S, dh], then the copy
// keys [N, d, S] (N ≥ the number of sources: padded rows repeat the last one).
type sourceBatch struct {
	tensors []*tensors.Tensor
	bucket  int
	// subsets caches the tensors of a list of the batch's sources (a step where some sources
	// have finished decoding), keyed by the list.
	subsets map[string][]*tensors.Tensor
}

// graphSource is the part of a Source that graph decoding reads: its batch and row there, and
// the gate term of each encoder state.
type graphSource struct {
	batch   *sourceBatch
	row     int
	srcGate []float32
}

// newGraphNet builds the Execs of graph decoding on backend from the model's variables.
func newGraphNet(backend compute.Backend, h Hyperparams, vars map[string]*tensors.Tensor, outEmb []float32) (*graphNet, error) {
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
	nGen := len(outEmb) / d
	outEmbT := make([]float32, d*nGen)
	for k := range nGen {
		for i := range d {
			outEmbT[i*nGen+k] = outEmb[k*d+i]
		}
	}
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

// perSource is the number of tensors a source batch holds: cross keys and values per decoder
// layer, and the copy keys.
func (h Hyperparams) perSource() int { return 2*h.DecoderLayers + 1 }

// encodeSourcesGraph encodes src, seg [N, S] (PadID-padded) and returns the gate terms [N, S] of
// the encoder states, then the sourceBatch tensors.
func encodeSourcesGraph(scope *gomlxmodel.Scope, h Hyperparams, src, seg *Node) []*Node {
	g := src.Graph()
	n, srcLen := src.Shape().Dimensions[0], src.Shape().Dimensions[1]
	d := h.DModel
	srcBias := Where(NotEqual(src, Scalar(g, dtypes.Int32, h.PadID)), ZerosLike(ConvertDType(src, dtypes.Float32)), Scalar(g, dtypes.Float32, maskBias))
	enc := encoderGraph(scope, h, decodeVars, src, seg, srcBias)
	gc := scope.At("copy").VariableWithShape("gate_c", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	out := []*Node{Reshape(layers.Product(Reshape(enc, n*srcLen, d), Reshape(gc, d, 1)), n, srcLen)}
	for l := range h.DecoderLayers {
		cs := scope.At("decoder").At("layer_%d", l).At("cross")
		kT := TransposeAllDims(layers.SplitHeads(layerVars.Dense(cs, "k", enc, d, activation.TypeNone), h.Heads), 0, 1, 3, 2)
		out = append(out, kT, layers.SplitHeads(layerVars.Dense(cs, "v", enc, d, activation.TypeNone), h.Heads))
	}
	return append(out, Transpose(layerVars.Dense(scope.At("copy"), "k", enc, d, activation.TypeNone), 1, 2))
}

// Inputs of decodeStepGraph before the cache and the sources' tensors.
const (
	stepToken = iota
	stepPos
	stepAspect
	stepSelfBias
	stepSrcBias
	stepFixed
)

// decodeStepGraph is the step described at the top of the file: in lists the inputs above, then
// the cache (keys and values of each decoder layer), then the sources' tensors.
func decodeStepGraph(scope *gomlxmodel.Scope, h Hyperparams, in []*Node) []*Node {
	g := in[0].Graph()
	b := in[stepToken].Shape().Dimensions[0]
	capacity := in[stepSelfBias].Shape().Dimensions[1]
	nSrc, srcLen := in[stepSrcBias].Shape().Dimensions[0], in[stepSrcBias].Shape().Dimensions[1]
	rows := b / nSrc // hypotheses per source
	d, nl, heads := h.DModel, h.DecoderLayers, h.Heads
	hd := d / heads
	cache := in[stepFixed : stepFixed+2*nl]
	source := in[stepFixed+2*nl:]

	es := scope.At("embed")
	tokens := es.VariableWithShape("tokens", shapes.Make(dtypes.Float32, h.VocabSize, d)).ValueGraph(g)
	pos := es.VariableWithShape("tgt_pos", shapes.Make(dtypes.Float32, h.maxPositions(), d)).ValueGraph(g)
	x := Add(Gather(tokens, Reshape(in[stepToken], b, 1)), Gather(pos, Reshape(in[stepPos], b, 1))) // [B, d]
	if h.NumAspects > 0 {
		table := es.VariableWithShape("aspect", shapes.Make(dtypes.Float32, h.NumAspects+1, d)).ValueGraph(g)
		x = Add(x, Gather(table, Reshape(in[stepAspect], b, 1)))
	}
	xEmb := x

	proj := func(s *gomlxmodel.Scope, name string, y *Node) *Node {
		return layerVars.Dense(s, name, y, d, activation.TypeNone)
	}
	scale := 1 / math.Sqrt(float64(hd))
	selfBias := Reshape(in[stepSelfBias], b, 1, 1, capacity)
	srcBias := Reshape(in[stepSrcBias], nSrc, 1, 1, srcLen)
	newKV := make([]*Node, 0, 2*nl)
	for l := range nl {
		ls := scope.At("decoder").At("layer_%d", l)
		y := layerVars.LayerNorm(ls.At("ln1"), x)
		ss := ls.At("self")
		q := Reshape(proj(ss, "q", y), b, heads, 1, hd)
		k, v := Reshape(proj(ss, "k", y), b, heads, hd), Reshape(proj(ss, "v", y), b, heads, hd)
		newKV = append(newKV, k, v)
		// Scores over the cached tokens [B, H, 1, C] (masked past the row's length) and over the
		// fed token itself [B, H, 1, 1], one softmax over both.
		past := Add(MulScalar(DotGeneral(q, []int{3}, []int{0, 1}, cache[2*l], []int{2}, []int{0, 1}), scale), selfBias)
		self := MulScalar(Reshape(ReduceSum(Mul(Reshape(q, b, heads, hd), k), 2), b, heads, 1, 1), scale)
		p := layers.SoftmaxLast(Concatenate([]*Node{past, self}, 3))
		att := DotGeneral(Slice(p, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, capacity)), []int{3}, []int{0, 1}, cache[2*l+1], []int{2}, []int{0, 1})
		att = Add(Reshape(att, b, heads, hd), Mul(Reshape(Slice(p, AxisRange(), AxisRange(), AxisRange(), AxisRange(capacity, capacity+1)), b, heads, 1), v))
		x = Add(x, proj(ss, "o", Reshape(att, b, d)))

		// Cross-attention: the R rows of a source are R queries of its keys.
		y = layerVars.LayerNorm(ls.At("ln2"), x)
		cs := ls.At("cross")
		qc := TransposeAllDims(Reshape(proj(cs, "q", y), nSrc, rows, heads, hd), 0, 2, 1, 3) // [n, H, R, dh]
		scores := Add(MulScalar(DotGeneral(qc, []int{3}, []int{0, 1}, source[2*l], []int{2}, []int{0, 1}), scale), srcBias)
		att = layers.AttentionValues(layers.SoftmaxLast(scores), source[2*l+1]) // [n, H, R, dh]
		x = Add(x, proj(cs, "o", Reshape(TransposeAllDims(att, 0, 2, 1, 3), b, d)))

		y = layerVars.LayerNorm(ls.At("ln3"), x)
		x = Add(x, ffnGraph(ls.At("ffn"), h, y))
	}
	s := layerVars.LayerNorm(scope.At("decoder").At("ln"), x) // [B, d]

	nGen := len(h.genIDs())
	outEmbT := scope.Store().Scope(outEmbScope).VariableWithShape(outEmbName, shapes.Make(dtypes.Float32, d, nGen)).ValueGraph(g)
	outBias := es.VariableWithShape("out_bias", shapes.Make(dtypes.Float32, nGen)).ValueGraph(g)
	logits := Add(layers.Product(s, outEmbT), layers.BroadcastRows(outBias, b))

	cs := scope.At("copy")
	qc := Reshape(proj(cs, "q", s), nSrc, rows, d)
	scores := DotGeneral(qc, []int{2}, []int{0}, source[2*nl], []int{1}, []int{0}) // copy keys [n, d, S] -> [n, R, S]
	scores = Reshape(MulScalar(scores, 1/math.Sqrt(float64(d))), b, srcLen)

	gs := cs.VariableWithShape("gate_s", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	gx := cs.VariableWithShape("gate_x", shapes.Make(dtypes.Float32, d)).ValueGraph(g)
	gateS := Reshape(layers.Product(s, Reshape(gs, d, 1)), b)
	gateX := Reshape(layers.Product(xEmb, Reshape(gx, d, 1)), b)
	return append([]*Node{logits, scores, gateS, gateX}, newKV...)
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
	batch := &sourceBatch{tensors: out[1:], bucket: sb, subsets: map[string][]*tensors.Tensor{}}
	res := make([]*graphSource, len(ids))
	tensors.MustConstFlatData(out[0], func(flat []float32) {
		for i := range res {
			res[i] = &graphSource{batch: batch, row: i, srcGate: slices.Clone(flat[i*sb : i*sb+len(ids[i])])}
		}
	})
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
		per := t.Shape().Size() / dims[0]
		dims[0] = len(rows)
		flat := make([]float32, len(rows)*per)
		tensors.MustConstFlatData(t, func(all []float32) {
			for k, r := range rows {
				copy(flat[k*per:(k+1)*per], all[r*per:(r+1)*per])
			}
		})
		out[i] = tensors.FromFlatDataAndDimensions(flat, dims...)
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

// stepGraph feeds tokens[i] to states[i] through the step graph and returns each state's network
// outputs; states are grouped by source batch, one call per group (in a decoding run, all of
// them are one).
func (g *graphNet) stepGraph(states []*DecState, tokens []int32) ([]stepOut, error) {
	groups := map[*sourceBatch][]int{}
	var order []*sourceBatch
	for i, st := range states {
		b := st.Src.graph.batch
		if _, ok := groups[b]; !ok {
			order = append(order, b)
		}
		groups[b] = append(groups[b], i)
	}
	out := make([]stepOut, len(states))
	for _, b := range order {
		if err := g.stepGroup(b, states, tokens, groups[b], out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stepGroup runs the step graph for the states at idx, all of source batch batch, and writes
// their outputs into out.
func (g *graphNet) stepGroup(batch *sourceBatch, states []*DecState, tokens []int32, idx []int, out []stepOut) error {
	h := g.h
	heads, hd, nl := h.Heads, h.headDim(), h.DecoderLayers
	// Rows grouped by source: the n sources in order of first appearance, R rows each (rows past
	// a source's hypotheses, and sources past n on a pow2 backend, repeat the last; dropped).
	bySource := map[int][]int{}
	var srcRows []int
	longest := 1
	for _, i := range idx {
		r := states[i].Src.graph.row
		if _, ok := bySource[r]; !ok {
			srcRows = append(srcRows, r)
		}
		bySource[r] = append(bySource[r], i)
		longest = max(longest, states[i].pos)
	}
	perSource := 0
	for _, rs := range bySource {
		perSource = max(perSource, len(rs))
	}
	perSource = g.rowBucket(perSource)
	nSrc := g.rowBucket(len(srcRows))
	for len(srcRows) < nSrc {
		srcRows = append(srcRows, srcRows[len(srcRows)-1])
	}
	rowState := make([]int, 0, nSrc*perSource) // state index of each row
	kept := make([]bool, 0, nSrc*perSource)    // whether the row's outputs are kept
	seen := map[int]bool{}
	for _, r := range srcRows {
		rs := bySource[r]
		for j := range perSource {
			rowState = append(rowState, rs[min(j, len(rs)-1)])
			kept = append(kept, j < len(rs) && !seen[r])
		}
		seen[r] = true
	}
	b := len(rowState)
	capacity := g.bucketLen(longest, cacheBucket)
	sb := batch.bucket

	// The inputs are written straight into tensors of the backend: on one that shares host
	// memory (the Go one) the graph then reads them without a copy.
	var args []any
	input := func(dtype dtypes.DType, fill func(flat any), dims ...int) error {
		t, err := tensors.FromShapeForBackend(g.backend, 0, shapes.Make(dtype, dims...))
		if err == nil {
			err = t.MutableFlatData(fill)
		}
		args = append(args, t)
		return err
	}
	ints := func(value func(st *DecState, i int) int32) func(flat any) {
		return func(flat any) {
			for r, i := range rowState {
				flat.([]int32)[r] = value(states[i], i)
			}
		}
	}
	errs := []error{
		input(dtypes.Int32, ints(func(_ *DecState, i int) int32 { return tokens[i] }), b),
		input(dtypes.Int32, ints(func(st *DecState, _ int) int32 { return int32(min(st.pos, h.lastTrainedTgtPos())) }), b),
		input(dtypes.Int32, ints(func(st *DecState, _ int) int32 { return max(st.Src.Aspect, 0) }), b),
		input(dtypes.Float32, func(flat any) {
			for r, i := range rowState {
				row := flat.([]float32)[r*capacity : (r+1)*capacity]
				clear(row)
				for j := states[i].pos; j < capacity; j++ {
					row[j] = maskBias
				}
			}
		}, b, capacity),
		input(dtypes.Float32, func(flat any) {
			for k, r := range srcRows {
				row := flat.([]float32)[k*sb : (k+1)*sb]
				clear(row)
				for j := len(states[bySource[r][0]].Src.IDs); j < sb; j++ {
					row[j] = maskBias
				}
			}
		}, nSrc, sb),
	}
	// The cache, each row's copied in (a row's own capacity may be smaller).
	per := heads * hd * capacity
	for l := range nl {
		for _, keys := range []bool{true, false} {
			fill := func(flat any) {
				dst := flat.([]float32)
				clear(dst)
				for r, i := range rowState {
					if c := states[i].cache; c != nil {
						c.copyLayer(dst[r*per:(r+1)*per], l, keys, capacity, states[i].pos)
					}
				}
			}
			dims := []int{b, heads, capacity, hd}
			if keys {
				dims = []int{b, heads, hd, capacity}
			}
			errs = append(errs, input(dtypes.Float32, fill, dims...))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("summarizer step: %w", err)
	}
	g.mu.Lock()
	for _, t := range g.sourcesFor(batch, srcRows) {
		args = append(args, t)
	}
	g.mu.Unlock()
	res, err := g.step.Call(args...)
	if err != nil {
		return fmt.Errorf("summarizer step: %w", err)
	}
	// Copied out of the results (the mixture writes into the logits and the scores).
	logits, scores := rowsOf(res[0], b), rowsOf(res[1], b)
	gateS, gateX := res[2].Value().([]float32), res[3].Value().([]float32)
	newKV := make([][][][]float32, 2*nl) // [layer·2][row][head][dh]
	for l, t := range res[4:] {
		newKV[l] = t.Value().([][][]float32)
	}
	for r, i := range rowState {
		if !kept[r] {
			continue
		}
		st := states[i]
		out[i] = stepOut{logits: logits[r], copyScores: scores[r], gateS: gateS[r], gateX: gateX[r]}
		st.ownCache(g, heads, hd, nl)
		for l := range nl {
			st.cache.write(l, st.pos, newKV[2*l][r], newKV[2*l+1][r])
		}
	}
	return nil
}

// rowsOf copies a [b, n] result into b rows.
func rowsOf(t *tensors.Tensor, b int) [][]float32 {
	out := make([][]float32, b)
	tensors.MustConstFlatData(t, func(flat []float32) {
		n := len(flat) / b
		for r := range b {
			out[r] = slices.Clone(flat[r*n : (r+1)*n])
		}
	})
	return out
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
