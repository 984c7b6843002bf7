package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// TrainLoop holds the hyperparameters of the shared GoMLX training loop (package model/training). It
// is embedded as the `train:` block of every trainable section (tracker.train, summarizer.train), so
// that both models are trained, logged, checkpointed and resumed the same way.
type TrainLoop struct {
	// Optimizer is the update rule: adamw (float32 moments). adamw_8bit (the released scripts'
	// optim="adamw_8bit": bitsandbytes' blockwise 8-bit moment states) is named so that a recipe
	// asking for it is refused with the reason (OptimizerAdamW8bit) instead of silently run as adamw.
	Optimizer string `mapstructure:"optimizer" yaml:"optimizer"`
	// LearningRate is the peak AdamW learning rate, reached at the end of the warmup.
	LearningRate float64 `mapstructure:"learning_rate" yaml:"learning_rate"`
	// WeightDecay is AdamW's decoupled weight decay, applied to matrices only (not biases, norms).
	WeightDecay float64 `mapstructure:"weight_decay" yaml:"weight_decay"`
	// Beta1, Beta2 and Epsilon are AdamW's moment coefficients and denominator guard.
	Beta1   float64 `mapstructure:"beta1" yaml:"beta1"`
	Beta2   float64 `mapstructure:"beta2" yaml:"beta2"`
	Epsilon float64 `mapstructure:"epsilon" yaml:"epsilon"`
	// WarmupSteps is the number of optimizer steps of linear warmup from 0 to LearningRate.
	WarmupSteps int `mapstructure:"warmup_steps" yaml:"warmup_steps"`
	// Decay shapes the learning rate after the warmup: linear (to 0 at the last step), cosine or none.
	Decay string `mapstructure:"decay" yaml:"decay"`
	// Epochs is the number of passes over the training batches.
	Epochs int `mapstructure:"epochs" yaml:"epochs"`
	// MaxSteps caps the number of optimizer steps; 0 means Epochs decides.
	MaxSteps int `mapstructure:"max_steps" yaml:"max_steps"`
	// BatchSize is the number of examples per micro-batch (one forward/backward pass).
	BatchSize int `mapstructure:"batch_size" yaml:"batch_size"`
	// GradAccumulation is the number of micro-batches whose gradients are summed into one optimizer step.
	GradAccumulation int `mapstructure:"grad_accumulation" yaml:"grad_accumulation"`
	// ClipNorm clips the global L2 norm of the gradient; 0 disables clipping.
	ClipNorm float64 `mapstructure:"clip_norm" yaml:"clip_norm"`
	// EvalEvery evaluates on the dev split every this many optimizer steps; 0 means once per epoch.
	EvalEvery int `mapstructure:"eval_every" yaml:"eval_every"`
	// SelectBy is what picks the best checkpoint (and drives early stopping): metric (the model's
	// dev score: the tracker's F1, the summarizer's ROUGE-L) or eval_loss (the dev loss, lower is
	// better: the released scripts' load_best_model_at_end on eval_loss, here on the dev split, not
	// on the test split the scripts evaluate on).
	SelectBy string `mapstructure:"select_by" yaml:"select_by"`
	// KeepCheckpoints keeps the last N evaluations beside best/, each a checkpoint of its own in
	// checkpoints/step-NNNNNNN/ (its variables and dev metrics in best/, the run's metadata,
	// tokenizer and config, its own manifest, written at the end of training: tracksum-infer
	// --tracker OUT/checkpoints/step-N opens it): the released scripts' save_total_limit (5). 0
	// keeps best/ only.
	KeepCheckpoints int `mapstructure:"keep_checkpoints" yaml:"keep_checkpoints"`
	// Patience stops training after this many evaluations without a better dev score; 0 disables it.
	Patience int `mapstructure:"patience" yaml:"patience"`
	// LogEvery writes the mean train loss, learning rate and speed to metrics.jsonl every this
	// many optimizer steps (and at every evaluation); 0 = at evaluations only. It changes no
	// weight, so settings records and resume checks ignore it (Unrecorded).
	LogEvery int `mapstructure:"log_every" yaml:"log_every"`
	// Devices is the number of accelerator devices the batch would be split over (data parallelism
	// by GoMLX's distributed execution); 1 = one device, the only count implemented: the training
	// loop refuses more (training.CheckDevices). BatchSize is the global micro-batch.
	Devices int `mapstructure:"devices" yaml:"devices"`
	// DeviceMemory is the memory of one device with its unit ("80GiB", "80GB"), against which
	// tracksum-train --plan (--plan-memory) says whether a pretrained recipe fits; "" = no verdict.
	DeviceMemory string `mapstructure:"device_memory" yaml:"device_memory"`
	// Precision is the compute precision of a pretrained model (--pretrained): f32, bf16 (mixed
	// precision: frozen base weights, their products and the activations in bfloat16; adapters,
	// heads, optimizer state, norms, softmax, logits and losses in float32) or auto (bf16 on a
	// CUDA backend, f32 otherwise: ResolvePrecision). The from-scratch models always compute in
	// float32.
	Precision string `mapstructure:"precision" yaml:"precision"`
	// GradientCheckpointing recomputes each decoder/encoder layer's activations of a pretrained
	// model in the backward pass instead of keeping them (GoMLX's (*Node).Checkpoint): less memory
	// for a second forward pass; the gradients are the same. Pretrained models only.
	GradientCheckpointing bool `mapstructure:"gradient_checkpointing" yaml:"gradient_checkpointing"`
	// Quantization is how a pretrained causal LM's frozen base is held in memory: none (its
	// dtype) or nf4 (QLoRA: the layers' projections as bitsandbytes' 4-bit NormalFloat codes,
	// dequantized in each product's graph; a bf16/f32 base is quantized when loaded, a "-bnb-4bit"
	// snapshot kept as stored). nf4 needs lora.rank > 0. Pretrained causal LMs only.
	Quantization string `mapstructure:"quantization" yaml:"quantization"`
	// Packing (TRL's packing, padding-free) concatenates a micro-batch's examples into rows of
	// max_seq_len tokens instead of padding each to the longest: each token attends to its own
	// example only, at the positions it has alone, and the loss is the padded batch's (the same
	// examples per step, the same weighted mean). Every batch of a run has one shape. Pretrained
	// causal LMs only (not encoder_cls).
	Packing bool `mapstructure:"packing" yaml:"packing"`
	// Attention is the attention implementation of a pretrained causal LM (transformers'
	// attn_implementation): eager (the decomposed graph), flash (cuDNN's fused flash attention
	// through GoMLX, forward and backward, where its constraints hold; needs a CUDA backend and
	// bf16) or auto (flash on a CUDA backend in bf16, eager otherwise: ResolveAttention).
	Attention string `mapstructure:"attention" yaml:"attention"`
}

// Attention implementations of train.attention.
const (
	AttentionAuto  = "auto"
	AttentionEager = "eager"
	AttentionFlash = "flash"
)

// Attentions lists the accepted values of train.attention.
var Attentions = []string{AttentionAuto, AttentionEager, AttentionFlash}

// ResolveAttention reports whether attention a means cuDNN's fused attention for a model computing
// in precision (resolved: f32 or bf16) on the backend named backend: auto is flash on a CUDA
// backend in bf16 and eager elsewhere (the go backend's results stay those of the decomposed
// graph); flash elsewhere is an error, since GoMLX would silently run its own decomposed graph.
func ResolveAttention(a, precision, backend string) (bool, error) {
	cuda := strings.Contains(strings.ToLower(backend), "cuda")
	switch a {
	case AttentionEager:
		return false, nil
	case AttentionFlash:
		if !cuda {
			return false, fmt.Errorf("flash needs cuDNN's fused attention, which backend %s lacks: use auto or eager", backend)
		}
		if precision != PrecisionBF16 {
			return false, fmt.Errorf("flash needs precision bf16 (cuDNN's fused attention is half precision), got %s", precision)
		}
		return true, nil
	}
	return cuda && precision == PrecisionBF16, nil
}

// Optimizers of train.optimizer.
const (
	OptimizerAdamW     = "adamw"
	OptimizerAdamW8bit = "adamw_8bit"
)

// Optimizers lists the accepted values of train.optimizer.
var Optimizers = []string{OptimizerAdamW}

// errAdamW8bit says why train.optimizer adamw_8bit is refused rather than run.
const errAdamW8bit = "adamw_8bit is not implemented: bitsandbytes' blockwise 8-bit moments (dynamic quantile maps, per-block absmax) are not written here; its update equals adamw's up to the states' rounding, so use adamw (configs/paper.yaml does, docs/paper.md)"

// Selections of train.select_by.
const (
	SelectByMetric   = "metric"
	SelectByEvalLoss = "eval_loss"
)

// Selections lists the accepted values of train.select_by.
var Selections = []string{SelectByMetric, SelectByEvalLoss}

// Quantizations of train.quantization.
const (
	QuantizationNone = "none"
	QuantizationNF4  = "nf4"
)

// Quantizations lists the accepted values of train.quantization.
var Quantizations = []string{QuantizationNone, QuantizationNF4}

// Precisions of train.precision.
const (
	PrecisionAuto = "auto"
	PrecisionF32  = "f32"
	PrecisionBF16 = "bf16"
)

// Precisions lists the accepted values of train.precision.
var Precisions = []string{PrecisionAuto, PrecisionF32, PrecisionBF16}

// ResolvePrecision returns the precision p means on the backend named backend (as model.Backend
// names it, e.g. "go", "xla:cpu", "xla:cuda" or an xla plugin's path): auto is bf16 on a CUDA
// backend (the name or the plugin path contains "cuda") and f32 elsewhere (the pure-Go backend
// and xla:cpu, where bfloat16 products are no faster); f32 and bf16 are themselves.
func ResolvePrecision(p, backend string) string {
	if p != PrecisionAuto {
		return p
	}
	if strings.Contains(strings.ToLower(backend), "cuda") {
		return PrecisionBF16
	}
	return PrecisionF32
}

// DecaySchedules lists the accepted values of train.decay.
var DecaySchedules = []string{"linear", "cosine", "none"}

// DefaultTrainLoop returns the loop settings used when a profile does not set them.
func DefaultTrainLoop() TrainLoop {
	return TrainLoop{
		Optimizer:        OptimizerAdamW,
		LearningRate:     1e-3,
		WeightDecay:      0.01,
		Beta1:            0.9,
		Beta2:            0.999,
		Epsilon:          1e-8,
		WarmupSteps:      50,
		Decay:            "linear",
		Epochs:           10,
		BatchSize:        32,
		GradAccumulation: 1,
		LogEvery:         10,
		ClipNorm:         1.0,
		EvalEvery:        0,
		Patience:         4,
		SelectBy:         SelectByMetric,
		Devices:          1,
		Precision:        PrecisionAuto,
		Quantization:     QuantizationNone,
		Attention:        AttentionAuto,
	}
}

// Validate reports invalid loop settings; section prefixes the keys (e.g. "tracker.train").
func (c TrainLoop) Validate(section string) error {
	var errs []error
	bad := func(key, msg string) { errs = append(errs, fmt.Errorf("%s.%s: %s", section, key, msg)) }
	switch {
	case c.Optimizer == OptimizerAdamW8bit:
		bad("optimizer", errAdamW8bit)
	case !slices.Contains(Optimizers, c.Optimizer):
		bad("optimizer", fmt.Sprintf("must be one of %v, got %q", Optimizers, c.Optimizer))
	}
	if c.LearningRate <= 0 {
		bad("learning_rate", "must be > 0")
	}
	if c.WeightDecay < 0 {
		bad("weight_decay", "must be >= 0")
	}
	if c.Beta1 < 0 || c.Beta1 >= 1 {
		bad("beta1", "must be in [0, 1)")
	}
	if c.Beta2 < 0 || c.Beta2 >= 1 {
		bad("beta2", "must be in [0, 1)")
	}
	if c.Epsilon <= 0 {
		bad("epsilon", "must be > 0")
	}
	if c.WarmupSteps < 0 {
		bad("warmup_steps", "must be >= 0")
	}
	if !slices.Contains(DecaySchedules, c.Decay) {
		bad("decay", fmt.Sprintf("must be one of %v, got %q", DecaySchedules, c.Decay))
	}
	if c.Epochs < 1 {
		bad("epochs", "must be >= 1")
	}
	if c.MaxSteps < 0 {
		bad("max_steps", "must be >= 0")
	}
	if c.BatchSize < 1 {
		bad("batch_size", "must be >= 1")
	}
	if c.GradAccumulation < 1 {
		bad("grad_accumulation", "must be >= 1")
	}
	if c.ClipNorm < 0 {
		bad("clip_norm", "must be >= 0")
	}
	if c.EvalEvery < 0 {
		bad("eval_every", "must be >= 0")
	}
	if c.LogEvery < 0 {
		bad("log_every", "must be >= 0")
	}
	if !slices.Contains(Selections, c.SelectBy) {
		bad("select_by", fmt.Sprintf("must be one of %v, got %q", Selections, c.SelectBy))
	}
	if c.KeepCheckpoints < 0 {
		bad("keep_checkpoints", fmt.Sprintf("must be >= 0 (0 = best/ only), got %d", c.KeepCheckpoints))
	}
	if c.Patience < 0 {
		bad("patience", "must be >= 0")
	}
	if c.Devices < 1 {
		bad("devices", fmt.Sprintf("must be >= 1, got %d", c.Devices))
	}
	if c.DeviceMemory != "" {
		if _, err := ParseBytes(c.DeviceMemory); err != nil {
			bad("device_memory", err.Error())
		}
	}
	if !slices.Contains(Precisions, c.Precision) {
		bad("precision", fmt.Sprintf("must be one of %v, got %q", Precisions, c.Precision))
	}
	if !slices.Contains(Quantizations, c.Quantization) {
		bad("quantization", fmt.Sprintf("must be one of %v, got %q", Quantizations, c.Quantization))
	}
	if !slices.Contains(Attentions, c.Attention) {
		bad("attention", fmt.Sprintf("must be one of %v, got %q", Attentions, c.Attention))
	}
	return errors.Join(errs...)
}

// Unrecorded reports whether a dotted config key changes no trained weight (how often the loop
// logs, what is reported, the memory the plan is checked against, whether activations are
// recomputed, whether examples are packed into rows, which attention kernel runs: the gradients
// are the same, to float rounding): settings records of cross-validations and the resume
// check leave such keys out, so that changing them, or a release adding one, never refuses a
// finished run.
func Unrecorded(key string) bool {
	for _, suffix := range []string{".train.log_every", ".train.device_memory", ".train.gradient_checkpointing", ".train.packing", ".train.attention"} {
		if strings.HasSuffix(key, suffix) {
			return true
		}
	}
	return key == "tracker.report_test"
}

// FromScratchUnread reports whether a dotted config key is read by the pretrained models only
// (train.precision, train.quantization, train.packing and train.attention: the from-scratch models
// always compute in float32 over padded batches; the chat template and the pretrained summarizer's
// generation keys), so that the records of cross-validations, which train from scratch, leave it
// out too: a finished cross-validation stays valid across the release that added them.
func FromScratchUnread(key string) bool {
	switch key {
	case "tracker.chat_template", "summarizer.chat_template", "summarizer.max_new_tokens",
		"summarizer.temperature", "summarizer.top_p", "summarizer.top_k", "summarizer.prompt_style":
		return true
	}
	for _, suffix := range []string{".train.precision", ".train.quantization", ".train.packing", ".train.attention"} {
		if strings.HasSuffix(key, suffix) {
			return true
		}
	}
	return false
}

// ParseBytes reads a memory size with its unit: "80GiB", "80 GB", "141GiB", "512MiB". Decimal
// units (kB, MB, GB, TB: powers of 1000) and binary ones (KiB, MiB, GiB, TiB: powers of 1024) are
// both accepted; a bare number is refused, since "80" could be either.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
	}
	for _, u := range units {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			// One rule for every size too small to be a memory: less than a byte (0, 0.5B,
			// 1e-7B) would truncate to 0 bytes, which reads as "no verdict".
			if err != nil || !(f*u.mult >= 1) || f*u.mult > 1<<62 {
				break
			}
			return int64(f * u.mult), nil
		}
	}
	return 0, fmt.Errorf("memory size %q: want at least 1 byte, as a number with a unit, e.g. 80GiB or 80GB (GB = 10^9 bytes, GiB = 2^30)", s)
}
