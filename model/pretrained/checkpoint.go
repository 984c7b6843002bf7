package pretrained

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/chattemplate"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/tensorio"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/model/variant"
)

// A checkpoint of a fine-tuned pretrained model is a training checkpoint directory
// (model/checkpoint: config.yaml, metrics.jsonl, best/, state/, report.json) with:
//
//	pretrained.json                        Meta: task, head, prompts' settings (variant), adapters, decoding
//	base.json                              the base snapshot's directory and weights' SHA-256 (hf/peft)
//	tokenizer.json, tokenizer_config.json  copies of the base's (tokens and chat template)
//	best/model.safetensors                 the trained variables only: adapters + head (LoRA), or
//	                                       every weight (lora.rank 0)
//	adapter/                               the same adapters in PEFT's layout (lora.rank > 0)
//	full/model.safetensors                 every weight under its Hugging Face key (lora.rank 0)
//
// The base's weights are never copied: they are read from base.json's directory, and a base
// whose weights changed is refused.

// ErrCheckpoint marks a pretrained checkpoint that is missing, incomplete or incompatible.
// It wraps checkpoint.ErrCheckpoint, the one sentinel of every kind of checkpoint.
var ErrCheckpoint = fmt.Errorf("pretrained %w", checkpoint.ErrCheckpoint)

// Meta is pretrained.json: what infer needs besides the base and the variables.
type Meta struct {
	// Task is the task it was trained for: dataset.TaskTracker or dataset.TaskSummarizer.
	Task string `json:"task"`
	// Head is the tracker's head (config.HeadLMCLS or config.HeadGenerative).
	Head string `json:"head,omitempty"`
	// ModelType is the base's config.json model_type.
	ModelType string `json:"model_type"`
	// AspectSet names the aspects of the prepared data (their names enter the prompts).
	AspectSet string `json:"aspect_set"`
	// MaxSeqLen caps a prompt with its answer, in tokens.
	MaxSeqLen int `json:"max_seq_len"`
	// LoRA are the adapters' settings (rank 0: full fine-tuning).
	LoRA config.LoRA `json:"lora"`
	// Seed drew the adapters' and the head's initial values.
	Seed int64 `json:"seed"`
	// Precision is the compute precision the model was trained in (train.precision resolved on
	// the training backend): "bf16", or empty for float32. Inference computes in it unless told
	// otherwise (infer --precision).
	Precision string `json:"precision,omitempty"`
	// Quantization is train.quantization when not none: "nf4" (QLoRA), the frozen base's
	// projections held as NF4 codes in training, and so in inference (the adapters were trained
	// on the quantized weights).
	Quantization string `json:"quantization,omitempty"`
	// YesNo locates the generative tracker's answer token.
	YesNo *yesNo `json:"yes_no,omitempty"`
	// FullContext: the summarizer reads the whole abstract too (TTS (+) f).
	FullContext bool `json:"full_context,omitempty"`
	// ChatTemplate is TASK.chat_template when the model was trained with another template than
	// its base's (a name of hf/chattemplate, or a file); the checkpoint's tokenizer_config.json
	// holds that template, which inference renders. Empty: the base's own.
	ChatTemplate string `json:"chat_template,omitempty"`
	// Generation holds the summarizer's decoding defaults.
	Generation *GenOptions `json:"generation,omitempty"`
	// Variant is the Table 6 method the model is a part of, which sets its prompts: "" for
	// Track-then-Sum; variant.SumThenTrack for its summarizer of the whole abstract or its pair
	// tracker; variant.EndToEnd for the model writing summary and citations. A model is only ever
	// loaded for its own method (a SUM-THEN-TRACK summarizer is never run as END-TO-END or as a
	// Track-then-Sum summarizer).
	Variant string `json:"variant,omitempty"`
	// PromptStyle is summarizer.prompt_style when not tracksum: "paper" (Tables 16-19 as printed).
	PromptStyle string `json:"prompt_style,omitempty"`
}

// kindName names the model of task and variant v: "tracker", "sum_then_track summarizer",
// "end_to_end", ...
func kindName(task, v string) string {
	switch v {
	case variant.SumThenTrack:
		return v + " " + task
	case variant.EndToEnd:
		return v
	}
	return task
}

// runHint says how tracksum-infer runs a model of task and variant v.
func runHint(task, v string) string {
	switch v {
	case variant.SumThenTrack:
		return "tracksum-infer --method stt runs the sum_then_track directory holding it"
	case variant.EndToEnd:
		return "tracksum-infer --method ete --model runs it"
	}
	return "tracksum-infer --" + task + " runs it"
}

// IsCheckpoint reports whether dir holds a pretrained checkpoint (its checkpoint.PretrainedFile).
func IsCheckpoint(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, checkpoint.PretrainedFile))
	return err == nil && st.Mode().IsRegular()
}

// readMeta reads the pretrained.json of the checkpoint dir through r (an opened manifest: the
// bytes Open verified; checkpoint.DirFiles: the file as it is).
func readMeta(r checkpoint.Reader, dir string) (*Meta, error) {
	var m Meta
	path := filepath.Join(dir, checkpoint.PretrainedFile)
	if err := atomicio.ReadJSONFrom(r, dir, checkpoint.PretrainedFile, &m, true); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if m.Task != dataset.TaskTracker && m.Task != dataset.TaskSummarizer {
		return nil, fmt.Errorf("%w: %s: task %q, want %s or %s", ErrCheckpoint, path, m.Task, dataset.TaskTracker, dataset.TaskSummarizer)
	}
	switch {
	case m.Variant != "" && m.Variant != variant.SumThenTrack && m.Variant != variant.EndToEnd:
		return nil, fmt.Errorf("%w: %s: variant %q, want none, %s or %s", ErrCheckpoint, path, m.Variant, variant.SumThenTrack, variant.EndToEnd)
	case m.Variant == variant.EndToEnd && m.Task != dataset.TaskSummarizer:
		return nil, fmt.Errorf("%w: %s: an end_to_end model is a %s, not a %s", ErrCheckpoint, path, dataset.TaskSummarizer, m.Task)
	case m.Quantization != "" && m.Quantization != config.QuantizationNF4:
		// Loaded as none, the adapters would run on weights other than those they were trained on.
		return nil, fmt.Errorf("%w: %s: quantization %q, want %s or none (absent)", ErrCheckpoint, path, m.Quantization, config.QuantizationNF4)
	}
	return &m, nil
}

// prepareDir checks that outDir (locked) can receive this run: empty, or a checkpoint of the same
// task trained with the same metadata on the same base (its weights' digest) and config (else
// training.CheckConfig's refusal). It writes the metadata, base.json, the tokenizer copies and
// config.yaml.
func prepareDir(ctx context.Context, outDir string, meta *Meta, snap *snapshot.Snapshot, cfg *config.Config, template string, allowChanged bool, log interface{ Write([]byte) (int, error) }) error {
	if _, err := os.Stat(filepath.Join(outDir, checkpoint.PretrainedFile)); err == nil {
		old, err := readMeta(checkpoint.DirFiles(outDir), outDir)
		if err != nil {
			return err
		}
		if old.Task != meta.Task || old.Variant != meta.Variant {
			return fmt.Errorf("%w: %s holds a pretrained %s checkpoint, not a %s one; use another --out", training.ErrResume, outDir,
				kindName(old.Task, old.Variant), kindName(meta.Task, meta.Variant))
		}
		if err := training.CheckConfig(outDir, checkpoint.ConfigFile, cfg, meta.Task, allowChanged, log); err != nil {
			return err
		}
		if old.Quantization != meta.Quantization {
			// The adapters were trained on the base as it was held: continuing them on a base
			// quantized otherwise would mix two models in one run.
			return fmt.Errorf("%w: %s was trained on a base held as %s, this run's is %s (%s.train.quantization, --quantize); rerun with --quantize %s or use another --out",
				training.ErrResume, outDir, quantName(old.Quantization), quantName(meta.Quantization), meta.Task, quantName(old.Quantization))
		}
		if !reflect.DeepEqual(old, meta) {
			return fmt.Errorf("%w: %s was trained with other settings (%s differs); use another --out or delete it", ErrCheckpoint, outDir, checkpoint.PretrainedFile)
		}
		if _, err := os.Stat(filepath.Join(outDir, peft.BaseFile)); err == nil {
			if _, _, err := peft.OpenBase(ctx, outDir, checkpoint.DirFiles(outDir), snap.Dir); err != nil {
				if ctx.Err() != nil {
					return err // interrupted while hashing the base: not a fault of the checkpoint
				}
				return fmt.Errorf("%w: %w", ErrCheckpoint, err)
			}
		} else if _, err := peft.WriteBaseRef(ctx, outDir, snap); err != nil {
			return err
		}
	} else if _, err := peft.WriteBaseRef(ctx, outDir, snap); err != nil {
		return err
	}
	tok, err := atomicio.ReadFileMax(filepath.Join(snap.Dir, snapshot.TokenizerFile), atomicio.MaxTokenizerJSONBytes)
	if err != nil {
		return err
	}
	tcfg, err := atomicio.ReadFileMax(filepath.Join(snap.Dir, snapshot.TokenizerConfigFile), atomicio.MaxJSONBytes)
	if err != nil {
		return err
	}
	if template != "" {
		// The template trained with replaces the base's in the copy inference reads.
		if tcfg, err = chattemplate.WithTemplate(filepath.Join(snap.Dir, snapshot.TokenizerConfigFile), tcfg, template); err != nil {
			return err
		}
	}
	if err := atomicio.WriteFile(filepath.Join(outDir, snapshot.TokenizerConfigFile), tcfg, 0o644); err != nil {
		return err
	}
	return checkpoint.Write(outDir, checkpoint.Files{MetaFile: checkpoint.PretrainedFile, Meta: meta, Tokenizer: tok, Config: cfg})
}

// identity is what the checkpoint of m states when it is sealed (checkpoint.Seal): the pretrained
// backbone (a causal LM or, with the encoder_cls head, an encoder; the base's model type, the head
// and how the base was held), the base snapshot's identity, and the settings inference needs (the
// aspect set, a tracker's threshold: the tracker.threshold it was trained with, a summarizer's
// decoding).
// identityIn is identity with the base that prepareDir recorded (or checked) in dir.
func (m *Meta) identityIn(dir string, threshold float64) (checkpoint.Identity, error) {
	base, err := peft.ReadBaseRef(dir, checkpoint.DirFiles(dir))
	if err != nil {
		return checkpoint.Identity{}, err
	}
	return m.identity(base, threshold), nil
}

func (m *Meta) identity(base peft.BaseRef, threshold float64) checkpoint.Identity {
	b := checkpoint.Backbone{Type: checkpoint.BackboneCausalLM, Architecture: m.ModelType, Head: m.Head, Quantization: m.Quantization}
	if m.Head == config.HeadEncoderCLS {
		b.Type = checkpoint.BackboneEncoder
	}
	ref := checkpoint.Base(base)
	id := checkpoint.Identity{Kind: m.Task, Task: m.Task, Backbone: b, Base: &ref, Settings: checkpoint.Settings{AspectSet: m.AspectSet}}
	if m.Task == dataset.TaskTracker {
		id.Settings.Threshold = threshold
	}
	if g := m.Generation; g != nil {
		id.Settings.Decoding = &checkpoint.Decoding{BeamSize: g.BeamSize, MaxLen: g.MaxNewTokens, LengthPenalty: g.LengthPenalty,
			NoRepeatNgram: g.NoRepeatNgram, Temperature: g.Temperature}
	}
	return id
}

// quantName is train.quantization's value for Meta.Quantization q ("" is none).
func quantName(q string) string {
	if q == "" {
		return config.QuantizationNone
	}
	return q
}

// writeInterop writes a model's trained variables (the best ones, loaded in its store) in
// Hugging Face's layouts: with l.Rank 0, full/model.safetensors with the head and every base
// weight under their Hugging Face keys; else PEFT's adapter directory (task its task type) with
// the adapters under their PEFT keys and the head as modules_to_save (modules). head and base are
// keyed by Hugging Face key, adapters by PEFT key.
func writeInterop(outDir, snapDir, task string, l config.LoRA, modules []string, head, base, adapters map[string]*gomlxmodel.Variable) error {
	values := func(vars map[string]*gomlxmodel.Variable, prefix string, into map[string]*tensors.Tensor) error {
		for key, v := range vars {
			t, err := v.Value()
			if err != nil {
				return fmt.Errorf("checkpoint %s: variable %s: %w", outDir, v.Path(), err)
			}
			into[prefix+key] = t
		}
		return nil
	}
	saved := map[string]*tensors.Tensor{}
	if l.Rank == 0 {
		if err := values(head, "", saved); err != nil {
			return err
		}
		if err := values(base, "", saved); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(outDir, peft.FullDir), 0o755); err != nil {
			return err
		}
		// Every weight under its Hugging Face key: a file transformers loads as the model's
		// weights (issue 23 item 8), so with the "format": "pt" it checks, as PEFT's adapter files.
		return tensorio.WriteTensorsWith(filepath.Join(outDir, peft.FullDir, peft.FullWeights), saved, map[string]string{"format": "pt"})
	}
	if err := values(head, peft.Prefix, saved); err != nil {
		return err
	}
	if err := values(adapters, "", saved); err != nil {
		return err
	}
	dir, err := filepath.Abs(snapDir)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", snapDir, err)
	}
	a := &peft.Adapter{Config: peft.NewConfig(l, task, dir, modules), Tensors: saved}
	return peft.Write(filepath.Join(outDir, peft.AdapterDir), a)
}
