// Package family is the registry of the Hugging Face model families tracksum loads: one file per
// family, each registering from init() what differs between families (transformers' class names,
// config defaults, LoRA target modules and the features the graphs read). Every other package asks
// the registry; none switches on a model_type. docs/architecture.md ("Add a model family") is the
// recipe for a new one.
//
// # Example
//
//	f, ok := family.Lookup("qwen3")
//	if ok && f.QKNorm { ... }
package family

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Kind is what a family's checkpoints are: causal LMs (hf/decoder) or encoders (hf/encoder).
type Kind string

// The kinds of families.
const (
	CausalLM Kind = "causal-lm"
	Encoder  Kind = "encoder"
)

// SlidingWindow is how a family's config turns sliding-window attention on.
type SlidingWindow int

const (
	// NoSlidingWindow: full attention; sliding_window is not read.
	NoSlidingWindow SlidingWindow = iota
	// SlidingWindowAll: every layer attends within sliding_window (mistral, phi3); an absent key
	// means Family.DefaultSlidingWindow (0: none), an explicit null full attention.
	SlidingWindowAll
	// SlidingWindowOptIn: use_sliding_window turns on a per-layer window (qwen2, qwen3); tracksum
	// refuses it at load rather than ignoring it.
	SlidingWindowOptIn
	// SlidingWindowLayers: some layers slide (window sliding_window, default
	// Family.DefaultSlidingWindow, null: none), as config.json's layer_types says, or else layer i
	// when (i+1) % pattern != 0, pattern being sliding_window_pattern or Family.SlidingPattern
	// (Gemma 2: every even layer; Gemma 3: five of six).
	SlidingWindowLayers
)

// Bias is which projections of a decoder layer have biases.
type Bias int

const (
	// BiasFromConfig: attention_bias (q, k, v and o) and mlp_bias (gate, up, down) keys, default
	// false (llama, qwen3, gemma).
	BiasFromConfig Bias = iota
	// BiasQKV: q, k and v always have biases, o and the MLP none (qwen2).
	BiasQKV
	// BiasNone: no biases, whatever the config says (mistral).
	BiasNone
)

// Family is what tracksum knows of one model_type.
type Family struct {
	// ModelType is config.json's model_type.
	ModelType string
	// Kind says which package builds the graph.
	Kind Kind
	// CausalLMClass and SequenceClassificationClass are transformers' class names, written in
	// exported snapshots' architectures ("" where transformers has none).
	CausalLMClass, SequenceClassificationClass string
	// LoRATargets are the module names that may carry an adapter, in the layer's order (a
	// decoder's default target list is all of them).
	LoRATargets []string
	// AllLinear are the target names PEFT's target_modules "all-linear" resolves to on this
	// family, as PEFT writes them once condensed to module-name suffixes (nil: LoRATargets, a
	// decoder's projections; an encoder's LoRATargets also list overlapping suffixes).
	AllLinear []string

	// Config defaults of transformers' configuration class, for keys a config.json may omit.

	// HeadDim is head_dim's default (0: hidden_size / num_attention_heads, which must divide).
	HeadDim int
	// TiedEmbeddings is tie_word_embeddings' default.
	TiedEmbeddings bool
	// ActivationKey is the config key of the MLP's activation ("hidden_act", or gemma's
	// "hidden_activation"), Activation its default.
	ActivationKey, Activation string
	// SlidingWindow says how sliding_window is read; DefaultSlidingWindow is its value when absent
	// under SlidingWindowAll.
	SlidingWindow        SlidingWindow
	DefaultSlidingWindow int
	// SlidingPattern is the layer pattern's default under SlidingWindowLayers.
	SlidingPattern int
	// RopeTheta is rope_theta's default (0: 10000).
	RopeTheta float64
	// LocalRopeTheta, when set, is rope_local_base_freq's default: the sliding layers' RoPE base,
	// without rope_scaling (Gemma 3).
	LocalRopeTheta float64
	// QueryPreAttnScalar, when set, is query_pre_attn_scalar's default: attention scores are scaled
	// by its inverse square root instead of head_dim's (Gemma 2 and 3).
	QueryPreAttnScalar float64
	// Softcapping: attn_logit_softcapping and final_logit_softcapping are read (null: none), with
	// AttnSoftcap and FinalSoftcap as their defaults: scores and logits become cap * tanh(x / cap).
	Softcapping               bool
	AttnSoftcap, FinalSoftcap float64
	// Bias says which projections have biases.
	Bias Bias

	// Graph features (hf/decoder reads these, never ModelType).

	// NormPlusOne: RMSNorm scales by (1 + w), the weight in float32 (gemma).
	NormPlusOne bool
	// ScaleEmbeddings: embeddings are multiplied by sqrt(hidden_size) (gemma).
	ScaleEmbeddings bool
	// QKNorm: an RMSNorm over head_dim (weights self_attn.q_norm / k_norm) on each head of the
	// queries and keys before RoPE (qwen3, gemma3_text).
	QKNorm bool
	// FusedQKV: one qkv_proj whose output rows are [q | k | v]; FusedGateUp: one gate_up_proj whose
	// output rows are [gate | up] (Phi-3).
	FusedQKV, FusedGateUp bool
	// Encoder families (hf/encoder).

	// Name is the family's name in messages ("BERT").
	Name string
	// KeyPrefix is the encoder's key prefix in a *ForSequenceClassification checkpoint ("bert.").
	KeyPrefix string
	// VocabSize, MaxPositions, TypeVocabSize and PadTokenID are the defaults of vocab_size,
	// max_position_embeddings, type_vocab_size and pad_token_id.
	VocabSize, MaxPositions, TypeVocabSize, PadTokenID int
	// OffsetPositions: position ids count from pad_token_id + 1 (RoBERTa).
	OffsetPositions bool
	// HiddenSize, NumLayers, NumHeads and IntermediateSize are the defaults of hidden_size,
	// num_hidden_layers, num_attention_heads and intermediate_size (0: BertConfig's 768, 12, 12,
	// 3072); LayerNormEps is layer_norm_eps' (0: 1e-12).
	HiddenSize, NumLayers, NumHeads, IntermediateSize int
	LayerNormEps                                      float64
	// FineTuned: hf/encoder fine-tunes the family (adapters or every weight, and a classification
	// head): the tracker's encoder_cls trains on it. Other encoders are loaded for inference only
	// (the nli judge).
	FineTuned bool
	// TargetAliases maps the Llama-family target names of the config's default list (q_proj, ...)
	// to the family's layers of the same role, so that one target list serves decoders and this
	// encoder; a name mapped to "" selects nothing here (BERT's feed-forward block has no gate).
	TargetAliases map[string]string
	// Disentangled: the encoder is DeBERTa-v2's (modeling_deberta_v2.py): query_proj / key_proj /
	// value_proj, disentangled attention over relative positions as config.json's relative_attention,
	// max_relative_positions, position_buckets, pos_att_type, share_att_key and norm_rel_ebd say,
	// absolute positions only with position_biased_input, token types only with type_vocab_size > 0
	// (TypeVocabSize 0 is then allowed), an optional embedding_size projection, the masked softmax
	// that zeroes padded queries, v2-xlarge's ConvLayer (conv_kernel_size), and ContextPooler
	// (pooler_hidden_act) under a top-level "pooler.".
	Disentangled bool

	// SandwichNorms: the attention and MLP outputs are normalised before their residual additions
	// (post_attention_layernorm, post_feedforward_layernorm), and the MLP reads
	// pre_feedforward_layernorm (Gemma 2 and 3).
	SandwichNorms bool
}

var registry = map[string]Family{}

// Register adds a family; a second family of the same model_type, an empty model_type or kind,
// or no LoRA targets is a programming error (registration runs from init).
func Register(f Family) {
	switch {
	case f.ModelType == "":
		panic("family: Register with an empty ModelType")
	case f.Kind != CausalLM && f.Kind != Encoder:
		panic(fmt.Sprintf("family: %s: kind %q", f.ModelType, f.Kind))
	case len(f.LoRATargets) == 0:
		panic(fmt.Sprintf("family: %s: no LoRA targets", f.ModelType))
	case f.SlidingWindow == SlidingWindowLayers && f.SlidingPattern < 1:
		panic(fmt.Sprintf("family: %s: SlidingWindowLayers without a SlidingPattern", f.ModelType))
	}
	if _, dup := registry[f.ModelType]; dup {
		panic(fmt.Sprintf("family: %s registered twice", f.ModelType))
	}
	f.LoRATargets = slices.Clone(f.LoRATargets)
	f.AllLinear = slices.Clone(f.AllLinear)
	f.TargetAliases = maps.Clone(f.TargetAliases)
	for _, t := range f.TargetAliases {
		if t != "" && !slices.Contains(f.LoRATargets, t) {
			panic(fmt.Sprintf("family: %s: target alias %q is not among its LoRA targets", f.ModelType, t))
		}
	}
	for _, t := range f.AllLinear {
		if !slices.Contains(f.LoRATargets, t) {
			panic(fmt.Sprintf("family: %s: all-linear target %q is not among its LoRA targets", f.ModelType, t))
		}
	}
	registry[f.ModelType] = f
}

// Lookup returns the family of a model_type.
func Lookup(modelType string) (Family, bool) {
	f, ok := registry[modelType]
	if ok {
		f.LoRATargets = slices.Clone(f.LoRATargets)
		f.AllLinear = slices.Clone(f.AllLinear)
		f.TargetAliases = maps.Clone(f.TargetAliases)
	}
	return f, ok
}

// IsEncoder reports whether modelType is a registered encoder family (no causal LM head).
func IsEncoder(modelType string) bool {
	f, ok := registry[modelType]
	return ok && f.Kind == Encoder
}

// FineTunedEncoders lists the encoder families hf/encoder fine-tunes (FineTuned), sorted.
func FineTunedEncoders() []string {
	var out []string
	for _, name := range Names(Encoder) {
		if registry[name].FineTuned {
			out = append(out, name)
		}
	}
	return out
}

// SelectedTargets returns the family's module names that the configured targets select: each
// alias (TargetAliases) replaced by its layer, names that select nothing here dropped, repeats
// removed, in order. What a fine-tuned encoder's adapter_config.json records.
func (f Family) SelectedTargets(targets []string) []string {
	var out []string
	for _, t := range targets {
		if alias, ok := f.TargetAliases[t]; ok {
			t = alias
		}
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// AllLinearTargets returns the targets of PEFT's "all-linear" on the family: every linear layer
// of a decoder layer (the output layer, lm_head, excluded as PEFT excludes it), or an encoder's
// linear layers by the suffixes that select them.
func (f Family) AllLinearTargets() []string {
	if f.AllLinear != nil {
		return slices.Clone(f.AllLinear)
	}
	return slices.Clone(f.LoRATargets)
}

// Names lists the registered model types of kind k ("" for every kind), sorted.
func Names(k Kind) []string {
	var out []string
	for name, f := range registry {
		if k == "" || f.Kind == k {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// LoRATargets lists every target module name of the families of kind k ("" for every kind),
// sorted and without repeats: what a config's target_modules may name.
func LoRATargets(k Kind) []string {
	var out []string
	for _, f := range registry {
		if k == "" || f.Kind == k {
			out = append(out, f.LoRATargets...)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}
