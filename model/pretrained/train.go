package pretrained

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gomlx/compute"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/textmetrics/rouge"
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
	man, err := dataset.ReadManifest(req.Data)
	if err != nil {
		return nil, err
	}
	snap, err := snapshot.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("%s.pretrained: %w", task, err)
	}
	lock, err := training.LockOutDir(req.Out, checkpoint.PretrainedFile, "pretrained "+task)
	if err != nil {
		return nil, err
	}
	s := &session{cfg: cfg, req: req, log: log, lock: lock, backend: backend, bname: bname, snap: snap, set: man.AspectSet}
	fail := func(err error) (*session, error) {
		lock.Release()
		return nil, err
	}
	if slices.Contains(config.EncoderModelTypes, snap.ModelType) {
		if task != dataset.TaskTracker {
			return fail(fmt.Errorf("%s.pretrained: %s is an encoder (model_type %s); the %s needs a causal LM", task, snap.Dir, snap.ModelType, task))
		}
		fmt.Fprintf(log, "pretrained %s: %s (model_type %s) on backend %s\n", task, snap.Dir, snap.ModelType, s.bname)
		return s, nil
	}
	dc, err := decoder.ConfigOf(snap)
	if err != nil {
		return fail(err)
	}
	if s.chat, err = LoadChat(snap.Dir, dc.EOSList); err != nil {
		return fail(err)
	}
	fmt.Fprintf(log, "pretrained %s: %s (model_type %s, %d layers, hidden %d, vocab %d) on backend %s\n",
		task, snap.Dir, snap.ModelType, dc.Layers, dc.Hidden, dc.Vocab, s.bname)
	return s, nil
}

// fit runs the training loop over the prepared examples and writes the checkpoint's end files
// (interop layouts, report). loss is the training graph; evaluate the dev evaluation.
func (s *session) fit(ctx context.Context, meta *Meta, m trainable, loop config.TrainLoop, train []Example,
	build func([]Example) training.Batch, evaluate func(context.Context) (training.Metrics, error), sel string, minimize bool,
	loss training.LossFn, devN int) (*Report, error) {
	if err := prepareDir(s.req.Out, meta, s.snap, s.cfg, s.req.AllowChangedConfig, s.log); err != nil {
		return nil, err
	}
	trainable := 0
	for v := range m.Store().IterVariables() {
		if v.Trainable && m.Trained(v.Path()) {
			trainable += v.Shape().Size()
		}
	}
	fmt.Fprintf(s.log, "pretrained %s: %d training examples, %d dev; %d trainable parameters (lora rank %d)\n",
		meta.Task, len(train), devN, trainable, meta.LoRA.Rank)
	t0 := time.Now()
	res, err := training.Run(ctx, training.Options{
		Backend: s.backend,
		Store:   m.Store(),
		Loop:    loop,
		Seed:    s.cfg.Seed,
		OutDir:  s.req.Out,
		Log:     s.log,
		Loss:    loss,
		Batches: func(epoch int) ([]training.Batch, error) {
			return epochBatches(train, loop.BatchSize, s.cfg.Seed, epoch, build), nil
		},
		Evaluate: evaluate,
		Select:   sel,
		Minimize: minimize,
		Saved:    m.Trained,
		AfterStep: func(step int) {
			if afterStep != nil {
				afterStep(step)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if err := model.LoadVariablesInto(m.Store(), checkpoint.BestWeights(s.req.Out), nil); err != nil {
		return nil, err
	}
	if err := m.WriteInterop(s.req.Out); err != nil {
		return nil, err
	}
	rep := &Report{Task: meta.Task, Head: meta.Head, Backend: s.bname, Base: s.snap.Dir, ModelType: s.snap.ModelType,
		TrainExamples: len(train), DevExamples: devN, Trainable: trainable, Steps: res.Steps, BestStep: res.BestStep,
		Stop: res.Stop, ExamplesPerSec: res.ExamplesPerSec, TokensPerSec: res.TokensPerSec,
		TrainSeconds: time.Since(t0).Seconds(), Dev: res.Best}
	return rep, checkpoint.WriteJSON(filepath.Join(s.req.Out, checkpoint.ReportFile), rep)
}

// TrainTracker fine-tunes cfg.Tracker.Pretrained as a tracker on the prepared directory req.Data
// into the checkpoint req.Out (resuming a run found there), with the head tracker.head.
func TrainTracker(ctx context.Context, cfg *config.Config, req training.Request) error {
	tc := cfg.Tracker
	s, err := begin(cfg, req, dataset.TaskTracker, tc.Pretrained, tc.Train)
	if err != nil {
		return err
	}
	defer s.lock.Release()
	head, err := tc.ResolveHead(s.snap.ModelType)
	if err != nil {
		return err
	}
	meta := &Meta{Task: dataset.TaskTracker, Head: head, ModelType: s.snap.ModelType, AspectSet: s.set, MaxSeqLen: tc.MaxSeqLen,
		LoRA: tc.LoRA, Seed: cfg.Seed}
	rows, err := readRows[dataset.TrackerRow](req.Data, dataset.TaskTracker, dataset.SplitTrain)
	if err != nil {
		return err
	}
	devRows, err := readRows[dataset.TrackerRow](req.Data, dataset.TaskTracker, dataset.SplitDev)
	if err != nil {
		return err
	}
	if len(rows) == 0 || len(devRows) == 0 {
		return fmt.Errorf("%s: the tracker needs train and dev rows (got %d and %d)", req.Data, len(rows), len(devRows))
	}
	t, m, err := newTracker(s.backend, s.snap, s.snap.Dir, s.chat, meta)
	if err != nil {
		return err
	}
	train, err := trackerExamples(t.labelled, rows, tc)
	if err != nil {
		return err
	}
	devLabels := make([]float32, len(devRows))
	for i, r := range devRows {
		if r.Label {
			devLabels[i] = 1
		}
	}
	evaluate := func(context.Context) (training.Metrics, error) {
		probs, err := t.scoreRows(devRows)
		if err != nil {
			return nil, err
		}
		return tracker.BinaryMetrics(probs, devLabels, tc.Threshold), nil
	}
	var build func([]Example) training.Batch
	var loss training.LossFn
	lm, _ := m.(*causalLM)
	enc, _ := m.(*encoderCLS)
	switch {
	case head == config.HeadEncoderCLS:
		build, loss = func(b []Example) training.Batch { return encoderBatch(b, int32(enc.sp.SEP)) }, enc.loss
	case head == config.HeadLMCLS:
		build, loss = func(b []Example) training.Batch { return clsBatch(b, s.chat.Pad) }, lm.clsLoss
	default:
		build, loss = func(b []Example) training.Batch { return answerBatch(b, s.chat.Pad) }, lm.answerLoss
	}
	rep, err := s.fit(ctx, meta, m, tc.Train, train, build, evaluate, "f1", false, loss, len(devRows))
	if err != nil {
		return err
	}
	fmt.Fprintf(s.log, "pretrained tracker: best dev F1 %.4f (P %.4f R %.4f) at step %d -> %s\n",
		rep.Dev["f1"], rep.Dev["precision"], rep.Dev["recall"], rep.BestStep, req.Out)
	return nil
}

// TrainSummarizer fine-tunes cfg.Summarizer.Pretrained as the summarizer on the prepared
// directory req.Data into the checkpoint req.Out (resuming a run found there). Each evaluation
// reports the dev loss of the answer tokens and, over the first summarizer.dev_decode_limit dev
// instances (0: all), the ROUGE-L F of greedy summaries (the text after "Summary:", as the
// released script scores it), which selects the best checkpoint.
func TrainSummarizer(ctx context.Context, cfg *config.Config, req training.Request) error {
	sc := cfg.Summarizer
	s, err := begin(cfg, req, dataset.TaskSummarizer, sc.Pretrained, sc.Train)
	if err != nil {
		return err
	}
	defer s.lock.Release()
	gen := GenOptions{BeamSize: sc.BeamSize, MaxNewTokens: sc.MaxSummaryLen, LengthPenalty: sc.LengthPenalty, NoRepeatNgram: sc.NoRepeatNgram}
	meta := &Meta{Task: dataset.TaskSummarizer, ModelType: s.snap.ModelType, AspectSet: s.set, MaxSeqLen: sc.MaxSeqLen,
		LoRA: sc.LoRA, Seed: cfg.Seed, FullContext: sc.FullContext, Generation: &gen}
	p := &summaryPrompter{chat: s.chat, set: s.set, maxLen: sc.MaxSeqLen, fullContext: sc.FullContext}
	var devRows []dataset.SummarizerRow
	read := func(split string) ([]Example, error) {
		rows, err := readRows[dataset.SummarizerRow](req.Data, dataset.TaskSummarizer, split)
		if err != nil {
			return nil, err
		}
		if split == dataset.SplitDev {
			devRows = rows
		}
		out := make([]Example, 0, len(rows))
		for _, r := range rows {
			e, err := p.example(r.Aspect, r.CitedSentences, r.Document, r.Summary)
			if err != nil {
				return nil, fmt.Errorf("abstract %s, aspect %s: %w", r.PMID, r.Aspect, err)
			}
			out = append(out, e)
		}
		return out, nil
	}
	train, err := read(dataset.SplitTrain)
	if err != nil {
		return err
	}
	dev, err := read(dataset.SplitDev)
	if err != nil {
		return err
	}
	if sc.DevDecodeLimit > 0 && len(devRows) > sc.DevDecodeLimit {
		devRows = devRows[:sc.DevDecodeLimit]
	}
	if len(train) == 0 || len(dev) == 0 {
		return fmt.Errorf("%s: the summarizer needs train and dev instances with citations (got %d and %d)", req.Data, len(train), len(dev))
	}
	m, err := loadCausalLM(s.backend, s.snap, sc.LoRA, cfg.Seed, false)
	if err != nil {
		return err
	}
	devLoss, err := m.lossScorer()
	if err != nil {
		return err
	}
	evalLoss := func() (float64, error) {
		var sum, n float64
		for i := 0; i < len(dev); i += sc.Train.BatchSize {
			b := dev[i:min(i+sc.Train.BatchSize, len(dev))]
			out, err := devLoss.call(answerBatch(b, s.chat.Pad).Inputs...)
			if err != nil {
				return 0, err
			}
			// Weighted by answer tokens, as one batch of the whole dev split would be.
			k := 0
			for _, e := range b {
				pos, _ := lossPositions(e)
				k += len(pos)
			}
			sum += float64(out[0].Value().(float32)) * float64(k)
			n += float64(k)
		}
		return sum / max(n, 1), nil
	}
	devSum, err := newSummarizer(meta, m, s.chat)
	if err != nil {
		return err
	}
	scorer := rouge.New(rouge.Options{Stem: true})
	evaluate := func(context.Context) (training.Metrics, error) {
		reqs := make([]summarizer.Request, len(devRows))
		for i, r := range devRows {
			reqs[i] = summarizer.Request{Aspect: r.Aspect, Cited: r.CitedSentences, Document: r.Document}
		}
		sums, err := devSum.Summarize(reqs, decode.Options{BeamSize: 1, MaxLen: gen.MaxNewTokens})
		if err != nil {
			return nil, err
		}
		var rl float64
		for i, r := range devRows {
			rl += scorer.Score(r.Summary, sums[i]).RL.F
		}
		loss, err := evalLoss()
		if err != nil {
			return nil, err
		}
		return training.Metrics{"loss": loss, "rougeL": rl / float64(max(len(devRows), 1))}, nil
	}
	rep, err := s.fit(ctx, meta, m, sc.Train, train, func(b []Example) training.Batch { return answerBatch(b, s.chat.Pad) },
		evaluate, "rougeL", false, m.answerLoss, len(dev))
	if err != nil {
		return err
	}
	fmt.Fprintf(s.log, "pretrained summarizer: best dev ROUGE-L %.4f (loss %.4f, %d instances decoded) at step %d -> %s\n",
		rep.Dev["rougeL"], rep.Dev["loss"], len(devRows), rep.BestStep, req.Out)
	return nil
}
