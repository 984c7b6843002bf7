package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/hf/family"
)

// LoRA configures the low-rank adapters trained on a pretrained model (tracker.lora, summarizer.lora):
// each targeted linear layer W (out x in) becomes W + scale * B @ A with A (rank x in) and B
// (out x rank) trainable in float32 and W frozen. The keys are PEFT's LoraConfig fields, so the
// adapter files tracksum writes (hf/peft) load in PEFT unchanged.
type LoRA struct {
	// Rank r of A and B; 0 = full fine-tuning (every base weight trainable, no adapters).
	Rank int `mapstructure:"rank" yaml:"rank" json:"rank"`
	// Alpha scales the update: scale = alpha / rank, or alpha / sqrt(rank) with rslora.
	Alpha float64 `mapstructure:"alpha" yaml:"alpha" json:"alpha"`
	// RSLoRA uses the rank-stabilised scale alpha / sqrt(rank) (PEFT's use_rslora; the paper's recipe).
	RSLoRA bool `mapstructure:"rslora" yaml:"rslora" json:"rslora"`
	// Dropout is applied to the adapter's input during training only (PEFT's lora_dropout).
	Dropout float64 `mapstructure:"dropout" yaml:"dropout" json:"dropout"`
	// TargetModules names the linear layers that get adapters, by the module names of the Hugging
	// Face model (PEFT's target_modules): [all-linear] (LoRAAllLinear, the default: every linear
	// layer of the family, Resolve), or a list of a family's names (hf/family). The Llama names
	// also select a fine-tuned encoder's corresponding layers (hf/family's TargetAliases).
	TargetModules []string `mapstructure:"target_modules" yaml:"target_modules" json:"target_modules"`
	// InitSeed draws the adapters' initial A matrices (and a classification head's weights) from
	// its own stream, as the released scripts' get_peft_model(random_state=32) does; 0 = the
	// run's seed. Only the initialisation: batch order and dropout still follow seed.
	InitSeed int64 `mapstructure:"init_seed" yaml:"init_seed" json:"init_seed,omitempty"`
}

// Seed returns the seed the adapters are initialised from: InitSeed when set, else runSeed.
func (c LoRA) Seed(runSeed int64) int64 {
	if c.InitSeed != 0 {
		return c.InitSeed
	}
	return runSeed
}

// loraJSON is LoRA without its methods, for UnmarshalJSON's default decoding.
type loraJSON LoRA

// UnmarshalJSON reads LoRA's JSON form (a checkpoint's pretrained.json), whose keys are those of
// the config (rank, alpha, rslora, dropout, target_modules), and the form written before LoRA had
// json tags, whose keys were the Go field names (Rank, Alpha, RSLoRA, Dropout, TargetModules):
// checkpoints trained then still load and resume. Any other key is an error, as in the rest of
// the file.
func (l *LoRA) UnmarshalJSON(b []byte) error {
	var v struct {
		loraJSON
		// The old key; the others match their new ones already (JSON keys match fields
		// case-insensitively).
		OldTargetModules []string `json:"TargetModules"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	*l = LoRA(v.loraJSON)
	if l.TargetModules == nil {
		l.TargetModules = v.OldTargetModules
	}
	return nil
}

// LoRATargetsLlama lists the linear layers of a Llama-style decoder layer (hf/family's llama, and
// every family that kept its module names), under their Hugging Face module names: the paper's
// recipe (configs/paper.yaml lists them), and what the default all-linear resolves to there.
var LoRATargetsLlama = familyTargets("llama")

func familyTargets(modelType string) []string {
	f, ok := family.Lookup(modelType)
	if !ok {
		panic("config: family " + modelType + " is not registered")
	}
	return f.LoRATargets
}

// LoRAAllLinear is PEFT's target_modules shorthand (INCLUDE_LINEAR_LAYERS_SHORTHAND) for every
// linear layer but the output layer: Resolve turns it into the family's module names.
const LoRAAllLinear = "all-linear"

// DefaultLoRA returns the paper's adapters: rank 16, alpha 16, rsLoRA, no dropout, on every
// linear layer of each decoder layer (all-linear: Llama's seven projections, Phi-3's four fused
// ones), so that the default fits every family.
func DefaultLoRA() LoRA {
	return LoRA{Rank: 16, Alpha: 16, RSLoRA: true, Dropout: 0, TargetModules: []string{LoRAAllLinear}}
}

// AllLinear reports whether the targets are PEFT's all-linear (matched case-insensitively, as
// PEFT matches it).
func (c LoRA) AllLinear() bool {
	return len(c.TargetModules) == 1 && strings.EqualFold(c.TargetModules[0], LoRAAllLinear)
}

// Resolve returns c for a model of modelType with all-linear replaced by the module names it
// selects there (hf/family's AllLinearTargets): what the loaders adapt, and what PEFT records in
// adapter_config.json's target_modules for a real model (it condenses the resolved module paths
// to these names once they are 20 or more). An explicit list is returned unchanged (the loaders
// check it against the family); an unknown model_type is an error.
func (c LoRA) Resolve(modelType string) (LoRA, error) {
	if !c.AllLinear() {
		return c, nil
	}
	f, ok := family.Lookup(modelType)
	if !ok {
		return LoRA{}, fmt.Errorf("lora target_modules %s: model_type %q is not a family of hf/family (supported: %s)",
			LoRAAllLinear, modelType, strings.Join(family.Names(""), ", "))
	}
	c.TargetModules = f.AllLinearTargets()
	return c, nil
}

// Scale is the factor of B @ A in the adapted weight: alpha/rank, or alpha/sqrt(rank) with rsLoRA
// (0 when rank is 0: no adapters).
func (c LoRA) Scale() float64 {
	if c.Rank <= 0 {
		return 0
	}
	if c.RSLoRA {
		return c.Alpha / math.Sqrt(float64(c.Rank))
	}
	return c.Alpha / float64(c.Rank)
}

// Validate reports invalid adapter settings; section prefixes the keys (e.g. "tracker.lora").
func (c LoRA) Validate(section string) error {
	var errs []error
	bad := func(key, msg string) { errs = append(errs, fmt.Errorf("%s.%s: %s", section, key, msg)) }
	if c.Rank < 0 {
		bad("rank", fmt.Sprintf("must be >= 0 (0 = full fine-tuning), got %d", c.Rank))
	}
	if c.Alpha <= 0 {
		bad("alpha", fmt.Sprintf("must be > 0, got %g", c.Alpha))
	}
	if c.Dropout < 0 || c.Dropout >= 1 {
		bad("dropout", fmt.Sprintf("must be in [0, 1), got %g", c.Dropout))
	}
	if c.Rank > 0 && len(c.TargetModules) == 0 {
		bad("target_modules", "must name at least one layer when rank > 0")
	}
	if c.AllLinear() {
		return errors.Join(errs...)
	}
	seen := map[string]bool{}
	for _, m := range c.TargetModules {
		switch {
		case strings.EqualFold(m, LoRAAllLinear):
			bad("target_modules", fmt.Sprintf("%s stands alone (every linear layer), not in a list with other names", LoRAAllLinear))
		case !slices.Contains(family.LoRATargets(""), m):
			bad("target_modules", fmt.Sprintf("unknown layer %q (%s; decoders: %s; encoders: %s)", m, LoRAAllLinear,
				strings.Join(family.LoRATargets(family.CausalLM), ", "), strings.Join(family.LoRATargets(family.Encoder), ", ")))
		case seen[m]:
			bad("target_modules", fmt.Sprintf("%q is listed twice", m))
		}
		seen[m] = true
	}
	return errors.Join(errs...)
}

// Tracker heads on a pretrained model (tracker.head).
const (
	// HeadAuto picks encoder_cls for an encoder snapshot (bert) and lm_cls for a causal LM.
	HeadAuto = "auto"
	// HeadEncoderCLS is a classification head on the [CLS] state of a BERT-family encoder over
	// "[CLS] aspect description [SEP] sentence [SEP]".
	HeadEncoderCLS = "encoder_cls"
	// HeadLMCLS is a classification head on the last token's hidden state of a causal LM over the
	// paper's chat prompt (the paper's text, C.2).
	HeadLMCLS = "lm_cls"
	// HeadGenerative is the released script's way: the LM is trained on the answer
	// "Relevance:Yes." / "Relevance:No." and the score is P(Yes) renormalised over {Yes, No} at the
	// answer position.
	HeadGenerative = "generative"
)

// TrackerHeads lists the accepted values of tracker.head.
var TrackerHeads = []string{HeadAuto, HeadEncoderCLS, HeadLMCLS, HeadGenerative}

// ResolveHead returns the tracker head to build on a snapshot of the given model_type: auto
// resolved, and a head that does not fit the model (encoder_cls on a causal LM, lm_cls or
// generative on an encoder) refused with an error naming the key. The encoders are hf/family's;
// one that hf/encoder does not fine-tune (an nli judge's RoBERTa or DeBERTa-v2) is refused.
func (c Tracker) ResolveHead(modelType string) (string, error) {
	encoder := family.IsEncoder(modelType)
	trained := strings.Join(family.FineTunedEncoders(), ", ")
	switch {
	case encoder && !slices.Contains(family.FineTunedEncoders(), modelType):
		return "", fmt.Errorf("tracker.pretrained: model_type %q is an encoder the tracker does not fine-tune (encoder_cls trains on model_type %s)",
			modelType, trained)
	case c.Head == HeadAuto && encoder:
		return HeadEncoderCLS, nil
	case c.Head == HeadAuto:
		return HeadLMCLS, nil
	case c.Head == HeadEncoderCLS && !encoder:
		return "", fmt.Errorf("tracker.head: encoder_cls needs an encoder (model_type %s), got a causal LM (model_type %q); use lm_cls or generative",
			trained, modelType)
	case c.Head != HeadEncoderCLS && encoder:
		return "", fmt.Errorf("tracker.head: %s needs a causal LM, got an encoder (model_type %q); use encoder_cls", c.Head, modelType)
	}
	return c.Head, nil
}

// ChatTemplateSnapshot is TASK.chat_template's default: the snapshot's own template.
const ChatTemplateSnapshot = "snapshot"

// ChatTemplateNames lists the named templates of TASK.chat_template (hf/chattemplate's Names;
// listed here because config sits below hf/chattemplate).
var ChatTemplateNames = []string{"llama-3"}
