// Package encoder is the BERT-family encoder of pretrained Hugging Face checkpoints — model_type
// bert (BERT, PubMedBERT, BioBERT) and roberta (RoBERTa, e.g. RoBERTa-large-MNLI) — as a GoMLX
// graph, with optional LoRA adapters on its linear layers and the pooled [CLS] vector a
// classification head reads.
//
// DeBERTa-v2 and DeBERTa-v3 (model_type deberta-v2, e.g. cross-encoder/nli-deberta-v3-base) are a
// graph of their own (deberta.go: disentangled attention over relative positions, ContextPooler),
// selected by the family's Disentangled feature and read from config.json's DebertaV2Config keys;
// inference only (no LoRA).
//
// RoBERTa is the same graph as BERT with three differences, each a field of Config read from
// config.json (never a test of the model's name in the graph): positions start after the padding
// id and skip padding (PositionOffset, transformers' create_position_ids_from_input_ids), one
// token type (type_vocab_size 1: the segment ids are ignored), and RobertaClassificationHead
// (dense, tanh, out_proj over the <s> token, no pooler) when the snapshot carries it (see
// Classify).
//
// The forward pass is written from Hugging Face transformers' modeling_bert.py: word + position +
// token-type embeddings and a LayerNorm (layer_norm_eps), then post-LN blocks (self-attention with
// the padding mask, output dense + residual + LayerNorm, intermediate dense + GELU (erf), output
// dense + residual + LayerNorm), and BertPooler (tanh of a dense layer on [CLS]) when the
// checkpoint has pooler weights.
//
// Why our own forward and not go-huggingface's models/transformer with GoMLX's
// ml/zoo/transformer (ArchitectureStandard), which maps model_type bert: in v0.4.2 / v0.28.6 the
// token-type embedding is a single scalar type for the whole batch (EmbedTokensWithType takes a
// scalar, and AllLayers passes none, so every token gets type 0), which is not BERT on a sentence
// pair ([CLS] aspect [SEP] sentence [SEP] has type 1 on the second segment); the pooler weights are
// skipped; and its dense layers have no hook for LoRA adapters. The weights still come through
// go-huggingface's safetensors reader (hf/snapshot), and the graph uses the project's layer ops
// (layers), whose gradients are laid out for the pure-Go backend.
//
// # Example
//
//	snap, err := snapshot.Open("SNAPSHOT")
//	store := gomlxmodel.NewStore()
//	m, err := encoder.Load(snap, store, config.LoRA{Rank: 16, Alpha: 16, RSLoRA: true}, seed)
//	err = m.AddClassifier(1, seed)
//	// in a graph function:
//	hidden := m.Hidden(scope, tokens, tokenTypes, mask) // [B, T, H]
//	logits := m.Classify(scope, m.Pooled(scope, hidden)) // [B, 1]
package encoder

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/encoder/layout"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// LoRA is the config's adapter section (config.LoRA, as hf/decoder's), so one config section
// drives both model kinds: Rank (0 = full fine-tuning), Alpha, RSLoRA (scale Alpha/sqrt(Rank)
// instead of Alpha/Rank), Dropout (on the adapter's input, training graphs only) and
// TargetModules. TargetModules
// here are matched as PEFT matches target_modules: a Linear whose Hugging Face module key equals a
// target or ends with "." + target ("query", "dense", "attention.output.dense", "output.dense";
// note that PEFT's "output.dense" also selects attention.output.dense). The Llama-family names of
// the config's default (q_proj ...) select BERT's layers of the same role through hf/family's
// TargetAliases (gate_proj selects nothing). nil means DefaultTargets.
type LoRA = config.LoRA

// DefaultTargets are all of BERT's linear layers (the paper's "all projections" for an encoder).
// As in PEFT, "dense" matches every Linear named dense: attention.output.dense,
// intermediate.dense, output.dense and pooler.dense.
var DefaultTargets = []string{"query", "key", "value", "dense"}

// resolveTargets returns the module names l selects on the encoder family f (hf/family's
// TargetAliases mapped, names that select nothing there dropped), or an error naming an unknown one.
func resolveTargets(f family.Family, l LoRA) ([]string, error) {
	if l.TargetModules == nil {
		return DefaultTargets, nil
	}
	var out []string
	for _, t := range l.TargetModules {
		alias, aliased := f.TargetAliases[t]
		switch {
		case aliased && alias == "": // e.g. gate_proj: BERT's feed-forward block has no gate
		case aliased:
			out = append(out, alias)
		case slices.Contains(f.LoRATargets, t):
			out = append(out, t)
		default:
			return nil, fmt.Errorf("lora target module %q is not a %s linear layer (%s: %s; or the Llama names %s)",
				t, f.Name, f.Name, strings.Join(f.LoRATargets, ", "), strings.Join(config.LoRATargetsLlama, ", "))
		}
	}
	return out, nil
}

// targetMatches is PEFT's rule for a target_modules list entry.
func targetMatches(target, moduleKey string) bool {
	return moduleKey == target || strings.HasSuffix(moduleKey, "."+target)
}

// Config is the architecture of a BERT checkpoint, read from config.json with BertConfig's
// defaults for keys that are absent.
type Config struct {
	// Layout holds the sizes and DeBERTa-v2 features that decide the tensors (Tensors, Linears):
	// Vocab, Hidden, Layers, Intermediate, MaxPositions, TypeVocab, Disentangled, ... The list
	// hf/randsnap writes too.
	layout.Layout
	// Heads is num_attention_heads.
	Heads int
	// LayerNormEps is layer_norm_eps (1e-12).
	LayerNormEps float64
	// HiddenAct is hidden_act: "gelu" (erf), "gelu_new" or "gelu_pytorch_tanh" (tanh
	// approximation), "relu", "silu"/"swish".
	HiddenAct string
	// HiddenDropout is hidden_dropout_prob (embeddings, block outputs, before the classifier).
	HiddenDropout float64
	// AttentionDropout is attention_probs_dropout_prob.
	AttentionDropout float64
	// InitializerRange is initializer_range: the standard deviation of a new classifier's weights.
	InitializerRange float64
	// PadTokenID is pad_token_id.
	PadTokenID int
	// ModelType is config.json's model_type: "bert", "roberta" or "deberta-v2".
	ModelType string
	// PositionOffset is 0 for BERT (positions 0..T-1) and pad_token_id+1 for RoBERTa, whose
	// position ids are create_position_ids_from_input_ids': PositionOffset + the index of the
	// token among the non-padding tokens, and pad_token_id for padding tokens. The longest input
	// is MaxPositions - PositionOffset tokens.
	PositionOffset int
	// PoolerAct is pooler_hidden_act (DeBERTa's ContextPooler's activation, default "gelu").
	PoolerAct string
	// ConvAct is conv_act (default "tanh"), the activation of DeBERTa's ConvLayer (ConvKernel).
	ConvAct string
}

// MaxTokens is the longest input the model's position embeddings allow: MaxPositions -
// PositionOffset, or 0 (no limit of the model's own) for a DeBERTa without absolute positions.
func (c Config) MaxTokens() int {
	if c.Disentangled && !c.PositionBiasedInput {
		return 0
	}
	return c.MaxPositions - c.PositionOffset
}

// HeadDim is the width of one attention head.
func (c Config) HeadDim() int { return c.Hidden / c.Heads }

var activations = []string{"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu", "swish"}

// ConfigOf reads the architecture of an opened snapshot; another model_type, a position
// embedding other than absolute or inconsistent sizes are one-line errors naming config.json.
func ConfigOf(s *snapshot.Snapshot) (Config, error) {
	path := filepath.Join(s.Dir, snapshot.ConfigFile)
	fail := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	fam, ok := family.Lookup(s.ModelType)
	if !ok || fam.Kind != family.Encoder {
		return fail("model_type %q is not an encoder of this package (supported: %s)", s.ModelType, strings.Join(family.Names(family.Encoder), ", "))
	}
	c := Config{ModelType: s.ModelType, Layout: layout.Layout{Disentangled: fam.Disentangled}}
	var err error
	ints := []struct {
		key string
		dst *int
		def int
	}{
		{"vocab_size", &c.Vocab, fam.VocabSize}, {"hidden_size", &c.Hidden, cmp.Or(fam.HiddenSize, 768)},
		{"num_hidden_layers", &c.Layers, cmp.Or(fam.NumLayers, 12)},
		{"num_attention_heads", &c.Heads, cmp.Or(fam.NumHeads, 12)}, {"intermediate_size", &c.Intermediate, cmp.Or(fam.IntermediateSize, 3072)},
		{"max_position_embeddings", &c.MaxPositions, fam.MaxPositions}, {"type_vocab_size", &c.TypeVocab, fam.TypeVocabSize},
		{"pad_token_id", &c.PadTokenID, fam.PadTokenID},
	}
	for _, k := range ints {
		if *k.dst, err = s.Int(k.key, k.def); err != nil {
			return Config{}, err
		}
		// DeBERTa-v3 has no token types (type_vocab_size 0).
		if *k.dst <= 0 && k.key != "pad_token_id" && !(c.Disentangled && k.key == "type_vocab_size" && *k.dst == 0) {
			return fail("%s = %d, want a positive number", k.key, *k.dst)
		}
		// Far above any published encoder: a hostile config must not size anything.
		if limit := int(1) << 24; *k.dst > limit {
			return fail("%s = %d is beyond any real model (limit %d)", k.key, *k.dst, limit)
		}
	}
	if c.Layers > 1<<12 {
		return fail("num_hidden_layers = %d is beyond any real model (limit %d)", c.Layers, 1<<12)
	}
	if c.PadTokenID < 0 || c.PadTokenID >= c.Vocab {
		return fail("pad_token_id = %d is outside the vocabulary (vocab_size %d)", c.PadTokenID, c.Vocab)
	}
	if fam.OffsetPositions {
		c.PositionOffset = c.PadTokenID + 1
		if c.PositionOffset >= c.MaxPositions {
			return fail("max_position_embeddings = %d leaves no position after pad_token_id = %d", c.MaxPositions, c.PadTokenID)
		}
	}
	layerPrefixes := []string{fam.KeyPrefix + "encoder.layer.", "encoder.layer."}
	if err := s.CheckLayerCount("num_hidden_layers", c.Layers, layerPrefixes...); err != nil {
		return Config{}, err
	}
	if c.Hidden%c.Heads != 0 {
		return fail("hidden_size = %d is not a multiple of num_attention_heads = %d", c.Hidden, c.Heads)
	}
	floats := []struct {
		key string
		dst *float64
		def float64
	}{
		{"layer_norm_eps", &c.LayerNormEps, cmp.Or(fam.LayerNormEps, 1e-12)}, {"hidden_dropout_prob", &c.HiddenDropout, 0.1},
		{"attention_probs_dropout_prob", &c.AttentionDropout, 0.1}, {"initializer_range", &c.InitializerRange, 0.02},
	}
	for _, f := range floats {
		if *f.dst, err = s.Float(f.key, f.def); err != nil {
			return Config{}, err
		}
		if *f.dst < 0 || (*f.dst == 0 && f.key == "layer_norm_eps") {
			return fail("%s = %g, want a number >= 0 (layer_norm_eps > 0)", f.key, *f.dst)
		}
	}
	if c.HiddenAct, err = s.String("hidden_act", "gelu"); err != nil {
		return Config{}, err
	}
	if !slices.Contains(activations, c.HiddenAct) {
		return fail("hidden_act %q is not supported (supported: %v)", c.HiddenAct, activations)
	}
	pos, err := s.String("position_embedding_type", "absolute")
	if err != nil {
		return Config{}, err
	}
	if pos != "absolute" {
		return fail("position_embedding_type %q is not supported (only absolute)", pos)
	}
	if dec, err := s.Bool("is_decoder", false); err != nil {
		return Config{}, err
	} else if dec {
		return fail("is_decoder is true: a BERT decoder is not supported (only the encoder)")
	}
	if c.Disentangled {
		return disentangledConfig(s, c, fail)
	}
	return c, nil
}

// disentangledConfig reads DeBERTa-v2's keys with DebertaV2Config's defaults (and the getattr
// defaults of modeling_deberta_v2.py for the keys the configuration class does not declare).
func disentangledConfig(s *snapshot.Snapshot, c Config, fail func(string, ...any) (Config, error)) (Config, error) {
	var err error
	c.EmbeddingSize, err = s.Int("embedding_size", c.Hidden)
	if err != nil {
		return Config{}, err
	}
	if c.EmbeddingSize <= 0 || c.EmbeddingSize > 1<<24 {
		return fail("embedding_size = %d, want a positive number", c.EmbeddingSize)
	}
	if c.PositionBiasedInput, err = s.Bool("position_biased_input", true); err != nil {
		return Config{}, err
	}
	if c.RelativeAttention, err = s.Bool("relative_attention", false); err != nil {
		return Config{}, err
	}
	if c.MaxRelativePositions, err = s.Int("max_relative_positions", -1); err != nil {
		return Config{}, err
	}
	if c.MaxRelativePositions < 1 {
		c.MaxRelativePositions = c.MaxPositions
	}
	if c.PositionBuckets, err = s.Int("position_buckets", -1); err != nil {
		return Config{}, err
	}
	c.PositionBuckets = max(c.PositionBuckets, 0)
	if c.MaxRelativePositions > 1<<16 || c.PositionBuckets > 1<<16 {
		return fail("max_relative_positions = %d, position_buckets = %d: beyond any real model (limit %d)", c.MaxRelativePositions, c.PositionBuckets, 1<<16)
	}
	if c.RelativeAttention && c.PositionBuckets > 0 && (c.PositionBuckets < 4 || c.MaxRelativePositions-1 <= c.PositionBuckets/2) {
		// make_log_bucket_position divides by log((max_relative_positions - 1) / (position_buckets / 2)).
		return fail("position_buckets = %d with max_relative_positions = %d: want 4 <= buckets and buckets / 2 < max_relative_positions - 1", c.PositionBuckets, c.MaxRelativePositions)
	}
	types, err := posAttTypes(s.Config["pos_att_type"], fail)
	if err != nil {
		return Config{}, err
	}
	c.C2P, c.P2C = slices.Contains(types, "c2p"), slices.Contains(types, "p2c")
	if c.ShareAttKey, err = s.Bool("share_att_key", false); err != nil {
		return Config{}, err
	}
	norm, err := s.String("norm_rel_ebd", "none")
	if err != nil {
		return Config{}, err
	}
	for _, n := range strings.Split(strings.ToLower(norm), "|") {
		if strings.TrimSpace(n) == "layer_norm" {
			c.NormRelEmbed = true
		}
	}
	if c, err = convConfig(s, c, fail); err != nil {
		return Config{}, err
	}
	if hd, err := s.Int("attention_head_size", c.HeadDim()); err != nil {
		return Config{}, err
	} else if hd != c.HeadDim() {
		return fail("attention_head_size = %d differs from hidden_size / num_attention_heads = %d: not supported", hd, c.HeadDim())
	}
	if ph, err := s.Int("pooler_hidden_size", c.Hidden); err != nil {
		return Config{}, err
	} else if ph != c.Hidden {
		return fail("pooler_hidden_size = %d differs from hidden_size = %d: not supported", ph, c.Hidden)
	}
	if c.PoolerAct, err = s.String("pooler_hidden_act", "gelu"); err != nil {
		return Config{}, err
	}
	if !slices.Contains(activations, c.PoolerAct) && c.PoolerAct != "tanh" {
		return fail("pooler_hidden_act %q is not supported (supported: %v, tanh)", c.PoolerAct, activations)
	}
	return c, nil
}

// posAttTypes reads pos_att_type: a list, or the "p2c|c2p" string of older configs
// (DebertaV2Config lower-cases and splits it); null is none.
func posAttTypes(raw any, fail func(string, ...any) (Config, error)) ([]string, error) {
	var types []string
	switch v := raw.(type) {
	case nil:
	case string:
		for _, t := range strings.Split(strings.ToLower(v), "|") {
			types = append(types, strings.TrimSpace(t))
		}
	case []any:
		for _, t := range v {
			str, ok := t.(string)
			if !ok {
				_, err := fail("pos_att_type = %v, want a list of strings", v)
				return nil, err
			}
			types = append(types, str)
		}
	default:
		_, err := fail("pos_att_type = %v, want a list such as [\"p2c\", \"c2p\"] or a string \"p2c|c2p\"", v)
		return nil, err
	}
	return types, nil
}

// convConfig reads v2-xlarge's ConvLayer keys (conv_kernel_size 0 or less: none).
func convConfig(s *snapshot.Snapshot, c Config, fail func(string, ...any) (Config, error)) (Config, error) {
	var err error
	if c.ConvKernel, err = s.Int("conv_kernel_size", 0); err != nil {
		return Config{}, err
	}
	if c.ConvKernel <= 0 {
		return c, nil
	}
	// ConvLayer pads (k - 1) / 2 on each side: only an odd kernel keeps the length, and
	// transformers' masked_fill fails on any other.
	if c.ConvKernel%2 == 0 || c.ConvKernel > 63 {
		return fail("conv_kernel_size = %d: want an odd size (at most 63)", c.ConvKernel)
	}
	if groups, err := s.Int("conv_groups", 1); err != nil {
		return Config{}, err
	} else if groups != 1 {
		return fail("conv_groups = %d: only 1 is supported", groups)
	}
	if c.ConvAct, err = s.String("conv_act", "tanh"); err != nil {
		return Config{}, err
	}
	if !slices.Contains(activations, c.ConvAct) && c.ConvAct != "tanh" {
		return fail("conv_act %q is not supported (supported: %v, tanh)", c.ConvAct, activations)
	}
	return c, nil
}
