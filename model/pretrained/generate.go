package pretrained

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/decode"
)

// GenOptions are the summarizer's decoding settings, stored in its checkpoint (infer's flags
// override them).
type GenOptions struct {
	// BeamSize 1 is greedy decoding; more is beam search (model/decode). Ignored when sampling.
	BeamSize int `json:"beam_size"`
	// MaxNewTokens caps the generated tokens (the end token included).
	MaxNewTokens int `json:"max_new_tokens"`
	// LengthPenalty and NoRepeatNgram are model/decode's (GNMT alpha; n-gram blocking, 0 off).
	LengthPenalty float64 `json:"length_penalty"`
	NoRepeatNgram int     `json:"no_repeat_ngram"`
	// Temperature > 0 samples instead of searching: each token drawn from the distribution
	// sharpened by 1/Temperature and cut to its top-p nucleus (TopP in (0, 1]; 0 means 1).
	Temperature float64 `json:"temperature,omitempty"`
	TopP        float64 `json:"top_p,omitempty"`
	// TopK > 0 keeps the TopK most probable tokens before the nucleus cut (transformers' top_k,
	// applied after the temperature and before top_p, as its logits warpers are); 0 keeps all.
	TopK int `json:"top_k,omitempty"`
	// Seed seeds sampling; each prompt draws from its own stream (seed, prompt index).
	Seed int64 `json:"seed,omitempty"`
	// Done, when set, ends prompt i's answer after tokens as the end token would (tokens kept;
	// decode.Options.Done): a chat's end marker spelt in ordinary tokens. Not stored.
	Done func(prompt int, tokens []int32) bool `json:"-"`
}

// cacheBucket rounds the KV cache's length, so that a few graph shapes serve every prompt.
const cacheBucket = 64

// maxGenBatch caps the rows of one batched call (prompts x beam hypotheses), bounding the memory
// of a step; more rows run in several calls.
const maxGenBatch = 64

// generator decodes from a causal LM with a padded KV cache, several sequences at once as
// transformers' generate does: the prompts of one Generate call are left-padded to a common length
// and prefilled in one batch (RoPE positions count real tokens only, the key mask hides the pads),
// so that every hypothesis of every prompt then sits at the same cache slot and one batched step
// advances them all, greedy, beam and sampling alike. It implements decode.Model over *genState,
// and is safe for concurrent use.
type generator struct {
	lm      *causalLM
	vocab   int
	stop    []int32 // Stop[0] is the end token model/decode sees: the others' probabilities join it
	layers  int
	mu      sync.Mutex
	prefill *gomlxmodel.Exec
	// step advances a batch whose rows are its cache's rows in order; gatherStep first gathers
	// the rows it advances from a cache (beam search's reordered and cloned hypotheses, rows that
	// finished).
	step, gatherStep *gomlxmodel.Exec
}

// batchCache is the KV cache of one batched call: 2*Layers tensors of [B, ...] whose row r belongs
// to the hypotheses pointing at it with row r. Tensors are never changed in place (Exec does not
// donate them), so hypotheses share a batchCache until they advance, and a step's output is a new
// batchCache. Keeping the batch whole, rather than one [1, ...] tensor per hypothesis, spares
// each step a concatenation of every row's cache before the step and a slice of it after: on the
// pure-Go backend those copies made a batched step cost as much as the rows one at a time.
type batchCache struct {
	tensors []*tensors.Tensor
	rows    int
}

// genState is one hypothesis: its row of a batch's cache, the number of slots used (pads
// included), the number of pads, and, before the first Step, the distribution after the prompt.
type genState struct {
	cache *batchCache
	row   int
	n     int
	pad   int
	first []float32
	// limit is the most real tokens the state may hold (prompt, answer): the model's context
	// (max_position_embeddings) or the prompt plus the answer's cap; a state there answers only
	// the end token.
	limit int
}

// full reports whether st holds as many real tokens as it may: the token it predicts now could not
// be fed back, so it is the end.
func (st *genState) full() bool { return st.n-st.pad >= st.limit }

func newGenerator(lm *causalLM, stop []int32) (*generator, error) {
	g := &generator{lm: lm, vocab: lm.dec.Config().Vocab, stop: stop, layers: lm.dec.Config().Layers}
	var err error
	// prefill: tokens [B, S], positions [B, S], keyMask [B, M], last [B, 1] -> probs [B, V], then
	// the cache tensors ([B, ...], 2*Layers).
	g.prefill, err = gomlxmodel.NewExec(lm.backend, lm.store, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
		gr := in[0].Graph()
		b, m := in[0].Shape().Dimensions[0], in[2].Shape().Dimensions[1]
		cache := lm.dec.NewCache(gr, b, m)
		hidden, next := lm.dec.Step(scope, cache, in[0], in[1], in[2], Scalar(gr, dtypes.Int32, 0))
		logits := lm.dec.Logits(scope, Squeeze(gatherPositions(hidden, in[3]), 1))
		return append([]*Node{Softmax(logits, -1)}, next.Flatten()...)
	})
	if err != nil {
		return nil, fmt.Errorf("pretrained: %w", err)
	}
	// step: token [B, 1], position [B, 1], keyMask [B, M], offset [], then the cache tensors
	// ([B, ...]) -> probs [B, V], then the new cache tensors.
	g.step, err = gomlxmodel.NewExec(lm.backend, lm.store, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
		hidden, next := lm.dec.Step(scope, lm.dec.CacheFrom(in[4:]), in[0], in[1], in[2], in[3])
		logits := lm.dec.Logits(scope, Squeeze(hidden, 1))
		return append([]*Node{Softmax(logits, -1)}, next.Flatten()...)
	})
	if err != nil {
		return nil, fmt.Errorf("pretrained: %w", err)
	}
	// gatherStep: step's inputs with rows [B] (int32) after the offset: row r of the batch is
	// row rows[r] of the cache tensors, which may hold a different number of rows.
	g.gatherStep, err = gomlxmodel.NewExec(lm.backend, lm.store, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
		b := in[0].Shape().Dimensions[0]
		idx := Reshape(in[4], b, 1)
		cache := make([]*Node, len(in)-5)
		for i, t := range in[5:] {
			cache[i] = Gather(t, idx)
		}
		hidden, next := lm.dec.Step(scope, lm.dec.CacheFrom(cache), in[0], in[1], in[2], in[3])
		logits := lm.dec.Logits(scope, Squeeze(hidden, 1))
		return append([]*Node{Softmax(logits, -1)}, next.Flatten()...)
	})
	if err != nil {
		return nil, fmt.Errorf("pretrained: %w", err)
	}
	g.prefill.SetMaxCache(-1)
	g.step.SetMaxCache(-1)
	g.gatherStep.SetMaxCache(-1)
	return g, nil
}

// batchBucket rounds a batch up to a power of two (at most maxGenBatch), so that beam search,
// whose number of live hypotheses shrinks as they finish, compiles a few step graphs only.
func batchBucket(n int) int {
	b := 1
	for b < n && b < maxGenBatch {
		b *= 2
	}
	return b
}

// start prefills the prompts together, left-padded to a common length, and returns their states,
// with room for maxNew more tokens each within the model's context.
func (g *generator) start(prompts [][]int32, maxNew int) ([]*genState, error) {
	for _, p := range prompts {
		if len(p) == 0 {
			return nil, fmt.Errorf("pretrained: empty prompt")
		}
	}
	s, capacity, err := g.layout(prompts, maxNew)
	if err != nil {
		return nil, err
	}
	ctxLen := g.lm.dec.Config().MaxPositions
	states := make([]*genState, 0, len(prompts))
	for lo := 0; lo < len(prompts); lo += maxGenBatch {
		chunk := prompts[lo:min(lo+maxGenBatch, len(prompts))]
		b := batchBucket(len(chunk))
		tok := make([]int32, b*s)
		pos := make([]int32, b*s)
		mask := make([]float32, b*capacity)
		last := make([]int32, b)
		for r := range b {
			p := chunk[min(r, len(chunk)-1)] // rows past the chunk repeat its last prompt; dropped
			pad := s - len(p)
			for i := range s {
				tok[r*s+i] = g.stop[0]
				if i >= pad {
					tok[r*s+i] = p[i-pad]
					pos[r*s+i] = int32(i - pad)
					mask[r*capacity+i] = 1
				}
			}
			last[r] = int32(s - 1)
		}
		g.mu.Lock()
		out, err := g.prefill.Call(tensors.FromFlatDataAndDimensions(tok, b, s), tensors.FromFlatDataAndDimensions(pos, b, s),
			tensors.FromFlatDataAndDimensions(mask, b, capacity), tensors.FromFlatDataAndDimensions(last, b, 1))
		g.mu.Unlock()
		if err != nil {
			return nil, err
		}
		probs := g.mergedRows(out[0])
		cache := &batchCache{tensors: out[1:], rows: b}
		for r := range chunk {
			states = append(states, &genState{cache: cache, row: r, n: s, pad: s - len(chunk[r]), first: probs[r],
				limit: min(len(chunk[r])+maxNew, ctxLen)})
		}
	}
	return states, nil
}

// layout returns the common prompt length s (the longest prompt, bucketed) and cache capacity of a
// batch of prompts with up to maxNew tokens each within the model's context; a prompt that leaves
// no room for an answer is an error.
func (g *generator) layout(prompts [][]int32, maxNew int) (s, capacity int, err error) {
	ctxLen := g.lm.dec.Config().MaxPositions
	longest, gen := 0, 0
	for _, p := range prompts {
		if len(p) >= ctxLen {
			return 0, 0, fmt.Errorf("pretrained: a prompt of %d tokens leaves no room for an answer in the model's context of %d (max_position_embeddings)", len(p), ctxLen)
		}
		longest, gen = max(longest, len(p)), max(gen, min(maxNew, ctxLen-len(p)))
	}
	s = model.BucketLen(longest, seqBucket)
	return s, model.BucketLen(s+gen, cacheBucket), nil
}

// mergedRows copies a [B, V] distribution row by row, moving the probability of every stop token
// onto stop[0].
func (g *generator) mergedRows(t *tensors.Tensor) [][]float32 {
	var rows [][]float32
	tensors.ConstFlatData(t, func(flat []float32) {
		for r := 0; r+g.vocab <= len(flat); r += g.vocab {
			p := slices.Clone(flat[r : r+g.vocab])
			for _, id := range g.stop[1:] {
				if int(id) < len(p) {
					p[g.stop[0]] += p[id]
					p[id] = 0
				}
			}
			rows = append(rows, p)
		}
	})
	return rows
}

// Step implements decode.Model: a fresh state answers with its prompt's distribution (the token
// fed, decode's start token, is not part of the sequence); the others advance together, one
// batched step per group of states at the same cache slot.
func (g *generator) Step(states []*genState, tokens []int32, probs [][]float32) {
	var idx []int
	for i, st := range states {
		if st.first != nil {
			copy(probs[i], st.first)
			st.first = nil
			continue
		}
		idx = append(idx, i)
	}
	sub := make([]*genState, len(idx))
	toks := make([]int32, len(idx))
	for k, i := range idx {
		sub[k], toks[k] = states[i], tokens[i]
	}
	out, err := g.advance(sub, toks)
	if err != nil {
		panic(err) // decode.Model has no error path; Generate recovers it
	}
	for k, i := range idx {
		copy(probs[i], out[k])
	}
	for i, st := range states {
		if st.full() {
			clear(probs[i])
			probs[i][g.stop[0]] = 1
		}
	}
}

// advance feeds tokens[i] to states[i] and returns each next distribution. States at the same
// cache slot in the same batch cache (all of them, within one Generate call of up to maxGenBatch
// prompts) run as one batch.
func (g *generator) advance(states []*genState, tokens []int32) ([][]float32, error) {
	out := make([][]float32, len(states))
	type key struct {
		n     int
		cache *batchCache
	}
	groups := map[key][]int{}
	var order []key
	for i, st := range states {
		k := key{st.n, st.cache}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	for _, k := range order {
		all := groups[k]
		capacity := k.cache.tensors[0].Shape().Dimensions[2]
		if k.n >= capacity {
			return nil, fmt.Errorf("pretrained: KV cache full (%d tokens)", capacity)
		}
		for lo := 0; lo < len(all); lo += maxGenBatch {
			idx := all[lo:min(lo+maxGenBatch, len(all))]
			b := batchBucket(len(idx))
			tok := make([]int32, b)
			pos := make([]int32, b)
			rows := make([]int32, b)
			mask := make([]float32, b*capacity)
			// inOrder: row r of the batch is row r of the cache (rows past the group's are padding,
			// whatever they hold), so the cache goes in as it is.
			inOrder := b == k.cache.rows
			for r := range b {
				i := idx[min(r, len(idx)-1)] // rows past the group repeat its last state; dropped
				st := states[i]
				tok[r], pos[r], rows[r] = tokens[i], int32(st.n-st.pad), int32(st.row)
				if r < len(idx) && st.row != r {
					inOrder = false
				}
				for j := st.pad; j <= st.n; j++ {
					mask[r*capacity+j] = 1
				}
			}
			args := []any{tensors.FromFlatDataAndDimensions(tok, b, 1), tensors.FromFlatDataAndDimensions(pos, b, 1),
				tensors.FromFlatDataAndDimensions(mask, b, capacity), tensors.FromScalarAndDimensions(int32(k.n))}
			exec := g.step
			if !inOrder {
				exec = g.gatherStep
				args = append(args, tensors.FromFlatDataAndDimensions(rows, b))
			}
			for _, t := range k.cache.tensors {
				args = append(args, t)
			}
			g.mu.Lock()
			res, err := exec.Call(args...)
			g.mu.Unlock()
			if err != nil {
				return nil, err
			}
			probs := g.mergedRows(res[0])
			next := &batchCache{tensors: res[1:], rows: b}
			for r, i := range idx {
				st := states[i]
				st.cache, st.row, st.n = next, r, st.n+1
				out[i] = probs[r]
			}
		}
	}
	return out, nil
}

// Clone implements decode.Model: the clone shares its batch cache's row until one of the two
// advances (see batchCache).
func (g *generator) Clone(s *genState) *genState {
	c := *s
	c.first = slices.Clone(s.first)
	return &c
}

// VocabSize implements decode.Model.
func (g *generator) VocabSize() int { return g.vocab }

// Generate returns the generated ids of each prompt (without the end token); the prompts are
// decoded together (see generator).
func (g *generator) Generate(prompts [][]int32, o GenOptions) (out [][]int32, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	if len(prompts) == 0 {
		return [][]int32{}, nil
	}
	maxNew := max(o.MaxNewTokens, 1)
	if err := g.checkSearch(prompts, maxNew, o); err != nil {
		return nil, err
	}
	inits, err := g.start(prompts, maxNew)
	if err != nil {
		return nil, err
	}
	if o.Temperature > 0 {
		return g.sample(inits, maxNew, o)
	}
	hyps := decode.Search[*genState](g, inits, decode.Options{BeamSize: max(o.BeamSize, 1), MaxLen: maxNew, MinLen: 1,
		LengthPenalty: o.LengthPenalty, NoRepeatNgram: o.NoRepeatNgram, BOS: g.stop[0], EOS: g.stop[0], Done: o.Done})
	out = make([][]int32, len(prompts))
	for i, h := range hyps {
		out[i] = h.Tokens
	}
	return out, nil
}

// checkSearch refuses a search whose hypotheses cannot exist at once in memory, before any is
// allocated: each hypothesis keeps a KV cache (layers x keys and values x kv heads x head_dim x
// the batch's capacity, counted in float32) and a distribution over the vocabulary. A beam wider
// than the vocabulary has nothing to fill it. The budget is half the memory the system reports
// available (8 GiB when it does not say).
func (g *generator) checkSearch(prompts [][]int32, maxNew int, o GenOptions) error {
	c := g.lm.dec.Config()
	beam := max(o.BeamSize, 1)
	if o.Temperature > 0 {
		beam = 1
	}
	if beam > c.Vocab {
		return fmt.Errorf("pretrained: beam size %d is larger than the vocabulary (%d tokens)", beam, c.Vocab)
	}
	_, capacity, err := g.layout(prompts, maxNew)
	if err != nil {
		return err
	}
	perHyp := float64(c.Layers)*2*float64(c.KVHeads*c.HeadDim)*float64(capacity)*4 + 3*float64(c.Vocab)*4
	need := float64(beam) * float64(len(prompts)) * perHyp
	if budget := memoryBudget(); need > budget {
		return fmt.Errorf("pretrained: beam size %d over %d prompts needs about %.1f GiB for its caches, more than the %.1f GiB available: lower --beam-size or --max-length",
			beam, len(prompts), need/(1<<30), budget/(1<<30))
	}
	return nil
}

// memoryBudget is half of MemAvailable in /proc/meminfo, or 8 GiB where that is not readable.
func memoryBudget() float64 {
	const fallback = 8 << 30
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return fallback
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil || kb <= 0 {
				return fallback
			}
			return kb * 1024 / 2
		}
	}
	return fallback
}

// sample draws up to maxNew tokens for each state with temperature and top-p, every unfinished
// sequence advanced in the same batched step; prompt i draws from its own stream (seed, i), so
// its output does not depend on the others.
func (g *generator) sample(states []*genState, maxNew int, o GenOptions) ([][]int32, error) {
	out := make([][]int32, len(states))
	rngs := make([]*rand.Rand, len(states))
	probs := make([][]float32, len(states))
	live := make([]int, 0, len(states))
	for i, st := range states {
		rngs[i] = rand.New(rand.NewPCG(uint64(o.Seed), uint64(i)))
		probs[i], st.first = st.first, nil
		live = append(live, i)
	}
	for range maxNew {
		var next []int
		var sts []*genState
		var toks []int32
		for _, i := range live {
			tok := samplePiece(probs[i], o.Temperature, o.TopP, o.TopK, rngs[i].Float64())
			if tok == g.stop[0] || states[i].full() {
				continue
			}
			out[i] = append(out[i], tok)
			if o.Done != nil && o.Done(i, out[i]) {
				continue
			}
			next, sts, toks = append(next, i), append(sts, states[i]), append(toks, tok)
		}
		if len(next) == 0 {
			break
		}
		p, err := g.advance(sts, toks)
		if err != nil {
			return nil, err
		}
		for k, i := range next {
			probs[i] = p[k]
		}
		live = next
	}
	return out, nil
}

// samplePiece draws a token from probs sharpened by 1/temperature, cut to the topK most probable
// (0: all), then to the smallest set of most probable tokens whose mass reaches topP (0 or >= 1:
// all), with u uniform in [0, 1).
func samplePiece(probs []float32, temperature, topP float64, topK int, u float64) int32 {
	type cand struct {
		id int32
		w  float64
	}
	cands := make([]cand, 0, len(probs))
	var total float64
	for i, p := range probs {
		if p <= 0 {
			continue
		}
		w := math.Exp(math.Log(float64(p)) / temperature)
		cands = append(cands, cand{int32(i), w})
		total += w
	}
	if len(cands) == 0 {
		return 0
	}
	slices.SortFunc(cands, func(a, b cand) int {
		switch {
		case a.w > b.w:
			return -1
		case a.w < b.w:
			return 1
		}
		return int(a.id - b.id)
	})
	if topK > 0 && topK < len(cands) {
		cands = cands[:topK]
		total = 0
		for _, c := range cands {
			total += c.w
		}
	}
	if topP > 0 && topP < 1 {
		var mass float64
		for k, c := range cands {
			mass += c.w / total
			if mass >= topP-1e-6 { // float32 inputs: a mass equal to topP may fall short by rounding
				cands = cands[:k+1]
				break
			}
		}
		total = 0
		for _, c := range cands {
			total += c.w
		}
	}
	x := u * total
	for _, c := range cands {
		if x < c.w {
			return c.id
		}
		x -= c.w
	}
	return cands[len(cands)-1].id
}
