package pretrained

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gomlx/compute"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/model/variant"
)

// Report is report.json of a pretrained checkpoint.
type Report struct {
	Task           string             `json:"task"`
	Head           string             `json:"head,omitempty"`
	Backend        string             `json:"backend"`
	Base           string             `json:"base"`
	ModelType      string             `json:"model_type"`
	TrainExamples  int                `json:"train_examples"`
	DevExamples    int                `json:"dev_examples"`
	Trainable      int                `json:"trainable_parameters"`
	Steps          int                `json:"steps"`
	BestStep       int                `json:"best_step"`
	Stop           string             `json:"stop"`
	ExamplesPerSec float64            `json:"examples_per_sec"`
	TokensPerSec   float64            `json:"tokens_per_sec"`
	TrainSeconds   float64            `json:"train_seconds"`
	Dev            map[string]float64 `json:"dev"`
	// id is what the checkpoint states when sealed (Meta.identity).
	id checkpoint.Identity
}

// afterStep, when set (by tests), is called after each optimizer step of a training run.
var afterStep func(step int)

// session is what both tasks set up before training: the locked output, the backend, the base
// snapshot and its chat.
type session struct {
	cfg     *config.Config
	req     training.Request
	log     io.Writer
	lock    interface{ Release() }
	backend compute.Backend
	bname   string
	snap    *snapshot.Snapshot
	chat    *Chat
	set     string
	// flash is TASK.train.attention resolved on the backend (config.ResolveAttention).
	flash bool
	// template is TASK.chat_template when not the snapshot's own, and templateSource its Jinja
	// source ("" for the snapshot's): recorded in Meta.ChatTemplate and written into the
	// checkpoint's tokenizer_config.json copy.
	template, templateSource string
}

// begin opens the backend and refuses train.devices > 1 (training.CheckDevices) before anything
// large is read, then locks req.Out, opens the snapshot dir and its chat, and reads the aspect set
// of the prepared data.
func begin(cfg *config.Config, req training.Request, task, dir string, loop config.TrainLoop) (*session, error) {
	log := req.Log
	if log == nil {
		log = os.Stderr
	}
	backend, bname, err := model.Backend()
	if err != nil {
		return nil, err
	}
	if err := training.CheckDevices(task+".train.devices", loop.Devices, backend, bname); err != nil {
		return nil, err
	}
	flash, err := config.ResolveAttention(loop.Attention, config.ResolvePrecision(loop.Precision, bname), bname)
	if err != nil {
		return nil, fmt.Errorf("%s.train.attention: %w", task, err)
	}
	man, err := dataset.ReadManifest(req.Data)
	if err != nil {
		return nil, err
	}
	snap, err := snapshot.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("%s.pretrained: %w", task, err)
	}
	if loop.Packing && family.IsEncoder(snap.ModelType) {
		return nil, fmt.Errorf("%s.train.packing: %s is an encoder (model_type %s), which has no packed path: set it false", task, snap.Dir, snap.ModelType)
	}
	lock, err := training.LockOutDir(req.Out, checkpoint.PretrainedFile, "pretrained "+task)
	if err != nil {
		return nil, err
	}
	s := &session{cfg: cfg, req: req, log: log, lock: lock, backend: backend, bname: bname, snap: snap, set: man.AspectSet, flash: flash}
	fail := func(err error) (*session, error) {
		lock.Release()
		return nil, err
	}
	tplKey, tplValue := task+".chat_template", cfg.Tracker.ChatTemplate
	if task == dataset.TaskSummarizer {
		tplValue = cfg.Summarizer.ChatTemplate
	}
	if family.IsEncoder(snap.ModelType) {
		if task != dataset.TaskTracker {
			return fail(fmt.Errorf("%s.pretrained: %s is an encoder (model_type %s); the %s needs a causal LM", task, snap.Dir, snap.ModelType, task))
		}
		if tplValue != config.ChatTemplateSnapshot {
			return fail(fmt.Errorf("%s: %s applies to a causal LM's prompts, not to an encoder (model_type %s)", tplKey, tplValue, snap.ModelType))
		}
		fmt.Fprintf(log, "pretrained %s: %s (model_type %s) on backend %s\n", task, snap.Dir, snap.ModelType, s.bname)
		return s, nil
	}
	dc, err := decoder.ConfigOf(snap)
	if err != nil {
		return fail(err)
	}
	if s.templateSource, err = chatTemplateSource(tplKey, tplValue); err != nil {
		return fail(err)
	}
	if s.templateSource != "" {
		s.template = tplValue
	}
	if s.chat, err = loadChat(snap.Dir, s.templateSource, dc.EOSList, dc.Vocab); err != nil {
		return fail(err)
	}
	fmt.Fprintf(log, "pretrained %s: chat template %s (%s)\n", task, tplValue, tplKey)
	fmt.Fprintf(log, "pretrained %s: %s (model_type %s, %d layers, hidden %d, vocab %d) on backend %s\n",
		task, snap.Dir, snap.ModelType, dc.Layers, dc.Hidden, dc.Vocab, s.bname)
	return s, nil
}

// logCut prints how many of the n training prompts of task had their text cut to fit maxLen
// tokens under the session's chat template (a template that adds tokens to every prompt, as
// Llama-3.1-Instruct's date block, cuts more of them).
func (s *session) logCut(task string, cut int64, n, maxLen int) {
	if s.chat == nil {
		return
	}
	tpl := cmp.Or(s.template, config.ChatTemplateSnapshot)
	fmt.Fprintf(s.log, "pretrained %s: %d of %d training prompts (%.1f%%) cut to fit max_seq_len %d (chat template %s)\n",
		task, cut, n, 100*float64(cut)/float64(max(n, 1)), maxLen, tpl)
}

// taskRun is the run of the session's model of task for the method v ("" Track-then-Sum) with the
// loop settings loop (training.TaskRun: tracker.Fit, summarizer.Fit).
func (s *session) taskRun(task, v string, loop config.TrainLoop) training.TaskRun {
	return training.TaskRun{Name: "pretrained " + kindName(task, v), Loop: loop, Seed: s.cfg.Seed, OutDir: s.req.Out, Log: s.log,
		AfterStep: callAfterStep, Trace: s.req.Trace}
}

// TrainOptions are the options of TrainTracker and TrainSummarizer, the shape of every task's
// (training.TaskOptions). Its Data is empty: a pretrained model trains on the prepared shards
// (the variants take an assignment of abstracts: VariantOptions); AfterStep and Part are not
// used (the tests interrupt a run through SetAfterStep; a pretrained part is sealed by its
// variant).
type TrainOptions = training.TaskOptions[struct{}]

// request is the training.Request of a run of TrainTracker or TrainSummarizer, what the session
// reads.
func request(o TrainOptions, dataDir, outDir string) training.Request {
	return training.Request{Data: dataDir, Out: outDir, Log: o.Log, AllowChangedConfig: o.AllowChangedConfig, Trace: o.Trace}
}

// callAfterStep calls afterStep when a test set it.
func callAfterStep(step int) {
	if afterStep != nil {
		afterStep(step)
	}
}

// prepare writes the checkpoint's files before training (prepareDir) and returns its report as far
// as it is known then (done adds the run's figures), logging the count of trainable parameters.
// The tasks train between the two (tracker.Fit, summarizer.Fit).
func (s *session) prepare(ctx context.Context, meta *Meta, m trainable, trainN, devN int) (*Report, error) {
	meta.ChatTemplate = s.template
	if err := prepareDir(ctx, s.req.Out, meta, s.snap, s.cfg, s.templateSource, s.req.AllowChangedConfig, s.log); err != nil {
		return nil, err
	}
	id, err := meta.identityIn(s.req.Out, s.cfg.Tracker.Threshold)
	if err != nil {
		return nil, err
	}
	trainable := 0
	for v := range m.Store().IterVariables() {
		if v.Trainable && m.Trained(v.Path()) {
			trainable += v.Shape().Size()
		}
	}
	fmt.Fprintf(s.log, "pretrained %s: %d training examples, %d dev; %d trainable parameters (lora rank %d)\n",
		kindName(meta.Task, meta.Variant), trainN, devN, trainable, meta.LoRA.Rank)
	return &Report{Task: meta.Task, Head: meta.Head, Backend: s.bname, Base: s.snap.Dir, ModelType: s.snap.ModelType,
		TrainExamples: trainN, DevExamples: devN, Trainable: trainable, id: id}, nil
}

// done writes the interop layouts of m, whose store holds the best variables, and report.json:
// rep with the figures of the run res, which started at t0.
func (s *session) done(rep *Report, m trainable, res *training.Result, t0 time.Time) (*Report, error) {
	if err := m.WriteInterop(s.req.Out); err != nil {
		return nil, err
	}
	rep.Steps, rep.BestStep, rep.Stop, rep.ExamplesPerSec, rep.TokensPerSec = res.Steps, res.BestStep, res.Stop, res.ExamplesPerSec, res.TokensPerSec
	rep.TrainSeconds, rep.Dev = time.Since(t0).Seconds(), res.Best
	return rep, checkpoint.WriteJSON(filepath.Join(s.req.Out, checkpoint.ReportFile), rep)
}

// TrainTracker fine-tunes cfg.Tracker.Pretrained as a tracker on the prepared directory dataDir
// into the checkpoint outDir (resuming a run found there), with the head tracker.head.
func TrainTracker(ctx context.Context, cfg *config.Config, dataDir, outDir string, opts TrainOptions) error {
	req := request(opts, dataDir, outDir)
	tc := cfg.Tracker
	rep, err := trainTracker(ctx, cfg, req, trackerRun{snapDir: tc.Pretrained, maxSeqLen: tc.MaxSeqLen,
		rows: func() (train, dev []labelledPair, err error) {
			rows, err := readRows[dataset.TrackerRow](req.Data, dataset.TaskTracker, dataset.SplitTrain)
			if err != nil {
				return nil, nil, err
			}
			devRows, err := readRows[dataset.TrackerRow](req.Data, dataset.TaskTracker, dataset.SplitDev)
			if err != nil {
				return nil, nil, err
			}
			return aspectPairs(rows), aspectPairs(devRows), nil
		}})
	if err != nil {
		return err
	}
	// Written last: the manifest marks the checkpoint finished.
	_, err = checkpoint.Seal(req.Out, rep.id)
	return err
}

// trackerRun is what differs between the trackers trainTracker trains: the Track-then-Sum one
// (sentence, aspect) and SUM-THEN-TRACK's pair tracker (sentence, summary).
type trackerRun struct {
	// variant is "" or variant.SumThenTrack (Meta.Variant).
	variant string
	// snapDir is the base snapshot, maxSeqLen the prompt's cap (Meta.MaxSeqLen).
	snapDir   string
	maxSeqLen int
	// rows reads the training and dev pairs, once the output is locked.
	rows func() (train, dev []labelledPair, err error)
}

// trainTracker fine-tunes the tracker of run with the tracker section's head, adapters, loop and
// imbalance settings.
func trainTracker(ctx context.Context, cfg *config.Config, req training.Request, run trackerRun) (*Report, error) {
	tc := cfg.Tracker
	s, err := begin(cfg, req, dataset.TaskTracker, run.snapDir, tc.Train)
	if err != nil {
		return nil, err
	}
	defer s.lock.Release()
	head, err := tc.ResolveHead(s.snap.ModelType)
	if err != nil {
		return nil, err
	}
	// The checkpoint records the resolved targets (all-linear's module names), as PEFT does.
	lora, err := tc.LoRA.Resolve(s.snap.ModelType)
	if err != nil {
		return nil, fmt.Errorf("tracker.lora: %w", err)
	}
	meta := &Meta{Task: dataset.TaskTracker, Head: head, ModelType: s.snap.ModelType, AspectSet: s.set, MaxSeqLen: run.maxSeqLen,
		LoRA: lora, Seed: cfg.Seed, Variant: run.variant, Precision: metaPrecision(tc.Train.Precision, s.bname),
		Quantization: metaQuantization(tc.Train.Quantization)}
	rows, devRows, err := run.rows()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || len(devRows) == 0 {
		return nil, fmt.Errorf("%s: the %s needs train and dev rows (got %d and %d)", req.Data, kindName(dataset.TaskTracker, run.variant), len(rows), len(devRows))
	}
	t, m, err := newTracker(ctx, s.backend, s.snap, checkpoint.DirFiles(s.snap.Dir), s.snap.Dir, s.chat, meta, tc.Train.GradientCheckpointing, s.flash)
	if err != nil {
		return nil, err
	}
	cut0 := s.chat.cutCount()
	train, err := trackerExamples(ctx, t.labelled, rows, tc)
	if err != nil {
		return nil, err
	}
	s.logCut(dataset.TaskTracker, s.chat.cutCount()-cut0, len(rows), run.maxSeqLen)
	devLabels := make([]float32, len(devRows))
	for i, r := range devRows {
		if r.Label {
			devLabels[i] = 1
		}
	}
	net := &trackerNet{s: s, t: t, m: m, batchSize: tc.Train.BatchSize, train: train, dev: devRows}
	lm, _ := m.(*causalLM)
	enc, _ := m.(*encoderCLS)
	switch {
	case head == config.HeadEncoderCLS:
		net.build, net.loss = func(b []Example) training.Batch { return encoderBatch(b, int32(enc.sp.SEP)) }, enc.loss
	case tc.Train.Packing:
		sh := planPacking(train, tc.Train, cfg.Seed, meta.MaxSeqLen)
		net.build, net.loss = func(b []Example) training.Batch { return packedBatch(b, s.chat.Pad, sh, head == config.HeadLMCLS) }, lm.packedAnswerLoss
		if head == config.HeadLMCLS {
			net.loss = lm.packedClsLoss
		}
	case head == config.HeadLMCLS:
		net.build, net.loss = func(b []Example) training.Batch { return clsBatch(b, s.chat.Pad) }, lm.clsLoss
	default:
		net.build, net.loss = func(b []Example) training.Batch { return answerBatch(b, s.chat.Pad, meta.YesNo.TurnLen) }, lm.answerLoss
	}
	rep, err := s.prepare(ctx, meta, m, len(train), len(devRows))
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	res, err := tracker.Fit(ctx, net, tracker.FitOptions{TaskRun: s.taskRun(dataset.TaskTracker, run.variant, tc.Train),
		DevLabels: devLabels, Threshold: tc.Threshold})
	if err != nil {
		return nil, err
	}
	return s.done(rep, m, res, t0)
}

// summaryInstance is a training or dev instance of a causal-LM summarizer.
type summaryInstance struct {
	PMID, Aspect string
	// Sentences are what the prompt summarizes: the tracked sentences (Track-then-Sum) or the
	// whole abstract (the variants); Document is the abstract of TTS (+) f.
	Sentences, Document []string
	Summary             string
	// Citations are the reference's cited sentence indices (END-TO-END's answer).
	Citations []int32
}

// minNewTokens is the least derived max_new_tokens (summarizer.max_new_tokens 0).
const minNewTokens = 128

// maxNewTokens is the generation cap of a summarizer trained on train: configured when set, else
// the longest answer turn of the training examples (the end marker included), at least
// minNewTokens, so that generation can write every reference the model was trained on.
func maxNewTokens(configured int, train []Example) int {
	if configured > 0 {
		return configured
	}
	longest := 0
	for _, e := range train {
		pos, _ := lossPositions(e)
		longest = max(longest, len(pos))
	}
	return max(minNewTokens, longest)
}

// TrainSummarizer fine-tunes cfg.Summarizer.Pretrained as the summarizer on the prepared
// directory dataDir into the checkpoint outDir (resuming a run found there). Each evaluation
// reports the dev loss of the answer tokens and, over the first summarizer.dev_decode_limit dev
// instances (0: all), the ROUGE-L F of greedy summaries (the text after "Summary:", as the
// released script scores it), which selects the best checkpoint.
func TrainSummarizer(ctx context.Context, cfg *config.Config, dataDir, outDir string, opts TrainOptions) error {
	req := request(opts, dataDir, outDir)
	rep, err := trainSummarizer(ctx, cfg, req, "", func() (train, dev []summaryInstance, err error) {
		read := func(split string) ([]summaryInstance, error) {
			rows, err := readRows[dataset.SummarizerRow](req.Data, dataset.TaskSummarizer, split)
			if err != nil {
				return nil, err
			}
			out := make([]summaryInstance, len(rows))
			for i, r := range rows {
				out[i] = summaryInstance{PMID: r.PMID, Aspect: r.Aspect, Sentences: r.CitedSentences, Document: r.Document, Summary: r.Summary}
			}
			return out, nil
		}
		if train, err = read(dataset.SplitTrain); err != nil {
			return nil, nil, err
		}
		if cfg.Summarizer.TrainNegatives {
			neg, err := dataset.SummarizerNegatives(req.Data, dataset.SplitTrain)
			if err != nil {
				return nil, nil, err
			}
			for _, r := range neg {
				train = append(train, summaryInstance{PMID: r.PMID, Aspect: r.Aspect, Document: r.Document, Summary: r.Summary})
			}
		}
		dev, err = read(dataset.SplitDev)
		return train, dev, err
	})
	if err != nil {
		return err
	}
	// Written last: the manifest marks the checkpoint finished.
	_, err = checkpoint.Seal(req.Out, rep.id)
	return err
}

// trainSummarizer fine-tunes cfg.Summarizer.Pretrained as the summarizer of the method v (""
// Track-then-Sum, variant.SumThenTrack or variant.EndToEnd) on the instances read returns (once
// the output is locked). END-TO-END's answers carry the citations: its generation cap is
// variants.max_output_len, as the from-scratch model's, and its evaluations report the
// citations' micro F1 (citation_f1) next to ROUGE-L, which still selects.
func trainSummarizer(ctx context.Context, cfg *config.Config, req training.Request, v string,
	read func() (train, dev []summaryInstance, err error)) (*Report, error) {
	sc := cfg.Summarizer
	// The variants and TTS (+) f read the whole abstract: the paper halves their batch (variants.*_batch_size).
	sc.Train.BatchSize = cfg.Variants.SummarizerBatchSize(v, sc.FullContext && v == "", sc.Train.BatchSize)
	s, err := begin(cfg, req, dataset.TaskSummarizer, sc.Pretrained, sc.Train)
	if err != nil {
		return nil, err
	}
	defer s.lock.Release()
	meta, err := summarizerMeta(cfg, sc, s, v)
	if err != nil {
		return nil, err
	}
	gen := meta.Generation
	p := &summaryPrompter{chat: s.chat, set: s.set, maxLen: sc.MaxSeqLen, fullContext: meta.FullContext, variant: v, paper: meta.PromptStyle == config.PromptStylePaper}
	trainSet, devSet, err := read()
	if err != nil {
		return nil, err
	}
	cut0 := s.chat.cutCount()
	train, err := p.examples(ctx, trainSet)
	if err != nil {
		return nil, err
	}
	s.logCut(dataset.TaskSummarizer, s.chat.cutCount()-cut0, len(trainSet), sc.MaxSeqLen)
	dev, err := p.examples(ctx, devSet)
	if err != nil {
		return nil, err
	}
	if len(train) == 0 || len(dev) == 0 {
		return nil, fmt.Errorf("%s: the %s needs train and dev instances (got %d and %d)", req.Data, kindName(dataset.TaskSummarizer, v), len(train), len(dev))
	}
	if v != variant.EndToEnd {
		gen.MaxNewTokens = maxNewTokens(sc.MaxNewTokens, train)
	}
	decoding := fmt.Sprintf("beam %d, length penalty %g, no_repeat_ngram %d", gen.BeamSize, gen.LengthPenalty, gen.NoRepeatNgram)
	if gen.Temperature > 0 {
		decoding = fmt.Sprintf("sampling at temperature %g, top_p %g, top_k %d, seed %d", gen.Temperature, gen.TopP, gen.TopK, gen.Seed)
	}
	fmt.Fprintf(s.log, "pretrained summarizer: decoding %s, max_new_tokens %d (stored in the checkpoint; dev ROUGE-L decodes greedily)\n",
		decoding, gen.MaxNewTokens)
	m, err := loadCausalLM(ctx, s.backend, s.snap, meta.LoRA, cfg.Seed, false, computeSettings{bf16: meta.Precision == config.PrecisionBF16, checkpointing: sc.Train.GradientCheckpointing, flash: s.flash, quantization: meta.Quantization})
	if err != nil {
		return nil, err
	}
	b, err := newLMSummarizer(meta, m, s, sc, train, dev, devSet)
	if err != nil {
		return nil, err
	}
	rep, err := s.prepare(ctx, meta, m, len(train), len(dev))
	if err != nil {
		return nil, err
	}
	refs := make([]string, len(devSet))
	for i, r := range devSet {
		refs[i] = r.Summary
	}
	t0 := time.Now()
	res, err := summarizer.Fit(ctx, b, summarizer.FitOptions{TaskRun: s.taskRun(dataset.TaskSummarizer, v, sc.Train),
		Refs: refs, DevDecodeLimit: sc.DevDecodeLimit})
	if err != nil {
		return nil, err
	}
	return s.done(rep, m, res, t0)
}

// summarizerMeta is the metadata of the summarizer of the method v that sc trains on the session's
// snapshot, with its decoding (Meta.Generation): the decoding of a pretrained model is its own
// (summarizer.beam_size etc. take transformers' defaults or the snapshot's generation_config.json
// when nobody set them: config's pretrained defaults); max_new_tokens 0 is derived from the
// training answers later (END-TO-END's is variants.max_output_len).
func summarizerMeta(cfg *config.Config, sc config.Summarizer, s *session, v string) (*Meta, error) {
	gen := GenOptions{BeamSize: sc.BeamSize, MaxNewTokens: sc.MaxNewTokens, LengthPenalty: sc.LengthPenalty, NoRepeatNgram: sc.NoRepeatNgram}
	if sc.Temperature > 0 {
		gen.Temperature, gen.TopP, gen.TopK, gen.Seed = sc.Temperature, sc.TopP, sc.TopK, cfg.Seed
	}
	fullContext := sc.FullContext && v == "" // the variants' prompts have no full-context part
	if v == variant.EndToEnd {
		gen.MaxNewTokens = cfg.Variants.MaxOutputLen
	}
	lora, err := sc.LoRA.Resolve(s.snap.ModelType)
	if err != nil {
		return nil, fmt.Errorf("summarizer.lora: %w", err)
	}
	meta := &Meta{Task: dataset.TaskSummarizer, ModelType: s.snap.ModelType, AspectSet: s.set, MaxSeqLen: sc.MaxSeqLen,
		LoRA: lora, Seed: cfg.Seed, FullContext: fullContext, Generation: &gen, Variant: v, Precision: metaPrecision(sc.Train.Precision, s.bname),
		Quantization: metaQuantization(sc.Train.Quantization)}
	if sc.PromptStyle == config.PromptStylePaper {
		meta.PromptStyle = sc.PromptStyle
	}
	return meta, nil
}

// examples renders the training examples of insts.
func (p *summaryPrompter) examples(ctx context.Context, insts []summaryInstance) ([]Example, error) {
	out := make([]Example, 0, len(insts))
	for _, r := range insts {
		// Each example renders the base's chat template (up to its 10 s limit): a signal is
		// honoured between examples, not after all of them.
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("building the training examples: %w", err)
		}
		e, err := p.example(r.Aspect, r.Sentences, r.Document, r.Summary, r.Citations)
		if err != nil {
			return nil, fmt.Errorf("abstract %s, aspect %s: %w", r.PMID, r.Aspect, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// lmSummarizer is the causal LM m fine-tuned as the summarizer of the method meta.Variant: a
// summarizer.Backbone.
type lmSummarizer struct {
	m       *causalLM
	backend compute.Backend
	batch   int
	seed    int64
	train   []Example
	build   func([]Example) training.Batch
	loss    training.LossFn
	// dev are the dev examples (DevLoss), devSet their instances (DevSummaries).
	dev     []Example
	devSet  []summaryInstance
	pad     int32
	devLoss *scorer
	devSum  *Summarizer
}

// newLMSummarizer is the summarizer m of meta trained on train under the session s and sc's loop
// (packed or padded batches), evaluated on dev, the examples of devSet.
func newLMSummarizer(meta *Meta, m *causalLM, s *session, sc config.Summarizer, train, dev []Example, devSet []summaryInstance) (*lmSummarizer, error) {
	b := &lmSummarizer{m: m, backend: s.backend, batch: sc.Train.BatchSize, seed: s.cfg.Seed, train: train, dev: dev, devSet: devSet, pad: s.chat.Pad,
		build: func(e []Example) training.Batch { return answerBatch(e, s.chat.Pad, 0) }, loss: m.answerLoss}
	if sc.Train.Packing {
		sh := planPacking(train, sc.Train, s.cfg.Seed, sc.MaxSeqLen)
		b.build, b.loss = func(e []Example) training.Batch { return packedBatch(e, s.chat.Pad, sh, false) }, m.packedAnswerLoss
	}
	var err error
	if b.devLoss, err = m.lossScorer(); err != nil {
		return nil, err
	}
	if b.devSum, err = newSummarizer(meta, m, s.chat); err != nil {
		return nil, err
	}
	b.devSum.Gen.Temperature = 0 // the dev ROUGE-L that selects the checkpoint is greedy, sampling or not
	return b, nil
}

// Training implements summarizer.Backbone: the examples shuffled per epoch; only the trained
// variables (the adapters) are saved.
func (b *lmSummarizer) Training() training.Options {
	return training.Options{Backend: b.backend, Store: b.m.Store(), Loss: b.loss, Saved: b.m.Trained,
		Batches: func(epoch int) ([]training.Batch, error) {
			return epochBatches(b.train, b.batch, b.seed, epoch, b.build), nil
		}}
}

// DevLoss implements summarizer.Backbone: the loss of the answer tokens over dev.
func (b *lmSummarizer) DevLoss(context.Context) (float64, error) {
	var sum, n float64
	for i := 0; i < len(b.dev); i += b.batch {
		batch := b.dev[i:min(i+b.batch, len(b.dev))]
		out, err := b.devLoss.call(answerBatch(batch, b.pad, 0).Inputs...)
		if err != nil {
			return 0, err
		}
		// Weighted by answer tokens, as one batch of the whole dev split would be.
		k := 0
		for _, e := range batch {
			pos, _ := lossPositions(e)
			k += len(pos)
		}
		sum += float64(out[0].Value().(float32)) * float64(k)
		n += float64(k)
	}
	return sum / max(n, 1), nil
}

// DevSummaries implements summarizer.Backbone: the text after "Summary:" of the greedy answers
// (as the released script scores it); END-TO-END's answers also give the micro F1 of their
// citations (citation_f1).
func (b *lmSummarizer) DevSummaries(_ context.Context, n int) ([]string, training.Metrics, error) {
	rows := b.devSet[:n]
	reqs := make([]summarizer.Request, len(rows))
	for i, r := range rows {
		reqs[i] = summarizer.Request{Aspect: r.Aspect, Cited: r.Sentences, Document: r.Document}
	}
	answers, err := b.devSum.Answer(reqs, decode.Options{BeamSize: 1, MaxLen: b.devSum.Meta.Generation.MaxNewTokens})
	if err != nil {
		return nil, nil, err
	}
	endToEnd := b.devSum.Meta.Variant == variant.EndToEnd
	summaries := make([]string, len(rows))
	var cites citationCounts
	for i, r := range rows {
		summaries[i] = ParseSummary(answers[i], nil)
		if endToEnd {
			o := ParseEndToEnd(answers[i], len(r.Sentences), nil)
			summaries[i] = o.Summary
			cites.add(o.Indexes, r.Citations)
		}
	}
	if endToEnd {
		return summaries, training.Metrics{"citation_f1": cites.f1()}, nil
	}
	return summaries, nil, nil
}

// citationCounts accumulates the micro precision and recall of predicted citation indices.
type citationCounts struct{ tp, fp, fn int }

// add counts one instance's predicted indices against its reference ones.
func (c *citationCounts) add(pred []int, ref []int32) {
	in := map[int]bool{}
	for _, r := range ref {
		in[int(r)] = true
	}
	hit := 0
	for _, p := range pred {
		if in[p] {
			hit++
		}
	}
	c.tp += hit
	c.fp += len(pred) - hit
	c.fn += len(in) - hit
}

// f1 is the micro F1; 1 when nothing was cited nor predicted (every instance a correct negative).
func (c citationCounts) f1() float64 {
	if c.tp+c.fp+c.fn == 0 {
		return 1
	}
	return 2 * float64(c.tp) / float64(2*c.tp+c.fp+c.fn)
}
