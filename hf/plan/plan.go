// Package plan estimates, without loading any weight, the device memory of fine-tuning a
// pretrained causal LM of package hf/decoder with LoRA (or full fine-tuning): parameters, bytes of
// the frozen base (as stored, or 4-bit NF4 for QLoRA), adapters, gradients, AdamW state and
// activations per micro-batch, with and without gradient checkpointing, in bf16 and in float32. tracksum-train --plan prints it, and
// says whether a recipe fits a device and which setting to change when it does not.
//
// The parameter and weight figures are exact (they are the tensors hf/decoder loads and creates);
// the activation figure is a model of what this project's graph keeps for the backward pass,
// compared with measured peaks in docs/gpu.md.
//
// # Example
//
//	snap, err := snapshot.OpenConfig("Llama-3.1-8B-Instruct") // config.json + tokenizer files only
//	dc, err := decoder.ConfigOf(snap)
//	p, err := plan.Compute(plan.Inputs{Config: dc, LoRA: config.DefaultLoRA(), Batch: 32, SeqLen: 128, AnswerTokens: 8})
//	p.Write(os.Stdout)
package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/decoder"
)

// Precisions of the plan: bf16 (frozen base weights, base matmuls and activations in bf16; adapters,
// heads, gradients and AdamW state in float32) and f32 (everything computed in float32; half
// weights are stored as loaded and converted in the graph).
const (
	BF16 = "bf16"
	F32  = "f32"
)

// Limits of a plan's inputs: a config.json or a config value beyond them is refused before
// anything is computed, so that a hostile or mistyped file gets a one-line error (no real
// checkpoint comes near them: Llama-3.1-405B has 126 layers, hidden 16,384, vocab 128,256). The
// architecture's are hf/decoder's, the limits of loading the model.
const (
	MaxLayers       = decoder.MaxLayers
	MaxHidden       = decoder.MaxHidden
	MaxIntermediate = decoder.MaxIntermediate
	MaxHeads        = decoder.MaxHeads
	MaxVocab        = decoder.MaxVocab
	MaxSeqLen       = 1 << 20
	MaxBatch        = 1 << 16
	MaxRank         = 1 << 14
)

// Inputs are what a plan depends on: the architecture, the adapters and head, and the micro-batch.
type Inputs struct {
	// Config is the decoder's architecture (decoder.ConfigOf).
	Config decoder.Config
	// WeightDType is the base weights' stored dtype (config.json's torch_dtype or dtype):
	// "bfloat16", "float16" or "float32"; "" means bfloat16, the dtype of every current release.
	WeightDType string
	// Quantization is train.quantization: "" or none (the base as WeightDType says), or nf4
	// (QLoRA, bitsandbytes' layout: each decoder layer's projection weights as 4-bit codes with
	// an 8-bit absmax per block of NF4Block weights and a float32 scale per NF4ScaleBlocks
	// blocks; embeddings, LM head, norms and biases stay WeightDType).
	Quantization string
	// LoRA are the adapters; Rank 0 plans full fine-tuning (every weight trainable in float32).
	LoRA config.LoRA
	// HeadParams are the trainable parameters outside the decoder (lm_cls: the score weight,
	// Hidden of them; generative and the summarizer: 0).
	HeadParams int64
	// Batch is the micro-batch (train.batch_size), SeqLen the padded sequence length
	// (max_seq_len), AnswerTokens the longest answer of a micro-batch: the positions whose
	// vocabulary logits the loss computes (0 for lm_cls, whose head reads the last token's
	// hidden state only).
	Batch, SeqLen, AnswerTokens int
	// GradAccumulation > 1 keeps an accumulator of the gradients between micro-batches.
	GradAccumulation int
	// Attention is the attention implementation on the card (Eager or Flash: train.attention as a
	// CUDA backend resolves it; "" is Eager). Flash applies to the bf16 settings only, where
	// hf/decoder's graph takes cuDNN's fused attention (right-padded rows, head dim a multiple of
	// 8, no soft-cap, no sliding window shorter than max_seq_len); f32 is always Eager.
	Attention string
	// Precision is the configured precision (BF16 or F32) and Checkpointing the configured
	// gradient checkpointing: the verdict is given for them.
	Precision     string
	Checkpointing bool
	// Assumed says that Precision and Checkpointing were not read from a config but assumed
	// (the plan says so).
	Assumed bool
	// DeviceMemory is the device's memory in bytes (0: no verdict).
	DeviceMemory int64
	// Section is the config section the advice names (tracker, summarizer).
	Section string
}

// Attention implementations of a plan (Inputs.Attention).
const (
	Eager = "eager"
	Flash = "flash"
)

// Variant is the memory of one (precision, checkpointing) setting, in bytes.
type Variant struct {
	Precision     string
	Checkpointing bool
	// Flash says that the setting's attention is cuDNN's fused attention: no attention
	// probabilities or additive mask are kept, only a float32 log-sum-exp per query and head.
	Flash bool
	// ConvertedWeights are the float32 copies of half-precision frozen weights made in the
	// graph (f32 precision only): all layers' without checkpointing, one layer's with it.
	ConvertedWeights int64
	// Dequantized are the projection weights of one layer dequantized from NF4 into the compute
	// dtype, which live one layer at a time (nf4 only).
	Dequantized int64
	// Activations are the values kept for the backward pass of one micro-batch, plus the
	// working set of one layer's backward.
	Activations int64
	// Total is the peak per device: base weights, trainable state and the above.
	Total int64
}

// Plan is the estimate for one recipe.
type Plan struct {
	In Inputs
	// BaseParams are the decoder's parameters (embedding, layers, final norm, LM head when
	// untied); TrainableParams those the optimizer updates (adapters and head, or everything).
	BaseParams, TrainableParams int64
	// BaseWeights are the base weights' bytes as held in memory; Trainable the float32 trainable
	// parameters (adapters and head; with full fine-tuning, the float32 base itself);
	// Gradients one float32 gradient per trainable parameter; Optimizer AdamW's two moments plus
	// the gradient accumulator when GradAccumulation > 1.
	BaseWeights, Trainable, Gradients, Optimizer int64
	// With nf4: QuantizedParams are the projection weights held as 4-bit codes, Codes their
	// bytes, Absmax the bytes of their double-quantized scales (8-bit absmax and float32 scales
	// of the absmax); BaseWeights is these plus the other parameters at WeightDType.
	QuantizedParams, Codes, Absmax int64
	// Variants are bf16 and f32, each without and with checkpointing.
	Variants []Variant
}

// NF4Block is the weights per absmax scale of bitsandbytes' 4-bit layout (blocksize 64, the
// default of transformers' BitsAndBytesConfig and of Unsloth's bnb-4bit checkpoints);
// NF4ScaleBlocks the absmax values per float32 scale of the double quantization (256).
const (
	NF4Block       = 64
	NF4ScaleBlocks = 256
)

// validate checks in against the limits, all at once: the error is one line naming every value
// outside them. It returns the bytes per base weight of in.WeightDType.
func validate(in Inputs) (int64, error) {
	c := in.Config
	checks := []struct {
		name     string
		v, limit int
	}{
		{"num_hidden_layers", c.Layers, MaxLayers}, {"hidden_size", c.Hidden, MaxHidden},
		{"intermediate_size", c.Intermediate, MaxIntermediate}, {"num_attention_heads", c.Heads, MaxHeads},
		{"num_key_value_heads", c.KVHeads, MaxHeads}, {"head_dim", c.HeadDim, MaxHidden}, {"vocab_size", c.Vocab, MaxVocab},
		{"max_seq_len", in.SeqLen, MaxSeqLen}, {"batch_size", in.Batch, MaxBatch}, {"lora.rank", in.LoRA.Rank, MaxRank},
	}
	var errs []error
	for _, k := range checks {
		if k.v > k.limit || k.v < 0 || (k.v == 0 && k.name != "lora.rank") {
			errs = append(errs, fmt.Errorf("%s = %d, want 1..%d", k.name, k.v, k.limit))
		}
	}
	if in.AnswerTokens < 0 || in.AnswerTokens > in.SeqLen {
		errs = append(errs, fmt.Errorf("answer tokens = %d, want 0..max_seq_len (%d)", in.AnswerTokens, in.SeqLen))
	}
	if in.Precision != BF16 && in.Precision != F32 {
		errs = append(errs, fmt.Errorf("precision %q, want %s or %s", in.Precision, BF16, F32))
	}
	wb, ok := map[string]int64{"": 2, "bfloat16": 2, "float16": 2, "float32": 4}[in.WeightDType]
	if !ok {
		errs = append(errs, fmt.Errorf("weight dtype %q, want bfloat16, float16 or float32", in.WeightDType))
	}
	if in.GradAccumulation < 1 {
		errs = append(errs, fmt.Errorf("grad_accumulation = %d, want >= 1", in.GradAccumulation))
	}
	if in.Attention != "" && in.Attention != Eager && in.Attention != Flash {
		errs = append(errs, fmt.Errorf("attention %q, want %s or %s", in.Attention, Eager, Flash))
	}
	nf4 := in.Quantization == config.QuantizationNF4
	switch {
	case in.Quantization != "" && in.Quantization != config.QuantizationNone && !nf4:
		errs = append(errs, fmt.Errorf("quantization %q, want %s or %s", in.Quantization, config.QuantizationNone, config.QuantizationNF4))
	case nf4 && in.LoRA.Rank == 0:
		errs = append(errs, fmt.Errorf("quantization nf4 needs adapters (lora.rank > 0): a 4-bit base is frozen, full fine-tuning cannot update it"))
	}
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("plan: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return wb, nil
}

// Compute returns the plan of in, or a one-line error for a value outside the limits.
func Compute(in Inputs) (*Plan, error) {
	wb, err := validate(in)
	if err != nil {
		return nil, err
	}
	c := in.Config
	nf4 := in.Quantization == config.QuantizationNF4
	p := &Plan{In: in}
	layerW := layerParams(c)
	p.BaseParams = int64(c.Vocab)*int64(c.Hidden) + int64(c.Layers)*layerW + int64(c.Hidden)
	if !c.TieWordEmbeddings {
		p.BaseParams += int64(c.Vocab) * int64(c.Hidden)
	}
	full := in.LoRA.Rank == 0
	if full {
		p.TrainableParams = p.BaseParams + in.HeadParams
		p.BaseWeights = 0 // the float32 base is the trainable state
	} else {
		p.TrainableParams = int64(c.Layers)*loraParams(c, in.LoRA) + in.HeadParams
		p.BaseWeights = p.BaseParams * wb
		if nf4 {
			for _, n := range projections(c) {
				blocks := ceilDiv(n, NF4Block)
				p.QuantizedParams += n
				p.Codes += ceilDiv(n, 2)
				p.Absmax += blocks + 4*ceilDiv(blocks, NF4ScaleBlocks)
			}
			layers := int64(c.Layers)
			p.QuantizedParams, p.Codes, p.Absmax = layers*p.QuantizedParams, layers*p.Codes, layers*p.Absmax
			p.BaseWeights = p.Codes + p.Absmax + (p.BaseParams-p.QuantizedParams)*wb
		}
	}
	p.Trainable = 4 * p.TrainableParams
	p.Gradients = 4 * p.TrainableParams
	p.Optimizer = 8 * p.TrainableParams
	if in.GradAccumulation > 1 {
		p.Optimizer += 4 * p.TrainableParams
	}
	for _, prec := range []string{BF16, F32} {
		for _, ck := range []bool{false, true} {
			v := Variant{Precision: prec, Checkpointing: ck, Flash: prec == BF16 && fusable(in)}
			// The half-precision weights a layer converts: all of them, or what nf4 leaves
			// unquantized (norms, biases), whose projections are dequantized instead.
			convW := layerW
			if nf4 {
				convW = layerW - p.QuantizedParams/int64(c.Layers)
				v.Dequantized = computeBytes(prec) * (p.QuantizedParams / int64(c.Layers))
			}
			if prec == F32 && !full && wb < 4 {
				layers := int64(c.Layers)
				if ck {
					layers = 1
				}
				// Embedding and LM head are converted once, outside the layers.
				heads := int64(2)
				if c.TieWordEmbeddings {
					heads = 1
				}
				v.ConvertedWeights = 4 * (layers*convW + heads*int64(c.Vocab)*int64(c.Hidden))
			}
			v.Activations = activations(in, prec, ck, v.Flash)
			v.Total = p.BaseWeights + p.Trainable + p.Gradients + p.Optimizer + v.ConvertedWeights + v.Dequantized + v.Activations
			p.Variants = append(p.Variants, v)
		}
	}
	return p, nil
}

// projections are the weight sizes of one decoder layer's linear layers (no biases), one per
// tensor as bitsandbytes quantizes them (Phi-3's fused qkv_proj and gate_up_proj are one each).
func projections(c decoder.Config) []int64 {
	q, kv, h, i := int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim), int64(c.Hidden), int64(c.Intermediate)
	out := []int64{q * h} // o_proj
	if c.FusedQKV {
		out = append(out, h*(q+2*kv))
	} else {
		out = append(out, h*q, h*kv, h*kv)
	}
	if c.FusedGateUp {
		out = append(out, 2*h*i)
	} else {
		out = append(out, h*i, h*i)
	}
	return append(out, i*h) // down_proj
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// computeBytes is the size of an activation or dequantized weight in precision prec.
func computeBytes(prec string) int64 {
	if prec == BF16 {
		return 2
	}
	return 4
}

// layerParams are one decoder layer's weights: seven projections (with their biases), two norms
// (and the per-head q/k norms and sandwich norms of the families that have them).
func layerParams(c decoder.Config) int64 {
	q, kv, h, i := int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim), int64(c.Hidden), int64(c.Intermediate)
	n := h*q + 2*h*kv + q*h + 3*h*i + 2*h
	if c.AttentionBias {
		n += q + 2*kv
	}
	if c.OProjBias {
		n += h
	}
	if c.MLPBias {
		n += 2*i + h
	}
	if c.QKNorm {
		n += 2 * int64(c.HeadDim)
	}
	if c.SandwichNorms {
		n += 2 * h
	}
	return n
}

// loraParams are one layer's adapter parameters: rank x (in + out) per targeted projection.
func loraParams(c decoder.Config, l config.LoRA) int64 {
	q, kv, h, i := int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim), int64(c.Hidden), int64(c.Intermediate)
	dims := map[string][2]int64{
		"q_proj": {h, q}, "k_proj": {h, kv}, "v_proj": {h, kv}, "o_proj": {q, h},
		"gate_proj": {h, i}, "up_proj": {h, i}, "down_proj": {i, h},
		"qkv_proj": {h, q + 2*kv}, "gate_up_proj": {h, 2 * i},
	}
	var n int64
	for _, t := range targetsOf(c, l) {
		if d, ok := dims[t]; ok {
			n += int64(l.Rank) * (d[0] + d[1])
		}
	}
	return n
}

// targetsOf are the adapted modules: the family's projections for all-linear (a decoder's
// all-linear is every projection) or no list, else the list.
func targetsOf(c decoder.Config, l config.LoRA) []string {
	if l.TargetModules == nil || l.AllLinear() {
		return c.LoRATargets
	}
	return l.TargetModules
}

// The activation model: per token and layer, the values hf/decoder's graph keeps for the backward
// pass (inputs of matmuls and of non-linear ops):
//
//	residual stream before and after attention (2H), the two normalised inputs (2H),
//	rotated queries, repeated keys and values, the attention output (4·Heads·HeadDim),
//	gate, up, sigmoid(gate), act(gate), act(gate)·up (5I), the adapters' rank-r products (7r),
//	attention probabilities (Heads·T, float32 in either precision: softmax stays in float32),
//
// in the compute dtype (2 bytes in bf16, 4 in f32). Checkpointing keeps only each layer's input
// (H) and recomputes one layer at a time during the backward pass. On top: the additive attention
// mask [B, Heads, T, T] (float32, built once), the final norm's input and output, and the answer
// logits [B, K, V] with their log-softmax and one-hot targets (float32). The backward pass of a
// layer needs about one more layer's worth of gradients of activations.
//
// With flash attention (cuDNN's fused kernel, forward and backward) neither the probabilities nor
// the mask exist: the kernel keeps one float32 log-sum-exp per query and head (Heads per token)
// and recomputes the probabilities tile by tile in the backward pass.
func activations(in Inputs, prec string, ck, flash bool) int64 {
	c := in.Config
	cb := computeBytes(prec)
	tokens := int64(in.Batch) * int64(in.SeqLen)
	q, h, i := int64(c.Heads*c.HeadDim), int64(c.Hidden), int64(c.Intermediate)
	r := int64(in.LoRA.Rank)
	probs := 4 * int64(c.Heads) * int64(in.SeqLen)
	mask := 4 * int64(in.Batch) * int64(c.Heads) * int64(in.SeqLen) * int64(in.SeqLen)
	if flash {
		probs, mask = 4*int64(c.Heads), 0
	}
	perTokenLayer := cb*(4*h+4*q+5*i+7*r) + probs
	layer := tokens * perTokenLayer
	var kept int64
	if ck {
		kept = int64(c.Layers)*tokens*h*cb + layer
	} else {
		kept = int64(c.Layers) * layer
	}
	final := 2 * 4 * tokens * h
	logits := 3 * 4 * int64(in.Batch) * int64(in.AnswerTokens) * int64(c.Vocab)
	return kept + layer + mask + final + logits
}

// AttentionOf is the attention a training loop's graph takes at precision on backend:
// train.attention resolved (config.ResolveAttention), except that packed rows always take the
// decomposed path (hf/decoder's Model.fused). An attention the backend cannot run plans Eager
// (training refuses it).
func AttentionOf(loop config.TrainLoop, precision, backend string) string {
	if fused, _ := config.ResolveAttention(loop.Attention, precision, backend); fused && !loop.Packing {
		return Flash
	}
	return Eager
}

// fusable reports whether in's bf16 settings take cuDNN's fused attention in every layer
// (decoder.Config.FlashFits, as the graph decides it for right-padded rows; packed rows are the
// caller's to exclude: they plan Eager). A model whose layers differ is planned eager throughout.
func fusable(in Inputs) bool {
	if in.Attention != Flash {
		return false
	}
	for l := range in.Config.Layers {
		if !in.Config.FlashFits(l, in.SeqLen) {
			return false
		}
	}
	return true
}

// Configured returns the variant of the configured precision and checkpointing.
func (p *Plan) Configured() Variant {
	for _, v := range p.Variants {
		if v.Precision == p.In.Precision && v.Checkpointing == p.In.Checkpointing {
			return v
		}
	}
	return p.Variants[0]
}
