package pretrained

import (
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
)

// scoreBatch is the number of (sentence, aspect) pairs scored per graph call.
const scoreBatch = 16

// Tracker is a fine-tuned pretrained tracker; it implements infer's Tracker.
type Tracker struct {
	Meta Meta
	lm   *causalLM
	p    *trackerPrompter
	sc   *scorer
}

// Summarizer is a fine-tuned pretrained summarizer; it implements infer's Summarizer.
type Summarizer struct {
	Meta Meta
	// Gen are the decoding settings (Meta.Generation, with infer's overrides applied by the caller).
	Gen GenOptions
	lm  *causalLM
	p   *summaryPrompter
	gen *generator
	// special are the strings cut from a generated answer (end-of-turn markers).
	special []string
}

// loaded is a checkpoint opened for inference.
type loaded struct {
	meta *Meta
	lm   *causalLM
	chat *Chat
}

// open reads a checkpoint: its metadata, its base (checked against base.json's digest), the
// tokenizer and template copies, and the trained variables over the base.
func open(dir, task string) (*loaded, error) {
	meta, err := ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	if meta.Task != task {
		return nil, fmt.Errorf("%w: %s is a pretrained %s, not a %s", ErrCheckpoint, dir, meta.Task, task)
	}
	snap, _, err := peft.OpenBase(dir, "")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	backend, _, err := model.Backend()
	if err != nil {
		return nil, err
	}
	dc, err := decoder.ConfigOf(snap)
	if err != nil {
		return nil, err
	}
	chat, err := LoadChat(dir, dc.EOSList)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	lm, err := loadCausalLM(backend, snap, meta.LoRA, meta.Seed, meta.Head == config.HeadLMCLS)
	if err != nil {
		return nil, err
	}
	if err := model.LoadVariablesInto(lm.store, checkpoint.BestWeights(dir), func(name string) string {
		if lm.store.GetVariable(name) == nil {
			return "" // not a variable of this model: reported below
		}
		return name
	}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if err := checkTrained(dir, lm); err != nil {
		return nil, err
	}
	return &loaded{meta: meta, lm: lm, chat: chat}, nil
}

// checkTrained checks that best/model.safetensors holds exactly the trained variables of lm: a
// checkpoint of other adapters (rank, targets) would otherwise leave some at their initial values.
func checkTrained(dir string, lm *causalLM) error {
	ts, err := model.ReadTensors(checkpoint.BestWeights(dir))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	for v := range lm.store.IterVariables() {
		if lm.trained(v.Path()) {
			if _, ok := ts[v.Path()]; !ok {
				return fmt.Errorf("%w: %s lacks %s (trained with other adapters?)", ErrCheckpoint, checkpoint.BestWeights(dir), v.Path())
			}
		}
	}
	for name := range ts {
		if lm.store.GetVariable(name) == nil {
			return fmt.Errorf("%w: %s holds %s, which this model does not have", ErrCheckpoint, checkpoint.BestWeights(dir), name)
		}
	}
	return nil
}

// IsTracker reports whether dir is a pretrained checkpoint of the tracker.
func IsTracker(dir string) bool {
	m, err := ReadMeta(dir)
	return err == nil && m.Task == TaskTracker
}

// LoadTracker loads a tracker checkpoint written by TrainTracker.
func LoadTracker(dir string) (*Tracker, error) {
	l, err := open(dir, TaskTracker)
	if err != nil {
		return nil, err
	}
	t := &Tracker{Meta: *l.meta, lm: l.lm, p: &trackerPrompter{chat: l.chat, head: l.meta.Head, set: l.meta.AspectSet, maxLen: l.meta.MaxSeqLen}}
	if t.Meta.Head == config.HeadGenerative {
		if l.meta.YesNo == nil {
			return nil, fmt.Errorf("%w: %s: generative head without yes_no", ErrCheckpoint, dir)
		}
		t.p.yn = *l.meta.YesNo
	}
	if err := t.compile(); err != nil {
		return nil, err
	}
	return t, nil
}

// compile builds the scoring Exec of the tracker's head.
func (t *Tracker) compile() error {
	var err error
	if t.Meta.Head == config.HeadGenerative {
		t.sc, err = t.lm.yesNoScorer(int(t.p.yn.Yes), int(t.p.yn.No))
	} else {
		t.sc, err = t.lm.clsScorer()
	}
	return err
}

// scoreExamples returns the probability of relevance of each score input.
func (t *Tracker) scoreExamples(exs []Example) ([]float32, error) {
	out := make([]float32, 0, len(exs))
	for i := 0; i < len(exs); i += scoreBatch {
		b := exs[i:min(i+scoreBatch, len(exs))]
		tokens, mask, _ := padTokens(b, t.p.chat.Pad)
		last := make([]int32, len(b))
		for j, e := range b {
			last[j] = int32(len(e.Tokens) - 1)
		}
		res, err := t.sc.call(tokens, mask, tensors.FromFlatDataAndDimensions(last, len(b), 1))
		if err != nil {
			return nil, err
		}
		tensors.ConstFlatData(res[0], func(flat []float32) {
			if t.Meta.Head == config.HeadGenerative {
				for j := range b {
					out = append(out, RenormYes(flat[2*j], flat[2*j+1]))
				}
				return
			}
			for _, x := range flat {
				out = append(out, sigmoid(float64(x)))
			}
		})
	}
	return out, nil
}

// scoreRows scores prepared tracker rows (the dev evaluation).
func (t *Tracker) scoreRows(rows []dataset.TrackerRow) ([]float32, error) {
	exs := make([]Example, len(rows))
	for i, r := range rows {
		e, err := t.p.scoreInput(r.Sentence, r.Aspect)
		if err != nil {
			return nil, err
		}
		exs[i] = e
	}
	return t.scoreExamples(exs)
}

// ScoreBatch returns, for each request, the probability that each sentence of its abstract is
// relevant to its aspect (a code or a name of the checkpoint's aspect set).
func (t *Tracker) ScoreBatch(reqs []tracker.Request) ([][]float32, error) {
	var exs []Example
	for _, r := range reqs {
		a, ok := dataset.LookupAspect(t.Meta.AspectSet, strings.TrimSpace(r.Aspect))
		if !ok {
			return nil, fmt.Errorf("aspect %q is not in the %s aspect set of the tracker", r.Aspect, t.Meta.AspectSet)
		}
		for _, s := range r.Doc {
			e, err := t.p.scoreInput(s, a.Code)
			if err != nil {
				return nil, err
			}
			exs = append(exs, e)
		}
	}
	probs, err := t.scoreExamples(exs)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(reqs))
	k := 0
	for i, r := range reqs {
		out[i] = probs[k : k+len(r.Doc)]
		k += len(r.Doc)
	}
	return out, nil
}

// IsSummarizer reports whether dir is a pretrained checkpoint of the summarizer.
func IsSummarizer(dir string) bool {
	m, err := ReadMeta(dir)
	return err == nil && m.Task == TaskSummarizer
}

// LoadSummarizer loads a summarizer checkpoint written by TrainSummarizer.
func LoadSummarizer(dir string) (*Summarizer, error) {
	l, err := open(dir, TaskSummarizer)
	if err != nil {
		return nil, err
	}
	if l.meta.Generation == nil {
		return nil, fmt.Errorf("%w: %s: summarizer without generation settings", ErrCheckpoint, dir)
	}
	g, err := newGenerator(l.lm, l.chat.Stop)
	if err != nil {
		return nil, err
	}
	s := &Summarizer{Meta: *l.meta, Gen: *l.meta.Generation, lm: l.lm, gen: g,
		p: &summaryPrompter{chat: l.chat, set: l.meta.AspectSet, maxLen: l.meta.MaxSeqLen, fullContext: l.meta.FullContext}}
	if end, err := l.chat.turnEnd(); err == nil && strings.TrimSpace(end) != "" {
		s.special = append(s.special, strings.TrimSpace(end))
	}
	for _, id := range l.chat.Stop {
		s.special = append(s.special, l.chat.Tok.Decode([]int{int(id)}))
	}
	return s, nil
}

// DecodeOptions returns the checkpoint's decoding settings in model/decode's terms (for infer,
// which overrides BeamSize, MaxLen, LengthPenalty and NoRepeatNgram from its flags).
func (s *Summarizer) DecodeOptions() decode.Options {
	return decode.Options{BeamSize: s.Gen.BeamSize, MaxLen: s.Gen.MaxNewTokens, LengthPenalty: s.Gen.LengthPenalty, NoRepeatNgram: s.Gen.NoRepeatNgram}
}

// Summarize writes the summary of each request; o's BeamSize, MaxLen, LengthPenalty and
// NoRepeatNgram (when set) replace the checkpoint's. An answer without text is "Unknown.".
func (s *Summarizer) Summarize(reqs []summarizer.Request, o decode.Options) ([]string, error) {
	gen := s.Gen
	if o.BeamSize > 0 {
		gen.BeamSize = o.BeamSize
	}
	if o.MaxLen > 0 {
		gen.MaxNewTokens = o.MaxLen
	}
	gen.LengthPenalty, gen.NoRepeatNgram = o.LengthPenalty, o.NoRepeatNgram
	prompts := make([][]int32, len(reqs))
	for i, r := range reqs {
		a, ok := dataset.LookupAspect(s.Meta.AspectSet, strings.TrimSpace(r.Aspect))
		if !ok {
			return nil, fmt.Errorf("aspect %q is not in the %s aspect set of the summarizer", r.Aspect, s.Meta.AspectSet)
		}
		var err error
		// The prompt leaves room for the answer within max_seq_len, as in training.
		if prompts[i], err = s.p.fitted(a.Code, r.Cited, r.Document, min(gen.MaxNewTokens, s.Meta.MaxSeqLen/2)); err != nil {
			return nil, err
		}
	}
	ids, err := s.gen.Generate(prompts, gen)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ids))
	for i, t := range ids {
		text := s.p.chat.Tok.Decode(int32sToInts(t))
		for _, end := range s.special {
			if j := strings.Index(text, end); end != "" && j >= 0 {
				text = text[:j]
			}
		}
		out[i] = ParseSummary(text, nil)
	}
	return out, nil
}

func int32sToInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}
