package pretrained

import (
	"context"
	"fmt"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/plan"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model/training"
)

// Answer lengths the plan assumes for the loss's vocabulary logits (the answers are data: the
// plan reads no data). The generative tracker's answer "Relevance:Yes." with the end-of-turn
// token is 5-6 tokens of Llama 3's vocabulary, padded to the answer bucket (8); the summarizer's
// "Summary: ..." answers of TracSum are short abstracts of a few sentences, far below 256 tokens.
const (
	planTrackerAnswer    = 8
	planSummarizerAnswer = 256
)

// planSettings are the settings the plan's verdict is given for: train.precision as a CUDA card
// resolves it ("auto" is bf16 there: the plan is for a GPU) and train.gradient_checkpointing; the
// plan prints the three other combinations beside it.
func planSettings(loop config.TrainLoop) (precision string, checkpointing bool) {
	if config.ResolvePrecision(loop.Precision, "cuda") == config.PrecisionBF16 {
		return plan.BF16, loop.GradientCheckpointing
	}
	return plan.F32, loop.GradientCheckpointing
}

// PlanTracker writes the memory plan of the pretrained tracker of cfg (tracker.pretrained,
// tracker.head, tracker.lora, tracker.train, tracker.max_seq_len) to req.Log.
func PlanTracker(_ context.Context, cfg *config.Config, req training.Request) error {
	tc := cfg.Tracker
	snap, dc, err := planSnapshot(tc.Pretrained)
	if err != nil {
		return err
	}
	head, err := tc.ResolveHead(snap.ModelType)
	if err != nil {
		return err
	}
	in, err := planInputs("tracker", snap, dc, tc.LoRA, tc.Train, tc.MaxSeqLen)
	if err != nil {
		return err
	}
	switch head {
	case config.HeadLMCLS:
		in.HeadParams, in.AnswerTokens = int64(dc.Hidden), 0
	default:
		in.AnswerTokens = min(planTrackerAnswer, tc.MaxSeqLen)
	}
	return writePlan(req, in)
}

// PlanSummarizer writes the memory plan of the pretrained summarizer of cfg to req.Log.
func PlanSummarizer(_ context.Context, cfg *config.Config, req training.Request) error {
	sc := cfg.Summarizer
	snap, dc, err := planSnapshot(sc.Pretrained)
	if err != nil {
		return err
	}
	// TTS (+) f trains with its own batch (variants.full_context_batch_size), as trainSummarizer does.
	sc.Train.BatchSize = cfg.Variants.SummarizerBatchSize(config.BatchTrackThenSum, sc.FullContext, sc.Train.BatchSize)
	in, err := planInputs("summarizer", snap, dc, sc.LoRA, sc.Train, sc.MaxSeqLen)
	if err != nil {
		return err
	}
	in.AnswerTokens = min(planSummarizerAnswer, sc.MaxSeqLen)
	return writePlan(req, in)
}

// planSnapshot opens the snapshot's config and tokenizer files (no weights) and reads the
// decoder's architecture; an encoder is refused (the plan models hf/decoder's graph).
func planSnapshot(dir string) (*snapshot.Snapshot, decoder.Config, error) {
	snap, err := snapshot.OpenConfig(dir)
	if err != nil {
		return nil, decoder.Config{}, err
	}
	if family.IsEncoder(snap.ModelType) {
		return nil, decoder.Config{}, fmt.Errorf("snapshot %s: --plan models causal LMs; model_type %q is an encoder", snap.Dir, snap.ModelType)
	}
	dc, err := decoder.ConfigOf(snap)
	if err != nil {
		return nil, decoder.Config{}, err
	}
	return snap, dc, nil
}

// planInputs are the plan's inputs from a section's settings.
func planInputs(section string, snap *snapshot.Snapshot, dc decoder.Config, l config.LoRA, loop config.TrainLoop, maxSeqLen int) (plan.Inputs, error) {
	in := plan.Inputs{Config: dc, LoRA: l, Batch: loop.BatchSize, SeqLen: maxSeqLen, GradAccumulation: loop.GradAccumulation, Section: section,
		Quantization: loop.Quantization}
	if loop.DeviceMemory != "" {
		n, err := config.ParseBytes(loop.DeviceMemory)
		if err != nil {
			return plan.Inputs{}, fmt.Errorf("%s.train.device_memory: %w", section, err)
		}
		in.DeviceMemory = n
	}
	in.Precision, in.Checkpointing = planSettings(loop)
	// The card's attention in bf16: auto and flash are cuDNN's fused attention on CUDA.
	in.Attention = plan.AttentionOf(loop, config.PrecisionBF16, "cuda")
	// transformers writes the weights' dtype as torch_dtype (4.x) or dtype (5.x).
	for _, key := range []string{"dtype", "torch_dtype"} {
		if d, err := snap.String(key, ""); err == nil && d != "" {
			in.WeightDType = d
			break
		}
	}
	return in, nil
}

func writePlan(req training.Request, in plan.Inputs) error {
	p, err := plan.Compute(in)
	if err != nil {
		return err
	}
	return p.Write(req.Log)
}
