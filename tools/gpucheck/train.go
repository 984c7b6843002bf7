package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/dataset/prepare"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/plan"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/pretrained"
	"github.com/tracksum/tracksum/model/training"
)

func trainCommand() cli.Command {
	fs := cli.NewFlags("gpucheck train")
	fs.String("task", "tracker", "tracker (generative head) or summarizer")
	fs.String("snapshot", "", "base snapshot (gpucheck snapshot)")
	fs.String("out", "", "work directory: prepared/ (reused) and the checkpoint TASK/ (replaced)")
	fs.Int("steps", 3, "optimizer steps")
	fs.Int("batch", 8, "examples per micro-batch")
	fs.Int("seq", 128, "max_seq_len")
	fs.Int("samples", 12, "synthetic abstracts prepared (the built-in sample)")
	fs.Int("doc-words", 0, "lengthen every abstract to at least this many words with uncited sentences of other synthetic\n"+
		"abstracts (0: the built-in sample as is); with summarizer.full_context the summarizer's prompts then fill --seq")
	fs.Float64("peak-tflops", 0, "the card's dense bf16 peak in TFLOP/s, for the MFU (0: no MFU)")
	return cli.Command{
		Name: "gpucheck train", Synopsis: "--task tracker|summarizer --snapshot DIR --out DIR [flags]", Flags: fs,
		Description: "A few LoRA steps (r16, rsLoRA, the seven projections) of tracksum-train's pretrained task on the\n" +
			"built-in sample: tokens/s, losses, peak RSS, and the memory plan of the same shapes beside it.",
		Run: func(ctx context.Context, args []string) error {
			task, _ := fs.GetString("task")
			snap, _ := fs.GetString("snapshot")
			out, _ := fs.GetString("out")
			steps, _ := fs.GetInt("steps")
			batch, _ := fs.GetInt("batch")
			seq, _ := fs.GetInt("seq")
			samples, _ := fs.GetInt("samples")
			docWords, _ := fs.GetInt("doc-words")
			if (task != "tracker" && task != "summarizer") || snap == "" || out == "" || len(args) > 0 {
				return cli.Usagef("--task tracker|summarizer, --snapshot and --out are required")
			}
			if docWords < 0 {
				return cli.Usagef("--doc-words must be >= 0")
			}
			peak, _ := fs.GetFloat64("peak-tflops")
			return train(ctx, task, snap, out, steps, batch, seq, samples, docWords, peak)
		},
	}
}

func train(ctx context.Context, task, snap, out string, steps, batch, seq, samples, docWords int, peakTFLOPS float64) error {
	// The defaults with the TRACKSUM_* environment, as every tracksum command reads it: the check
	// chooses settings it has no flag for (e.g. TRACKSUM_TRACKER_TRAIN_PRECISION=bf16 and
	// TRACKSUM_TRACKER_TRAIN_GRADIENT_CHECKPOINTING=true where the build has those keys).
	cfg, err := config.Load(viper.New(), "", pflag.NewFlagSet("gpucheck", pflag.ContinueOnError), nil)
	if err != nil {
		return err
	}
	data, err := prepareSample(ctx, cfg, out, samples, docWords)
	if err != nil {
		return err
	}
	ck := filepath.Join(out, task)
	if err := os.RemoveAll(ck); err != nil {
		return err
	}
	// The batches our steps train on, as the reference steps read them (peft_check.py train
	// --batches): equal batches are the only like-for-like loss and speed comparison.
	batchFile := filepath.Join(out, task+"-batches.jsonl")
	bw, err := os.Create(batchFile)
	if err != nil {
		return err
	}
	defer bw.Close()
	var traceErr error
	opts := pretrained.TrainOptions{Log: os.Stderr, Trace: func(step int, group []training.Batch, loss float64) {
		for _, b := range group {
			if traceErr == nil {
				traceErr = writeBatch(bw, step, loss, b)
			}
		}
	}}
	start := time.Now()
	_, backend, err := model.Backend()
	if err != nil {
		return err
	}
	in := plan.Inputs{Batch: batch, SeqLen: seq, GradAccumulation: 1, Section: task, LoRA: config.DefaultLoRA()}
	in.Precision, in.Checkpointing = envSettings(task, backend)
	// train.quantization as the environment sets it (the script's nf4 runs): the plan's NF4 base.
	in.Quantization = strings.ToLower(os.Getenv(config.EnvPrefix + "_" + strings.ToUpper(task) + "_TRAIN_QUANTIZATION"))
	err = trainTask(ctx, cfg, data, ck, opts, &in, task, snap, steps, batch, seq)
	res := map[string]any{"step": "train", "task": task, "snapshot": filepath.Base(snap), "steps": steps, "batch": batch, "max_seq_len": seq,
		"wall_seconds": time.Since(start).Seconds()}
	if docWords > 0 {
		res["doc_words"], res["full_context"] = docWords, cfg.Summarizer.FullContext
	}
	res["backend"], res["precision"], res["gradient_checkpointing"] = backend, in.Precision, in.Checkpointing
	in.Attention = runAttention(cfg, task, in.Precision, backend)
	res["attention"] = in.Attention
	// TRACKSUM_<TASK>_TRAIN_QUANTIZATION=nf4 (gpu-check.sh's "nf4" runs): a QLoRA base.
	res["quantization"] = in.Quantization
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		res["peak_rss_bytes"] = ru.Maxrss * 1024 // Linux reports KiB
	}
	if err != nil {
		res["ok"], res["error"] = false, err.Error()
		_ = emit(os.Stdout, res)
		return err
	}
	if traceErr != nil {
		return fmt.Errorf("%s: %w", batchFile, traceErr)
	}
	if err := bw.Close(); err != nil {
		return err
	}
	res["batches"] = batchFile
	if err := measuredFigures(res, ck, batchFile, batch); err != nil {
		return err
	}
	planFigures(res, snap, in, seq, peakTFLOPS)
	res["ok"] = true
	return emit(os.Stdout, res)
}

// trainTask trains task for the check on the prepared data into ck: in cfg the snapshot, the sequence length and a loop of
// steps steps of batch examples, and in in the answer length and the quantization the run's
// plan models. Kept apart from train, which measures around it.
func trainTask(ctx context.Context, cfg *config.Config, data, ck string, opts pretrained.TrainOptions, in *plan.Inputs, task, snap string, steps, batch, seq int) error {
	loop := func(l *config.TrainLoop) {
		l.MaxSteps, l.EvalEvery, l.BatchSize, l.GradAccumulation = steps, steps, batch, 1
		l.WarmupSteps, l.LearningRate, l.Patience = 0, 1e-4, 0
		// A train row per step: the steady speed is their median (steadySpeed).
		l.LogEvery = 1
	}
	if task == "tracker" {
		cfg.Tracker.Pretrained, cfg.Tracker.Head, cfg.Tracker.MaxSeqLen = snap, config.HeadGenerative, seq
		// Positives repeated, not weighted: every example's weight is 1, so that the loss is
		// transformers' mean over the answer tokens and the reference's first loss equals ours.
		cfg.Tracker.Imbalance = "oversample"
		loop(&cfg.Tracker.Train)
		in.AnswerTokens, in.Quantization = min(8, seq), cfg.Tracker.Train.Quantization
		return pretrained.TrainTracker(ctx, cfg, data, ck, opts)
	}
	cfg.Summarizer.Pretrained, cfg.Summarizer.MaxSeqLen = snap, seq
	cfg.Summarizer.DevDecodeLimit, cfg.Summarizer.BeamSize = 1, 1
	loop(&cfg.Summarizer.Train)
	in.AnswerTokens, in.Quantization = min(256, seq), cfg.Summarizer.Train.Quantization
	return pretrained.TrainSummarizer(ctx, cfg, data, ck, opts)
}

// runAttention is the attention the run's graph took (train.attention resolved on this backend
// at this precision; packed rows are decomposed), so that the plan beside the measured peak
// models the same graph.
func runAttention(cfg *config.Config, task, precision, backend string) string {
	lp := cfg.Summarizer.Train
	if task == "tracker" {
		lp = cfg.Tracker.Train
	}
	return plan.AttentionOf(lp, precision, backend)
}

// prepareSample prepares the synthetic sample of samples abstracts under out (reused when a run
// left it there); with docWords > 0, abstracts of about docWords words (writeLongSample) in a
// directory of their own. It returns the prepared directory.
func prepareSample(ctx context.Context, cfg *config.Config, out string, samples, docWords int) (string, error) {
	cfg.Prepare.SampleSize = samples
	data := filepath.Join(out, "prepared")
	var inputs []string
	if docWords > 0 {
		data += fmt.Sprintf("-%dw", docWords)
		long := filepath.Join(out, fmt.Sprintf("long-%dw.jsonl", docWords))
		if err := atomicio.WriteWith(long, 0o644, func(w io.Writer) error {
			return writeLongSample(w, cfg.Seed, samples, docWords)
		}); err != nil {
			return "", err
		}
		inputs = []string{long}
	}
	if _, err := os.Stat(filepath.Join(data, "manifest.json")); err != nil {
		if _, err := prepare.Run(ctx, cfg, prepare.Options{Inputs: inputs, Out: data, Overwrite: true}); err != nil {
			return "", err
		}
	}
	return data, nil
}

// measuredFigures adds to res what the run in ck measured: speeds (overall, steady, the first
// step's), losses, trainable parameters, dev figures, and the first batch's loss.
func measuredFigures(res map[string]any, ck, batchFile string, batch int) error {
	var rep pretrained.Report
	if err := atomicio.ReadJSON(filepath.Join(ck, checkpoint.ReportFile), &rep, false); err != nil {
		return err
	}
	res["tokens_per_sec"], res["examples_per_sec"], res["train_seconds"] = rep.TokensPerSec, rep.ExamplesPerSec, rep.TrainSeconds
	res["trainable_parameters"], res["dev"] = rep.Trainable, rep.Dev
	res["train_loss"], res["dev_loss"] = losses(filepath.Join(ck, training.MetricsFile))
	// The first step compiles the training graph on an XLA backend: its seconds, less a steady
	// step's, are the compile time.
	if first := firstStepSpeed(filepath.Join(ck, training.MetricsFile)); first > 0 {
		res["first_step_seconds"] = float64(batch) / first
	}
	if eps := steadySpeed(filepath.Join(ck, training.MetricsFile)); eps > 0 && rep.ExamplesPerSec > 0 {
		res["steady_examples_per_sec"] = eps
		res["steady_tokens_per_sec"] = eps * rep.TokensPerSec / rep.ExamplesPerSec
	}
	if first, ok := firstLoss(batchFile); ok {
		res["first_loss"] = first
	}
	return nil
}

// planFigures adds to res the memory plan of the same shapes (the run's precision, checkpointing,
// quantization and attention), to compare its total with the measured peak, and the MFU at the steady
// speed given the device's peak TFLOP/s. A snapshot whose config cannot be read adds nothing.
func planFigures(res map[string]any, snap string, in plan.Inputs, seq int, peakTFLOPS float64) {
	s, err := snapshot.OpenConfig(snap)
	if err != nil {
		return
	}
	if in.Config, err = decoder.ConfigOf(s); err != nil {
		return
	}
	in.WeightDType, _ = s.String("torch_dtype", "")
	if p, err := plan.Compute(in); err == nil {
		v := p.Configured()
		res["plan_total_bytes"], res["plan_activation_bytes"] = v.Total, v.Activations
		res["plan_static_bytes"] = v.Total - v.Activations - v.ConvertedWeights
	}
	// MFU: docs/gpu.md's FLOP count of a LoRA step per real token, at the steady speed.
	if tps, ok := res["steady_tokens_per_sec"].(float64); ok && peakTFLOPS > 0 {
		f := trainFLOPsPerToken(in.Config, seq, in.AnswerTokens, in.Checkpointing)
		res["flops_per_token"], res["mfu"] = f, tps*f/(peakTFLOPS*1e12)
	}
}

// envSettings are the precision and checkpointing of the run as the environment sets them
// (TRACKSUM_<TASK>_TRAIN_PRECISION: auto, the default, is bf16 on a CUDA backend and f32
// elsewhere), for the plan printed beside the measurement.
func envSettings(task, backend string) (string, bool) {
	prefix := config.EnvPrefix + "_" + strings.ToUpper(task) + "_TRAIN_"
	p := strings.ToLower(os.Getenv(prefix + "PRECISION"))
	if p == "" || p == "auto" {
		p = plan.F32
		if strings.Contains(strings.ToLower(backend), "cuda") {
			p = plan.BF16
		}
	}
	ck, _ := strconv.ParseBool(os.Getenv(prefix + "GRADIENT_CHECKPOINTING"))
	return p, ck
}

// trainSpeeds are the examples/s of the per-step train rows of a metrics.jsonl, in order. A line
// that is not a row is skipped, and a read error ends the list: the speeds are best-effort figures.
func trainSpeeds(path string) []float64 {
	var speeds []float64
	for l, err := range atomicio.Lines(path, 0) {
		if err != nil {
			break
		}
		var row struct {
			Split string   `json:"split"`
			EPS   *float64 `json:"examples_per_sec"`
		}
		if json.Unmarshal(l.Data, &row) == nil && row.Split == "train" && row.EPS != nil {
			speeds = append(speeds, *row.EPS)
		}
	}
	return speeds
}

// steadySpeed is the median examples/s of the per-step train rows of a metrics.jsonl after the
// first (which compiles the step on an XLA backend): the speed of a long run, where the report's
// mean over a few steps is mostly compilation. 0 with fewer than three rows.
func steadySpeed(path string) float64 {
	speeds := trainSpeeds(path)
	if len(speeds) < 3 {
		return 0
	}
	speeds = speeds[1:]
	slices.Sort(speeds)
	return speeds[len(speeds)/2]
}

// firstStepSpeed is the examples/s of the first per-step train row of a metrics.jsonl (0 when
// absent).
func firstStepSpeed(path string) float64 {
	if speeds := trainSpeeds(path); len(speeds) > 0 {
		return speeds[0]
	}
	return 0
}

// losses returns the last train and dev losses of a metrics.jsonl (nil when absent).
func losses(path string) (train, dev any) {
	for l, err := range atomicio.Lines(path, 0) {
		if err != nil {
			break
		}
		var row map[string]any
		if json.Unmarshal(l.Data, &row) != nil {
			continue // a torn or foreign line: best effort, as steadySpeed
		}
		if l, ok := row["loss"]; ok {
			if row["split"] == "train" {
				train = l
			} else {
				dev = l
			}
		}
	}
	return train, dev
}

// writeLongSample writes n synthetic abstracts (dataset.SyntheticAbstract of seed) as TracSum JSONL,
// each document lengthened to at least words words by appending the sentences of other synthetic
// abstracts (of seed+1), uncited: the citations stay valid, and a summarizer with the full
// abstract in its prompt (summarizer.full_context) gets prompts of a real fine-tuning run's length
// (the recipe's 2,048 tokens), which the built-in sample's short abstracts never reach.
func writeLongSample(w io.Writer, seed int64, n, words int) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	filler := 0
	for i := range n {
		ins := dataset.SyntheticAbstract(seed, i)
		doc := slices.Clone(ins[0].Document)
		count := 0
		for _, s := range doc {
			count += len(strings.Fields(s))
		}
		for count < words {
			for _, s := range dataset.SyntheticAbstract(seed+1, filler)[0].Document {
				doc = append(doc, s)
				count += len(strings.Fields(s))
			}
			filler++
		}
		for k := range ins {
			ins[k].Document = doc
			if err := enc.Encode(&ins[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// batchRow is one micro-batch of a step as written for the reference (peft_check.py train
// --batches): the token ids right-padded, each row's real length (the attention mask is 1 on the
// first Lengths[b] tokens), and the answer's label positions: the logits at LabelPos[b][i] predict
// LabelIDs[b][i] (transformers' labels[b][LabelPos+1] = LabelIDs, -100 elsewhere), with the
// example's loss weight. Loss is our step's (the mean over its micro-batches, before the update).
type batchRow struct {
	Step     int       `json:"step"`
	Loss     float64   `json:"loss"`
	InputIDs [][]int32 `json:"input_ids"`
	Lengths  []int     `json:"lengths"`
	LabelPos [][]int32 `json:"label_pos"`
	LabelIDs [][]int32 `json:"label_ids"`
	Weights  []float32 `json:"weights"`
}

// writeBatch writes an answer-loss batch (tokens, mask, pos, tgt, w: model/pretrained's
// answerBatch) as one batchRow line.
func writeBatch(w io.Writer, step int, loss float64, b training.Batch) error {
	if len(b.Inputs) != 5 {
		return fmt.Errorf("step %d: a batch of %d inputs, want the answer loss's 5", step, len(b.Inputs))
	}
	ts := make([]*tensors.Tensor, 5)
	for i, in := range b.Inputs {
		t, ok := in.(*tensors.Tensor)
		if !ok {
			return fmt.Errorf("step %d: input %d is a %T, want a tensor", step, i, in)
		}
		ts[i] = t
	}
	dims := ts[0].Shape().Dimensions
	nb, nt, nk := dims[0], dims[1], ts[2].Shape().Dimensions[1]
	tok := tensors.MustCopyFlatData[int32](ts[0])
	mask := tensors.MustCopyFlatData[float32](ts[1])
	pos := tensors.MustCopyFlatData[int32](ts[2])
	tgt := tensors.MustCopyFlatData[int32](ts[3])
	wt := tensors.MustCopyFlatData[float32](ts[4])
	row := batchRow{Step: step, Loss: loss}
	for i := range nb {
		row.InputIDs = append(row.InputIDs, tok[i*nt:(i+1)*nt])
		n := 0
		for _, m := range mask[i*nt : (i+1)*nt] {
			if m > 0 {
				n++
			}
		}
		row.Lengths = append(row.Lengths, n)
		var p, g []int32
		weight := float32(0)
		for k := range nk {
			if wt[i*nk+k] > 0 {
				p, g, weight = append(p, pos[i*nk+k]), append(g, tgt[i*nk+k]), wt[i*nk+k]
			}
		}
		row.LabelPos, row.LabelIDs, row.Weights = append(row.LabelPos, p), append(row.LabelIDs, g), append(row.Weights, weight)
	}
	return emit(w, row)
}

// firstLoss is the loss of the first step in a batches file (before any update).
func firstLoss(path string) (float64, bool) {
	for l, err := range atomicio.Lines(path, 0) {
		if err != nil {
			return 0, false
		}
		var row struct {
			Step int     `json:"step"`
			Loss float64 `json:"loss"`
		}
		if json.Unmarshal(l.Data, &row) == nil && row.Step == 1 {
			return row.Loss, true
		}
		return 0, false
	}
	return 0, false
}

// trainFLOPsPerToken is docs/gpu.md's count of the matmul FLOPs of one LoRA training step per
// token of a sequence of seq tokens with answer positions at which the vocabulary's logits are
// computed: the forward pass is 2 FLOPs per weight of the layers' projections, plus attention's
// two products (4·seq·heads·head_dim per layer: the full seq × seq scores, as the kernels compute
// them), plus the head's 2·vocab·hidden at answer/seq of the tokens; the backward pass of frozen
// projections computes the input's gradient only (one more forward), attention's takes two; gradient
// checkpointing recomputes the forward pass once more. The adapters' rank-r products are left out
// (under 1% at rank 16).
func trainFLOPsPerToken(c decoder.Config, seq, answer int, checkpointing bool) float64 {
	h, q, kv := float64(c.Hidden), float64(c.Heads*c.HeadDim), float64(c.KVHeads*c.HeadDim)
	proj := h*q + 2*h*kv + q*h + 3*h*float64(c.Intermediate) // q, k, v, o; gate, up, down
	linear := 2 * proj * float64(c.Layers)
	attn := 4 * float64(seq) * q * float64(c.Layers)
	head := 2 * float64(c.Vocab) * h * float64(answer) / float64(max(seq, 1))
	fwd := linear + attn + head
	total := fwd + linear + head + 2*attn // the backward pass
	if checkpointing {
		total += fwd
	}
	return total
}
