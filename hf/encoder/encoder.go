// Package encoder is the BERT-family encoder of pretrained Hugging Face checkpoints — model_type
// bert (BERT, PubMedBERT, BioBERT) and roberta (RoBERTa, e.g. RoBERTa-large-MNLI) — as a GoMLX
// graph, with optional LoRA adapters on its linear layers and the pooled [CLS] vector a
// classification head reads.
//
// RoBERTa is the same graph with three differences, each a field of Config read from config.json
// (never a test of the model's name in the graph): positions start after the padding id and skip
// padding (PositionOffset, transformers' create_position_ids_from_input_ids), one token type
// (type_vocab_size 1: the segment ids are ignored), and RobertaClassificationHead (dense, tanh,
// out_proj over the <s> token, no pooler) when the snapshot carries it (see Classify).
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
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/decoder"
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
// the config's default (q_proj ...) select BERT's layers of the same role through
// config.LoRATargetsBERTAlias (gate_proj selects nothing). nil means DefaultTargets.
type LoRA = decoder.LoRA

// DefaultTargets are all of BERT's linear layers (the paper's "all projections" for an encoder).
// As in PEFT, "dense" matches every Linear named dense: attention.output.dense,
// intermediate.dense, output.dense and pooler.dense.
var DefaultTargets = []string{"query", "key", "value", "dense"}

// bertTargets are the target names this package accepts besides the Llama aliases: the BERT
// family's (hf/family; RoBERTa's are the same layers).
var bertTargets = bertFamilyTargets()

func bertFamilyTargets() []string {
	f, _ := family.Lookup("bert")
	return f.LoRATargets
}

// resolveTargets returns the BERT target names of l (aliases mapped, gate_proj dropped), or an
// error naming an unknown one.
func resolveTargets(l LoRA) ([]string, error) {
	if l.TargetModules == nil {
		return DefaultTargets, nil
	}
	var out []string
	for _, t := range l.TargetModules {
		switch alias, ok := config.LoRATargetsBERTAlias[t]; {
		case ok:
			out = append(out, alias)
		case t == "gate_proj": // BERT's feed-forward block has no gate
		case slices.Contains(bertTargets, t):
			out = append(out, t)
		default:
			return nil, fmt.Errorf("lora target module %q is not a BERT linear layer (BERT: %s; or the Llama names %s)",
				t, strings.Join(bertTargets, ", "), strings.Join(config.LoRATargetsLlama, ", "))
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
	// Vocab is vocab_size.
	Vocab int
	// Hidden is hidden_size.
	Hidden int
	// Layers is num_hidden_layers.
	Layers int
	// Heads is num_attention_heads.
	Heads int
	// Intermediate is intermediate_size.
	Intermediate int
	// MaxPositions is max_position_embeddings: the longest input.
	MaxPositions int
	// TypeVocab is type_vocab_size (2: segments A and B).
	TypeVocab int
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
	// ModelType is config.json's model_type: "bert" or "roberta".
	ModelType string
	// PositionOffset is 0 for BERT (positions 0..T-1) and pad_token_id+1 for RoBERTa, whose
	// position ids are create_position_ids_from_input_ids': PositionOffset + the index of the
	// token among the non-padding tokens, and pad_token_id for padding tokens. The longest input
	// is MaxPositions - PositionOffset tokens.
	PositionOffset int
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
	c := Config{ModelType: s.ModelType}
	var err error
	ints := []struct {
		key string
		dst *int
		def int
	}{
		{"vocab_size", &c.Vocab, fam.VocabSize}, {"hidden_size", &c.Hidden, 768}, {"num_hidden_layers", &c.Layers, 12},
		{"num_attention_heads", &c.Heads, 12}, {"intermediate_size", &c.Intermediate, 3072},
		{"max_position_embeddings", &c.MaxPositions, fam.MaxPositions}, {"type_vocab_size", &c.TypeVocab, fam.TypeVocabSize},
		{"pad_token_id", &c.PadTokenID, fam.PadTokenID},
	}
	for _, k := range ints {
		if *k.dst, err = s.Int(k.key, k.def); err != nil {
			return Config{}, err
		}
		if *k.dst <= 0 && k.key != "pad_token_id" {
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
		{"layer_norm_eps", &c.LayerNormEps, 1e-12}, {"hidden_dropout_prob", &c.HiddenDropout, 0.1},
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
	return c, nil
}
