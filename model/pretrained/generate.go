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
	// Seed seeds sampling; each prompt draws from its own stream (seed, prompt index).
	Seed int64 `json:"seed,omitempty"`
}

// cacheBucket rounds the KV cache's length, so that a few graph shapes serve every prompt.
const cacheBucket = 64

// generator decodes from a causal LM with its KV cache: one prefill of the prompt, then one
// token per step. It implements decode.Model over *genState, and is safe for concurrent use.
type generator struct {
	lm      *causalLM
	vocab   int
	stop    []int32 // Stop[0] is the end token model/decode sees: the others' probabilities join it
	layers  int
	mu      sync.Mutex
	prefill *gomlxmodel.Exec
	step    *gomlxmodel.Exec
}

// genState is one hypothesis: the cache, the number of tokens in it, and, before the first Step,
// the distribution after the prompt.
type genState struct {
	cache []*tensors.Tensor
	n     int
	first []float32
	// limit is the most tokens the state may hold (prompt, answer): the model's context
	// (max_position_embeddings) or the prompt plus the answer's cap; a state there answers only
	// the end token.
	limit int
}

func newGenerator(lm *causalLM, stop []int32) (*generator, error) {
	g := &generator{lm: lm, vocab: lm.dec.Config().Vocab, stop: stop, layers: lm.dec.Config().Layers}
	var err error
	// prefill: tokens [1, S], positions [1, S], keyMask [1, M], last [1, 1] -> probs [1, V], cache...
	g.prefill, err = gomlxmodel.NewExec(lm.backend, lm.store, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
		gr := in[0].Graph()
		m := in[2].Shape().Dimensions[1]
		cache := lm.dec.NewCache(gr, 1, m)
		hidden, next := lm.dec.Step(scope, cache, in[0], in[1], in[2], Scalar(gr, dtypes.Int32, 0))
		logits := lm.dec.Logits(scope, Squeeze(gatherPositions(hidden, in[3]), 1))
		return append([]*Node{Softmax(logits, -1)}, next.Flatten()...)
	})
	if err != nil {
		return nil, fmt.Errorf("pretrained: %w", err)
	}
	// step: token [1, 1], position [1, 1], keyMask [1, M], offset [] , cache... -> probs [1, V], cache...
	g.step, err = gomlxmodel.NewExec(lm.backend, lm.store, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
		cache := lm.dec.CacheFrom(in[4:])
		hidden, next := lm.dec.Step(scope, cache, in[0], in[1], in[2], in[3])
		logits := lm.dec.Logits(scope, Squeeze(hidden, 1))
		return append([]*Node{Softmax(logits, -1)}, next.Flatten()...)
	})
	if err != nil {
		return nil, fmt.Errorf("pretrained: %w", err)
	}
	g.prefill.SetMaxCache(-1)
	g.step.SetMaxCache(-1)
	return g, nil
}

// start prefills a prompt and returns its state, with room for maxNew more tokens within the
// model's context.
func (g *generator) start(prompt []int32, maxNew int) (*genState, error) {
	ctxLen := g.lm.dec.Config().MaxPositions
	if len(prompt) >= ctxLen {
		return nil, fmt.Errorf("pretrained: a prompt of %d tokens leaves no room for an answer in the model's context of %d (max_position_embeddings)", len(prompt), ctxLen)
	}
	limit := min(len(prompt)+maxNew, ctxLen)
	capacity := roundUp(limit, cacheBucket)
	s := roundUp(len(prompt), seqBucket)
	tok := make([]int32, s)
	pos := make([]int32, s)
	for i := range s {
		if i < len(prompt) {
			tok[i] = prompt[i]
		} else {
			tok[i] = g.stop[0]
		}
		pos[i] = int32(i)
	}
	g.mu.Lock()
	out, err := g.prefill.Call(tensors.FromFlatDataAndDimensions(tok, 1, s), tensors.FromFlatDataAndDimensions(pos, 1, s),
		keyMask(capacity, len(prompt)), tensors.FromFlatDataAndDimensions([]int32{int32(len(prompt) - 1)}, 1, 1))
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &genState{cache: out[1:], n: len(prompt), first: g.merged(out[0]), limit: limit}, nil
}

// keyMask marks the first n of capacity cache slots as real.
func keyMask(capacity, n int) *tensors.Tensor {
	m := make([]float32, capacity)
	for i := range min(n, capacity) {
		m[i] = 1
	}
	return tensors.FromFlatDataAndDimensions(m, 1, capacity)
}

// merged copies a [1, V] distribution, moving the probability of every stop token onto stop[0].
func (g *generator) merged(t *tensors.Tensor) []float32 {
	var p []float32
	tensors.ConstFlatData(t, func(flat []float32) { p = slices.Clone(flat) })
	for _, id := range g.stop[1:] {
		if int(id) < len(p) {
			p[g.stop[0]] += p[id]
			p[id] = 0
		}
	}
	return p
}

// Step implements decode.Model: a fresh state answers with its prompt's distribution (the token
// fed, decode's start token, is not part of the sequence); the others run one cached step.
func (g *generator) Step(states []*genState, tokens []int32, probs [][]float32) {
	for i, st := range states {
		if st.first != nil {
			copy(probs[i], st.first)
			st.first = nil
		} else {
			p, err := g.advance(st, tokens[i])
			if err != nil {
				panic(err) // decode.Model has no error path; Generate recovers it
			}
			copy(probs[i], p)
		}
		if st.n >= st.limit {
			// The context is full: the token predicted now could not be fed back, so it is the end.
			clear(probs[i])
			probs[i][g.stop[0]] = 1
		}
	}
}

// advance feeds one token to st and returns the next distribution.
func (g *generator) advance(st *genState, token int32) ([]float32, error) {
	capacity := st.cache[0].Shape().Dimensions[2]
	if st.n >= capacity {
		return nil, fmt.Errorf("pretrained: KV cache full (%d tokens)", capacity)
	}
	args := []any{tensors.FromFlatDataAndDimensions([]int32{token}, 1, 1), tensors.FromFlatDataAndDimensions([]int32{int32(st.n)}, 1, 1),
		keyMask(capacity, st.n+1), tensors.FromScalarAndDimensions(int32(st.n))}
	for _, t := range st.cache {
		args = append(args, t)
	}
	g.mu.Lock()
	out, err := g.step.Call(args...)
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	st.cache, st.n = out[1:], st.n+1
	return g.merged(out[0]), nil
}

// Clone implements decode.Model. Tensors are never changed in place (Exec does not donate them),
// so the clone shares the cache until one of the two advances.
func (g *generator) Clone(s *genState) *genState {
	c := *s
	c.cache = slices.Clone(s.cache)
	c.first = slices.Clone(s.first)
	return &c
}

// VocabSize implements decode.Model.
func (g *generator) VocabSize() int { return g.vocab }

// Generate returns the generated ids of each prompt (without the end token).
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
	maxNew := max(o.MaxNewTokens, 1)
	if err := g.checkSearch(prompts, maxNew, o); err != nil {
		return nil, err
	}
	inits := make([]*genState, len(prompts))
	for i, p := range prompts {
		if inits[i], err = g.start(p, maxNew); err != nil {
			return nil, err
		}
	}
	out = make([][]int32, len(prompts))
	if o.Temperature > 0 {
		for i, st := range inits {
			if out[i], err = g.sample(st, maxNew, o, uint64(i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	hyps := decode.Search[*genState](g, inits, decode.Options{BeamSize: max(o.BeamSize, 1), MaxLen: maxNew, MinLen: 1,
		LengthPenalty: o.LengthPenalty, NoRepeatNgram: o.NoRepeatNgram, BOS: g.stop[0], EOS: g.stop[0]})
	for i, h := range hyps {
		out[i] = h.Tokens
	}
	return out, nil
}

// checkSearch refuses a beam search whose hypotheses cannot exist at once in memory, before
// any is allocated: each hypothesis keeps a KV cache (layers x keys and values x kv heads x
// head_dim x its capacity, float32) and a distribution over the vocabulary. A beam wider than
// the vocabulary has nothing to fill it. The budget is half the memory the system reports
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
	var need float64
	for _, p := range prompts {
		capacity := roundUp(min(len(p)+maxNew, c.MaxPositions), cacheBucket)
		perHyp := float64(c.Layers)*2*float64(c.KVHeads*c.HeadDim)*float64(capacity)*4 + 3*float64(c.Vocab)*4
		need += float64(beam) * perHyp
	}
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

// sample draws up to maxNew tokens from st with temperature and top-p.
func (g *generator) sample(st *genState, maxNew int, o GenOptions, stream uint64) ([]int32, error) {
	r := rand.New(rand.NewPCG(uint64(o.Seed), stream))
	p := st.first
	var out []int32
	for range maxNew {
		tok := samplePiece(p, o.Temperature, o.TopP, r.Float64())
		if tok == g.stop[0] || st.n >= st.limit {
			break
		}
		out = append(out, tok)
		var err error
		if p, err = g.advance(st, tok); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// samplePiece draws a token from probs sharpened by 1/temperature and cut to the smallest set of
// most probable tokens whose mass reaches topP (0 or >= 1: all), with u uniform in [0, 1).
func samplePiece(probs []float32, temperature, topP float64, u float64) int32 {
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
