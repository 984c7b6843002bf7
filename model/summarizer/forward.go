package summarizer

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"
)

// Net is the summarizer network in plain Go, for inference: the encoder runs once per source and
// its outputs (states, cross-attention keys and values, copy keys) are cached; each decoding step
// then costs one token's worth of work plus attention over the cached keys (a KV cache), so time per
// generated token stays flat as the output grows. A Net is read-only and safe for concurrent use.
type Net struct {
	H       Hyper
	tokens  []float32 // [V, D]
	genIDs  []int32   // generation vocabulary
	outEmb  []float32 // [G, D]: rows of tokens for genIDs (tied output projection)
	outBias []float32 // [G]
	srcPos  []float32 // [P, D]
	tgtPos  []float32 // [P, D]
	segment []float32 // [2, D]
	aspect  []float32 // [NumAspects+1, D], nil without aspect conditioning
	enc     []encLayer
	encLN   layerNorm
	dec     []decLayer
	decLN   layerNorm
	copyQ   linear
	copyK   linear
	gateS   []float32
	gateC   []float32
	gateX   []float32
	gateB   float32
	gateF   float32
	// followBonus is added to the copy score of a source position that follows the input token.
	followBonus float32
	// suppress lists ids that are never generated (special tokens other than [EOS]).
	suppress []int32
	// ChainBonus (decoding only, 0 = off) is added to the copy score of the source positions that
	// continue the longest span of at least two tokens copied so far: the learned follow bonus
	// only knows the last token, so with frequent subwords ("-", "E") the copy jumps between
	// occurrences; the chain keeps it on the span it is copying. Set it before decoding starts.
	ChainBonus float32
	// Words (decoding only, nil = off) forbids word-internal pieces that would glue a word found
	// neither in the source nor in the training summaries (see WordRule). Set it before decoding.
	Words *WordRule
}

type linear struct {
	w       []float32 // [in, out], row-major
	b       []float32 // [out]
	in, out int
}

type layerNorm struct{ gain, bias []float32 }

type attnWeights struct{ q, k, v, o linear }

type encLayer struct {
	ln1, ln2 layerNorm
	self     attnWeights
	ffnIn    linear
	ffnOut   linear
}

type decLayer struct {
	ln1, ln2, ln3 layerNorm
	self, cross   attnWeights
	ffnIn, ffnOut linear
}

// NewNet builds the Go network from the model's variables, keyed by their path relative to the
// model scope (e.g. "embed/tokens", "encoder/layer_0/self/q_w").
func NewNet(h Hyper, vars map[string]*tensors.Tensor) (*Net, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	var missing []string
	get := func(name string, dims ...int) []float32 {
		t, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return nil
		}
		want := 1
		for _, d := range dims {
			want *= d
		}
		if t.Shape().Size() != want {
			missing = append(missing, fmt.Sprintf("%s (shape %s, want %v)", name, t.Shape(), dims))
			return nil
		}
		out := make([]float32, want)
		tensors.MustConstFlatData(t, func(flat []float32) { copy(out, flat) })
		return out
	}
	d, v, p := h.DModel, h.VocabSize, h.maxPositions()
	lin := func(prefix string, in, out int) linear {
		return linear{w: get(prefix+"_w", in, out), b: get(prefix+"_b", out), in: in, out: out}
	}
	ln := func(prefix string) layerNorm {
		return layerNorm{gain: get(prefix+"/gain", d), bias: get(prefix+"/bias", d)}
	}
	attn := func(prefix string) attnWeights {
		return attnWeights{q: lin(prefix+"/q", d, d), k: lin(prefix+"/k", d, d), v: lin(prefix+"/v", d, d), o: lin(prefix+"/o", d, d)}
	}
	n := &Net{
		H:       h,
		tokens:  get("embed/tokens", v, d),
		outBias: get("embed/out_bias", len(h.genIDs())),
		genIDs:  h.genIDs(),
		srcPos:  get("embed/src_pos", p, d),
		tgtPos:  get("embed/tgt_pos", p, d),
		segment: get("embed/segment", 2, d),
		encLN:   ln("encoder/ln"),
		decLN:   ln("decoder/ln"),
		copyQ:   lin("copy/q", d, d),
		copyK:   lin("copy/k", d, d),
		gateS:   get("copy/gate_s", d),
		gateC:   get("copy/gate_c", d),
		gateX:   get("copy/gate_x", d),
	}
	if h.NumAspects > 0 {
		n.aspect = get("embed/aspect", h.NumAspects+1, d)
	}
	for name, dst := range map[string]*float32{"copy/gate_b": &n.gateB, "copy/gate_follow": &n.gateF, "copy/follow_bonus": &n.followBonus} {
		if v := get(name); len(v) == 1 {
			*dst = v[0]
		}
	}
	for l := range h.EncoderLayers {
		pre := fmt.Sprintf("encoder/layer_%d", l)
		n.enc = append(n.enc, encLayer{ln1: ln(pre + "/ln1"), ln2: ln(pre + "/ln2"), self: attn(pre + "/self"),
			ffnIn: lin(pre+"/ffn/in", d, h.FFNDim), ffnOut: lin(pre+"/ffn/out", h.FFNDim, d)})
	}
	for l := range h.DecoderLayers {
		pre := fmt.Sprintf("decoder/layer_%d", l)
		n.dec = append(n.dec, decLayer{ln1: ln(pre + "/ln1"), ln2: ln(pre + "/ln2"), ln3: ln(pre + "/ln3"),
			self: attn(pre + "/self"), cross: attn(pre + "/cross"),
			ffnIn: lin(pre+"/ffn/in", d, h.FFNDim), ffnOut: lin(pre+"/ffn/out", h.FFNDim, d)})
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("summarizer weights: missing or misshapen: %s", strings.Join(missing, ", "))
	}
	n.outEmb = make([]float32, len(n.genIDs)*d)
	for i, id := range n.genIDs {
		copy(n.outEmb[i*d:(i+1)*d], n.tokens[int(id)*d:int(id+1)*d])
	}
	return n, nil
}

// Source is an encoded source sequence with everything the decoder reads from it, computed once.
type Source struct {
	IDs []int32
	// Aspect is the aspect index the decoder is conditioned on (Hyper.NumAspects > 0).
	Aspect  int32
	states  []float32   // [S, D] final encoder states
	crossK  [][]float32 // per decoder layer, [S, D]
	crossV  [][]float32
	copyKey []float32 // [S, D]
}

// Encode runs the encoder over one source (ids and segment ids, same length, no padding) whose
// summary is for the aspect of index aspect (ignored by a model without aspect conditioning).
func (n *Net) Encode(ids, seg []int32, aspect int32) *Source {
	h := n.H
	d, s := h.DModel, len(ids)
	x := make([]float32, s*d)
	for i, id := range ids {
		row := x[i*d : (i+1)*d]
		copy(row, n.tokens[int(id)*d:int(id+1)*d])
		addTo(row, n.segment[int(seg[i])*d:int(seg[i]+1)*d])
		addTo(row, n.srcPos[i*d:(i+1)*d])
	}
	y := make([]float32, s*d)
	for _, l := range n.enc {
		l.ln1.apply(x, y, d)
		q, k, v := l.self.q.apply(y, s), l.self.k.apply(y, s), l.self.v.apply(y, s)
		att := multiHead(q, k, v, s, s, d, h.Heads, nil)
		addTo(x, l.self.o.apply(att, s))
		l.ln2.apply(x, y, d)
		hid := l.ffnIn.apply(y, s)
		relu(hid)
		addTo(x, l.ffnOut.apply(hid, s))
	}
	n.encLN.apply(x, x, d)
	if n.aspect != nil && (aspect < 0 || int(aspect) > h.NumAspects) {
		panic(fmt.Sprintf("summarizer: aspect index %d outside [0, %d]", aspect, h.NumAspects))
	}
	src := &Source{IDs: ids, Aspect: aspect, states: x, copyKey: n.copyK.apply(x, s)}
	for _, l := range n.dec {
		src.crossK = append(src.crossK, l.cross.k.apply(x, s))
		src.crossV = append(src.crossV, l.cross.v.apply(x, s))
	}
	return src
}

// DecState is one hypothesis being decoded: its source and the self-attention keys and values of
// the tokens fed so far (the KV cache).
type DecState struct {
	Src   *Source
	selfK [][]float32 // per decoder layer, [t, D]
	selfV [][]float32
	pos   int
	// match[j] is the length of the longest suffix of the fed tokens that ends at source position j
	// (maintained only when the Net's ChainBonus is set).
	match []int32
	// word is the piece sequence of the word being written (maintained only with a WordRule).
	word []int32
}

// NewState starts decoding src; the first token to feed is [BOS].
func (n *Net) NewState(src *Source) *DecState {
	return &DecState{Src: src, selfK: make([][]float32, len(n.dec)), selfV: make([][]float32, len(n.dec))}
}

// Clone copies a hypothesis (beam search forks them); the source is shared, read-only.
func (st *DecState) Clone() *DecState {
	c := &DecState{Src: st.Src, pos: st.pos, selfK: make([][]float32, len(st.selfK)), selfV: make([][]float32, len(st.selfV)),
		match: append([]int32(nil), st.match...), word: append([]int32(nil), st.word...)}
	for l := range st.selfK {
		c.selfK[l] = append([]float32(nil), st.selfK[l]...)
		c.selfV[l] = append([]float32(nil), st.selfV[l]...)
	}
	return c
}

// addChain updates the copy-span matches with the fed token and adds bonus to the copy scores a of
// the positions that continue the longest match (two tokens or more); a match that ends a tracked
// sentence continues after the sep token that follows it.
func (st *DecState) addChain(a []float32, tok int32, bonus float32, sep int32) {
	ids := st.Src.IDs
	if st.match == nil {
		st.match = make([]int32, len(ids))
	}
	longest := int32(0)
	for j := len(ids) - 1; j >= 0; j-- { // backwards: match[j-1] is still the previous step's
		m := int32(0)
		if ids[j] == tok {
			m = 1
			if j > 0 {
				m += st.match[j-1]
			}
		}
		st.match[j] = m
		longest = max(longest, m)
	}
	if longest < 2 {
		return
	}
	for j := 1; j < len(ids); j++ {
		if st.match[j-1] != longest {
			continue
		}
		// A span that reaches the end of a tracked sentence continues with the next one: the
		// [SEP] between them is layout, never generated.
		if ids[j] == sep && j+1 < len(ids) {
			a[j+1] += bonus
		} else {
			a[j] += bonus
		}
	}
}

// Len is the number of tokens fed so far.
func (st *DecState) Len() int { return st.pos }

// Step feeds token to every state (one token each, batched) and writes into probs[i] (length
// VocabSize) the copy-augmented distribution of the next token of state i.
func (n *Net) Step(states []*DecState, tokens []int32, probs [][]float32) {
	h := n.H
	d, b := h.DModel, len(states)
	x := make([]float32, b*d)
	for i, st := range states {
		if st.pos >= h.maxPositions() {
			panic(fmt.Sprintf("summarizer: decoder position %d beyond the %d learned positions", st.pos, h.maxPositions()))
		}
		row := x[i*d : (i+1)*d]
		copy(row, n.tokens[int(tokens[i])*d:int(tokens[i]+1)*d])
		addTo(row, n.tgtPos[st.pos*d:(st.pos+1)*d])
		if n.aspect != nil {
			a := int(st.Src.Aspect)
			addTo(row, n.aspect[a*d:(a+1)*d])
		}
	}
	xEmb := append([]float32(nil), x...)
	y := make([]float32, b*d)
	att := make([]float32, b*d)
	for li, l := range n.dec {
		l.ln1.apply(x, y, d)
		q, k, v := l.self.q.apply(y, b), l.self.k.apply(y, b), l.self.v.apply(y, b)
		for i, st := range states {
			st.selfK[li] = append(st.selfK[li], k[i*d:(i+1)*d]...)
			st.selfV[li] = append(st.selfV[li], v[i*d:(i+1)*d]...)
			t := st.pos + 1
			copy(att[i*d:(i+1)*d], multiHead(q[i*d:(i+1)*d], st.selfK[li], st.selfV[li], 1, t, d, h.Heads, nil))
		}
		addTo(x, l.self.o.apply(att, b))
		l.ln2.apply(x, y, d)
		q = l.cross.q.apply(y, b)
		for i, st := range states {
			s := len(st.Src.IDs)
			copy(att[i*d:(i+1)*d], multiHead(q[i*d:(i+1)*d], st.Src.crossK[li], st.Src.crossV[li], 1, s, d, h.Heads, nil))
		}
		addTo(x, l.cross.o.apply(att, b))
		l.ln3.apply(x, y, d)
		hid := l.ffnIn.apply(y, b)
		relu(hid)
		addTo(x, l.ffnOut.apply(hid, b))
	}
	n.decLN.apply(x, x, d)
	for _, st := range states {
		st.pos++
	}

	qc := n.copyQ.apply(x, b)
	// Logits over the generation vocabulary for all hypotheses in one pass over the output
	// embeddings, which are read once per step instead of once per hypothesis.
	nGen := len(n.genIDs)
	logits := make([]float32, b*nGen)
	for k := range nGen {
		e := n.outEmb[k*d : (k+1)*d]
		for i := range b {
			logits[i*nGen+k] = dot(x[i*d:(i+1)*d], e) + n.outBias[k]
		}
	}
	scale := float32(1 / math.Sqrt(float64(d)))
	for i, st := range states {
		s := x[i*d : (i+1)*d]
		out := probs[i]
		lg := logits[i*nGen : (i+1)*nGen]
		maxLogit := float32(math.Inf(-1))
		for _, z := range lg {
			maxLogit = max(maxLogit, z)
		}
		var sum float64
		for k, z := range lg {
			e := float32(math.Exp(float64(z - maxLogit)))
			lg[k] = e
			sum += float64(e)
		}
		// Copy attention and context.
		src := st.Src
		srcLen := len(src.IDs)
		a := make([]float32, srcLen)
		q := qc[i*d : (i+1)*d]
		following := float32(0)
		for j := range srcLen {
			a[j] = dot(q, src.copyKey[j*d:(j+1)*d]) * scale
			if j > 0 && src.IDs[j-1] == tokens[i] && tokens[i] != h.PadID {
				a[j] += n.followBonus
				following = 1
			}
		}
		if n.ChainBonus != 0 {
			st.addChain(a, tokens[i], n.ChainBonus, h.SepID)
		}
		softmax(a)
		ctx := make([]float32, d)
		for j, aj := range a {
			axpy(aj, src.states[j*d:(j+1)*d], ctx)
		}
		gate := sigmoid(dot(s, n.gateS) + dot(ctx, n.gateC) + dot(xEmb[i*d:(i+1)*d], n.gateX) + following*n.gateF + n.gateB)
		g := gate / float32(sum)
		clear(out)
		for k, id := range n.genIDs {
			out[id] = lg[k] * g
		}
		for j, aj := range a {
			out[src.IDs[j]] += (1 - gate) * aj
		}
		for _, id := range n.suppress {
			out[id] = 0
		}
		if n.Words != nil {
			st.word = n.Words.next(st.word, tokens[i], h.BosID)
			n.Words.apply(out, st.word, src.IDs)
		}
	}
}

// Suppress makes Step give probability 0 to ids (e.g. [PAD], [SEP]: tokens a summary never holds).
func (n *Net) Suppress(ids []int32) { n.suppress = slices.Clone(ids) }

// apply returns x [rows, in] W + b as [rows, out]. Rows are processed in blocks that share each
// weight row while it is in cache.
func (l linear) apply(x []float32, rows int) []float32 {
	const block = 8
	y := make([]float32, rows*l.out)
	for r := range rows {
		copy(y[r*l.out:(r+1)*l.out], l.b)
	}
	for r0 := 0; r0 < rows; r0 += block {
		r1 := min(r0+block, rows)
		for k := range l.in {
			w := l.w[k*l.out : (k+1)*l.out]
			for r := r0; r < r1; r++ {
				if xv := x[r*l.in+k]; xv != 0 {
					axpy(xv, w, y[r*l.out:(r+1)*l.out])
				}
			}
		}
	}
	return y
}

// apply normalises each row of x (width d) into y (which may be x).
func (ln layerNorm) apply(x, y []float32, d int) {
	for r := 0; r < len(x); r += d {
		row := x[r : r+d]
		var mean float64
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(d)
		var variance float64
		for _, v := range row {
			dv := float64(v) - mean
			variance += dv * dv
		}
		variance /= float64(d)
		inv := 1 / math.Sqrt(variance+lnEpsilon)
		out := y[r : r+d]
		for i, v := range row {
			out[i] = float32((float64(v)-mean)*inv)*ln.gain[i] + ln.bias[i]
		}
	}
}

// multiHead computes attention of tq queries over tk keys/values (all [t, d], heads interleaved
// as d = heads x headDim, like the graph's reshape) and returns [tq, d]. bias, when not nil, is
// added to the scores [tq, tk] of every head.
func multiHead(q, k, v []float32, tq, tk, d, heads int, bias []float32) []float32 {
	hd := d / heads
	scale := float32(1 / math.Sqrt(float64(hd)))
	out := make([]float32, tq*d)
	scores := make([]float32, tk)
	for i := range tq {
		for hh := range heads {
			qi := q[i*d+hh*hd : i*d+(hh+1)*hd]
			for j := range tk {
				scores[j] = dot(qi, k[j*d+hh*hd:j*d+(hh+1)*hd]) * scale
				if bias != nil {
					scores[j] += bias[i*tk+j]
				}
			}
			softmax(scores)
			oi := out[i*d+hh*hd : i*d+(hh+1)*hd]
			for j, p := range scores {
				axpy(p, v[j*d+hh*hd:j*d+(hh+1)*hd], oi)
			}
		}
	}
	return out
}

func softmax(x []float32) {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	var sum float32
	for i, v := range x {
		e := float32(math.Exp(float64(v - m)))
		x[i] = e
		sum += e
	}
	for i := range x {
		x[i] /= sum
	}
}

func relu(x []float32) {
	for i, v := range x {
		if v < 0 {
			x[i] = 0
		}
	}
}

func sigmoid(z float32) float32 { return float32(1 / (1 + math.Exp(-float64(z)))) }

func addTo(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// dot is unrolled by four: the inner loop of attention and of the vocabulary projection.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy adds alpha*x to y.
func axpy(alpha float32, x, y []float32) {
	x = x[:len(y)]
	i := 0
	for ; i+4 <= len(y); i += 4 {
		y[i] += alpha * x[i]
		y[i+1] += alpha * x[i+1]
		y[i+2] += alpha * x[i+2]
		y[i+3] += alpha * x[i+3]
	}
	for ; i < len(y); i++ {
		y[i] += alpha * x[i]
	}
}

// Clone implements decode.Model.
func (n *Net) Clone(st *DecState) *DecState { return st.Clone() }

// VocabSize implements decode.Model.
func (n *Net) VocabSize() int { return n.H.VocabSize }
