package pretrained

import (
	"context"
	"fmt"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/hf/tokenizer"
	"github.com/tracksum/tracksum/internal/tensorio"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/role"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/variant"
)

// scoreBatch is the number of (sentence, aspect) pairs scored per graph call.
const scoreBatch = 16

// Tracker is a fine-tuned pretrained tracker; it implements infer's Tracker.
type Tracker struct {
	Meta Meta
	// input is what the model reads to score a (sentence, aspect code) pair, labelled a training
	// example, score the probabilities of relevance of inputs.
	input    func(sentence, aspect string) (Example, error)
	labelled func(sentence, aspect string, label bool, weight float32) (Example, error)
	score    func(exs []Example) ([]float32, error)
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
	meta    *Meta
	snap    *snapshot.Snapshot
	backend compute.Backend
	chat    *Chat // nil for an encoder
}

// LoadOptions change how a checkpoint is loaded for inference (at most one is given to a Load
// function).
type LoadOptions struct {
	// Precision overrides the compute precision the checkpoint was trained in (Meta.Precision):
	// f32, bf16 or auto (config.ResolvePrecision on the backend); empty keeps the checkpoint's.
	Precision string
}

// precisionOf returns the first options' precision override ("" when none).
func precisionOf(opts []LoadOptions) string {
	if len(opts) == 0 {
		return ""
	}
	return opts[0].Precision
}

// open reads a checkpoint's metadata, checks that it is a model of task for the method v (""
// Track-then-Sum, or a variant.* name), and opens its base (checked against base.json's digest)
// and, for a causal LM, its chat (the checkpoint's copies of the tokenizer and template).
// precision, when not empty, replaces the checkpoint's compute precision (LoadOptions).
func open(ctx context.Context, r checkpoint.Reader, dir, task, v, precision string) (*loaded, error) {
	meta, err := readMeta(r, dir)
	if err != nil {
		return nil, err
	}
	if meta.Task != task || meta.Variant != v {
		return nil, fmt.Errorf("%w: %s is a pretrained %s, not a %s (%s)", ErrCheckpoint, dir, kindName(meta.Task, meta.Variant),
			kindName(task, v), runHint(meta.Task, meta.Variant))
	}
	return openMeta(ctx, r, dir, meta, precision)
}

// openMeta is open of the checkpoint dir whose metadata meta the caller has read (its other
// files read through r).
func openMeta(ctx context.Context, r checkpoint.Reader, dir string, meta *Meta, precision string) (*loaded, error) {
	// The model is built from meta.LoRA; export merges with adapter/adapter_config.json: the
	// two must agree, or infer and the exported model would differ silently.
	if err := peft.CheckAgreement(dir, r, meta.LoRA, checkpoint.PretrainedFile); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	snap, _, err := peft.OpenBase(ctx, dir, r, "")
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // interrupted while hashing the base: not a fault of the checkpoint
		}
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	backend, bname, err := model.Backend()
	if err != nil {
		return nil, err
	}
	if precision != "" {
		meta.Precision = metaPrecision(precision, bname)
	}
	l := &loaded{meta: meta, snap: snap, backend: backend}
	if meta.Head == config.HeadEncoderCLS {
		return l, nil
	}
	dc, err := decoder.ConfigOf(snap)
	if err != nil {
		return nil, err
	}
	if l.chat, err = loadChatFrom(r, dir, "", dc.EOSList, dc.Vocab); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	return l, nil
}

// restore loads the checkpoint's trained variables (best/) over the base in m, checking that they
// are exactly the ones m trains: a checkpoint of other adapters (rank, targets) would otherwise
// leave some at their initial values.
func restore(dir string, m trainable) error {
	path := checkpoint.BestWeights(dir)
	ts, err := tensorio.ReadTensors(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	store := m.Store()
	for name := range ts {
		if store.GetVariable(name) == nil || !m.Trained(name) {
			return fmt.Errorf("%w: %s holds %s, which this model does not train", ErrCheckpoint, path, name)
		}
	}
	for v := range store.IterVariables() {
		if _, ok := ts[v.Path()]; m.Trained(v.Path()) && !ok {
			return fmt.Errorf("%w: %s lacks %s (trained with other adapters?)", ErrCheckpoint, path, v.Path())
		}
	}
	// Set from the tensors already read: with rank 0 they are the whole model, read only once.
	for name, t := range ts {
		v := store.GetVariable(name)
		if !v.Shape().Equal(t.Shape()) {
			return fmt.Errorf("%w: %s: %s has shape %s, the model's is %s", ErrCheckpoint, path, name, t.Shape(), v.Shape())
		}
		if err := v.SetValue(t); err != nil {
			return fmt.Errorf("%w: %s: %s: %w", ErrCheckpoint, path, name, err)
		}
	}
	return nil
}

// newTracker builds the tracker of meta.Head on the snapshot (tokDir: where its tokenizer is, read
// through tokFiles; chat: its chat for a causal LM), in meta.Precision, its training graphs checkpointed per layer
// with checkpointing. For the generative head, meta.YesNo is found when unset. The SUM-THEN-TRACK
// pair tracker (meta.Variant) reads (sentence, summary) pairs.
func newTracker(ctx context.Context, backend compute.Backend, snap *snapshot.Snapshot, tokFiles checkpoint.Reader, tokDir string, chat *Chat, meta *Meta, checkpointing, flash bool) (*Tracker, trainable, error) {
	cs := computeSettings{bf16: meta.Precision == config.PrecisionBF16, checkpointing: checkpointing, flash: flash, quantization: meta.Quantization}
	t := &Tracker{Meta: *meta}
	pair := meta.Variant == variant.SumThenTrack
	if meta.Head == config.HeadEncoderCLS && pair {
		// encoderCLS pairs the aspect's description with the sentence; a (summary, sentence) pair
		// input is not built.
		return nil, nil, fmt.Errorf("sum_then_track: the pair tracker on a pretrained model needs a causal LM (tracker.head lm_cls or generative), not encoder_cls (model_type %s)", snap.ModelType)
	}
	if meta.Head == config.HeadEncoderCLS {
		enc, err := loadEncoderCLS(ctx, backend, snap, tokFiles, tokDir, meta.LoRA, meta.Seed, meta.AspectSet, meta.MaxSeqLen, cs)
		if err != nil {
			return nil, nil, err
		}
		t.input, t.score = enc.input, enc.score
		t.labelled = func(sentence, aspect string, label bool, weight float32) (Example, error) {
			e, err := enc.input(sentence, aspect)
			if label {
				e.Target = 1
			}
			e.Weight = weight
			return e, err
		}
		return t, enc, nil
	}
	p := &trackerPrompter{chat: chat, head: meta.Head, set: meta.AspectSet, maxLen: meta.MaxSeqLen, pair: pair}
	if meta.Head == config.HeadGenerative {
		if meta.YesNo == nil {
			yn, err := findYesNo(chat)
			if err != nil {
				return nil, nil, err
			}
			meta.YesNo = &yn
			t.Meta.YesNo = &yn
		}
		p.yn = *meta.YesNo
	}
	lm, err := loadCausalLM(ctx, backend, snap, meta.LoRA, meta.Seed, meta.Head == config.HeadLMCLS, cs)
	if err != nil {
		return nil, nil, err
	}
	var sc *scorer
	if meta.Head == config.HeadGenerative {
		sc, err = lm.yesNoScorer(int(p.yn.Yes), int(p.yn.No))
	} else {
		sc, err = lm.clsScorer()
	}
	if err != nil {
		return nil, nil, err
	}
	t.input, t.labelled = p.scoreInput, p.example
	t.score = func(exs []Example) ([]float32, error) {
		return scoreCausal(sc, exs, chat.Pad, meta.Head == config.HeadGenerative)
	}
	return t, lm, nil
}

// LoadTracker loads a tracker checkpoint written by TrainTracker; it computes in the precision it
// was trained in unless opts say otherwise. Loading stops with an error wrapping ctx.Err() once
// ctx is cancelled (between the base's tensors: SIGINT/SIGTERM during a large base).
func LoadTracker(ctx context.Context, dir string, opts ...LoadOptions) (*Tracker, error) {
	return loadTracker(ctx, checkpoint.DirFiles(dir), dir, "", opts...)
}

// loadTracker loads the tracker checkpoint dir of the method v ("" Track-then-Sum, or
// variant.SumThenTrack's pair tracker), its metadata read through r (open).
func loadTracker(ctx context.Context, r checkpoint.Reader, dir, v string, opts ...LoadOptions) (*Tracker, error) {
	l, err := open(ctx, r, dir, dataset.TaskTracker, v, precisionOf(opts))
	if err != nil {
		return nil, err
	}
	if l.meta.Head == config.HeadGenerative && l.meta.YesNo == nil {
		return nil, fmt.Errorf("%w: %s: generative head without yes_no", ErrCheckpoint, dir)
	}
	t, m, err := newTracker(ctx, l.backend, l.snap, r, dir, l.chat, l.meta, false, false)
	if err != nil {
		return nil, err
	}
	if err := restore(dir, m); err != nil {
		return nil, err
	}
	return t, nil
}

// scoreCausal returns the probability of relevance of each score input of a causal LM: P(yes)
// renormalised over {yes, no} (generative) or the head's sigmoid (lm_cls).
func scoreCausal(sc *scorer, exs []Example, pad int32, generative bool) ([]float32, error) {
	out := make([]float32, 0, len(exs))
	for i := 0; i < len(exs); i += scoreBatch {
		b := exs[i:min(i+scoreBatch, len(exs))]
		tokens, mask, _ := padTokens(b, pad)
		last := make([]int32, len(b))
		for j, e := range b {
			last[j] = int32(len(e.Tokens) - 1)
		}
		res, err := sc.call(tokens, mask, tensors.FromFlatDataAndDimensions(last, len(b), 1))
		if err != nil {
			return nil, err
		}
		tensors.ConstFlatData(res[0], func(flat []float32) {
			if generative {
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

// scoreRows scores labelled pairs (the dev evaluation).
func (t *Tracker) scoreRows(rows []labelledPair) ([]float32, error) {
	exs := make([]Example, len(rows))
	for i, r := range rows {
		e, err := t.input(r.Sentence, r.Against)
		if err != nil {
			return nil, err
		}
		exs[i] = e
	}
	return t.score(exs)
}

// ScoreBatch returns, for each request, the probability that each sentence of its abstract is
// relevant to its aspect (a code or a name of the checkpoint's aspect set): role.Tracker, for a
// Track-then-Sum tracker.
func (t *Tracker) ScoreBatch(reqs []tracker.Request) ([][]float32, error) {
	if t.Meta.Variant != "" {
		return nil, fmt.Errorf("the %s scores (sentence, summary) pairs, not (sentence, aspect) ones", kindName(dataset.TaskTracker, t.Meta.Variant))
	}
	docs := make([][]string, len(reqs))
	against := make([]string, len(reqs))
	for i, r := range reqs {
		a, ok := dataset.LookupAspect(t.Meta.AspectSet, strings.TrimSpace(r.Aspect))
		if !ok {
			return nil, fmt.Errorf("aspect %q is not in the %s aspect set of the tracker", r.Aspect, t.Meta.AspectSet)
		}
		docs[i], against[i] = r.Doc, a.Code
	}
	return t.scoreDocs(docs, against)
}

// ScorePairs returns, for each request, the probability that each sentence of its abstract
// supports its summary (PairTrackerMessages): role.PairTracker, for SUM-THEN-TRACK's pair tracker.
func (t *Tracker) ScorePairs(reqs []tracker.PairRequest) ([][]float32, error) {
	if t.Meta.Variant != variant.SumThenTrack {
		return nil, fmt.Errorf("the %s scores (sentence, aspect) pairs, not (sentence, summary) ones", kindName(dataset.TaskTracker, t.Meta.Variant))
	}
	docs := make([][]string, len(reqs))
	against := make([]string, len(reqs))
	for i, r := range reqs {
		docs[i], against[i] = r.Doc, r.Summary
	}
	return t.scoreDocs(docs, against)
}

// scoreDocs scores every sentence of docs[i] against against[i] (an aspect code or a summary, as
// the checkpoint's prompt reads it) in one t.score call, and returns the probabilities per doc.
func (t *Tracker) scoreDocs(docs [][]string, against []string) ([][]float32, error) {
	var exs []Example
	for i, doc := range docs {
		for _, s := range doc {
			e, err := t.input(s, against[i])
			if err != nil {
				return nil, err
			}
			exs = append(exs, e)
		}
	}
	probs, err := t.score(exs)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(docs))
	k := 0
	for i, doc := range docs {
		out[i] = probs[k : k+len(doc)]
		k += len(doc)
	}
	return out, nil
}

// LoadSummarizer loads a summarizer checkpoint written by TrainSummarizer; it computes in the
// precision it was trained in unless opts say otherwise. Loading stops with an error wrapping
// ctx.Err() once ctx is cancelled.
func LoadSummarizer(ctx context.Context, dir string, opts ...LoadOptions) (*Summarizer, error) {
	return loadSummarizer(ctx, checkpoint.DirFiles(dir), dir, "", opts...)
}

// loadSummarizer loads the summarizer checkpoint dir of the method v ("" Track-then-Sum, or a
// variant.* name), its metadata read through r (open).
func loadSummarizer(ctx context.Context, r checkpoint.Reader, dir, v string, opts ...LoadOptions) (*Summarizer, error) {
	l, err := open(ctx, r, dir, dataset.TaskSummarizer, v, precisionOf(opts))
	if err != nil {
		return nil, err
	}
	if l.meta.Generation == nil {
		return nil, fmt.Errorf("%w: %s: summarizer without generation settings", ErrCheckpoint, dir)
	}
	lm, err := loadCausalLM(ctx, l.backend, l.snap, l.meta.LoRA, l.meta.Seed, false, computeSettings{bf16: l.meta.Precision == config.PrecisionBF16, quantization: l.meta.Quantization})
	if err != nil {
		return nil, err
	}
	if err := restore(dir, lm); err != nil {
		return nil, err
	}
	return newSummarizer(l.meta, lm, l.chat)
}

// newSummarizer is the summarizer of meta on the loaded lm.
func newSummarizer(meta *Meta, lm *causalLM, chat *Chat) (*Summarizer, error) {
	g, err := newGenerator(lm, chat.Stop)
	if err != nil {
		return nil, err
	}
	s := &Summarizer{Meta: *meta, Gen: *meta.Generation, lm: lm, gen: g,
		p: &summaryPrompter{chat: chat, set: meta.AspectSet, maxLen: meta.MaxSeqLen, fullContext: meta.FullContext, variant: meta.Variant,
			paper: meta.PromptStyle == config.PromptStylePaper}}
	if end, err := chat.turnEnd(); err == nil && strings.TrimSpace(end) != "" {
		s.special = append(s.special, strings.TrimSpace(end))
	}
	for _, id := range chat.Stop {
		s.special = append(s.special, chat.Tok.Decode([]int{int(id)}))
	}
	return s, nil
}

// Tokenizer returns the summarizer's tokenizer (the checkpoint's copy of its base's), in which
// its prompts and answers are counted.
func (s *Summarizer) Tokenizer() *tokenizer.Tokenizer { return s.p.chat.Tok }

// DecodeOptions returns the checkpoint's decoding settings in model/decode's terms (for infer,
// which overrides BeamSize, MaxLen, LengthPenalty and NoRepeatNgram from its flags).
func (s *Summarizer) DecodeOptions() decode.Options {
	return decode.Options{BeamSize: s.Gen.BeamSize, MaxLen: s.Gen.MaxNewTokens, LengthPenalty: s.Gen.LengthPenalty, NoRepeatNgram: s.Gen.NoRepeatNgram}
}

// Summarize writes the summary of each request; o's BeamSize, MaxLen, LengthPenalty and
// NoRepeatNgram (when set) replace the checkpoint's. An answer without text is "Unknown.".
func (s *Summarizer) Summarize(reqs []summarizer.Request, o decode.Options) ([]string, error) {
	answers, cut, err := s.answer(reqs, o)
	if err != nil {
		return nil, err
	}
	for i, a := range answers {
		answers[i] = ParseSummary(a, nil)
		// A blank line ended the summary before the limit (ParseSummary keeps what precedes it).
		if cut[i] && answers[i] != dataset.UnknownSummary && !strings.Contains(strings.TrimSpace(a), "\n\n") {
			answers[i] = summarizer.CutAtWord(answers[i])
		}
	}
	return answers, nil
}

// Answer generates the answer text of each request, up to the first end-of-turn marker, with the
// decoding settings of Summarize: "Summary: ..." (Summarize reads the summary out of it), or for
// an END-TO-END checkpoint "Summary: ...\nCitations: 0, 3" (role.Answerer; its prompt shows
// each sentence of the abstract in Cited with its index).
func (s *Summarizer) Answer(reqs []summarizer.Request, o decode.Options) ([]string, error) {
	out, _, err := s.answer(reqs, o)
	return out, err
}

// Tokens returns the prompts Answer writes for reqs and the token ids it generates after them
// (before decoding into text), with its decoding settings: what the GPU check compares with
// transformers' generate on the same prompts.
func (s *Summarizer) Tokens(reqs []summarizer.Request, o decode.Options) (prompts, ids [][]int32, err error) {
	_, prompts, ids, err = s.generate(reqs, o)
	return prompts, ids, err
}

// answer is Answer, also reporting which answers generation cut at the token limit (no end
// marker).
func (s *Summarizer) answer(reqs []summarizer.Request, o decode.Options) ([]string, []bool, error) {
	gen, _, ids, err := s.generate(reqs, o)
	if err != nil {
		return nil, nil, err
	}
	out, cut := make([]string, len(ids)), make([]bool, len(ids))
	for i, t := range ids {
		text := s.p.chat.Tok.Decode(int32sToInts(t))
		cut[i] = len(t) >= gen.MaxNewTokens
		for _, end := range s.special {
			if j := strings.Index(text, end); end != "" && j >= 0 {
				text, cut[i] = text[:j], false
			}
		}
		out[i] = text
	}
	return out, cut, nil
}

// generate fits the prompts of reqs and generates their answers' ids with o's settings over the
// checkpoint's.
func (s *Summarizer) generate(reqs []summarizer.Request, o decode.Options) (GenOptions, [][]int32, [][]int32, error) {
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
			return gen, nil, nil, fmt.Errorf("aspect %q is not in the %s aspect set of the summarizer", r.Aspect, s.Meta.AspectSet)
		}
		var err error
		// The prompt leaves room for the answer within max_seq_len, as in training.
		if prompts[i], err = s.p.fitted(a.Code, r.Cited, r.Document, min(gen.MaxNewTokens, s.Meta.MaxSeqLen/2)); err != nil {
			return gen, nil, nil, err
		}
	}
	ids, err := s.gen.Generate(prompts, gen)
	return gen, prompts, ids, err
}

// ParseAnswer reads an END-TO-END answer for an abstract of n sentences with ParseEndToEnd
// (role.Answerer; Answer has already cut the end-of-turn markers).
func (s *Summarizer) ParseAnswer(answer string, n int) role.Output {
	return ParseEndToEnd(answer, n, nil)
}

func int32sToInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}
