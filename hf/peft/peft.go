// Package peft reads and writes LoRA adapters in Hugging Face PEFT's file layout, and merges them
// into base weights, so that what tracksum trains loads in PEFT (PeftModel.from_pretrained) and what
// PEFT trains loads here.
//
// An adapter directory holds two files:
//
//	adapter_config.json        PEFT's LoraConfig (peft_type "LORA", r, lora_alpha, use_rslora, ...)
//	adapter_model.safetensors  float32 tensors under PEFT's key names:
//	                           base_model.model.<module>.lora_A.weight  [r, in]
//	                           base_model.model.<module>.lora_B.weight  [out, r]
//	                           base_model.model.<key>                   full tensors of modules_to_save (a head)
//
// where <module> is the base model's key of the adapted linear layer without ".weight"
// (model.layers.0.self_attn.q_proj for Llama, encoder.layer.0.attention.self.query for BERT). The
// adapted layer computes x W^T + scale * x A^T B^T, i.e. its weight is W + scale * B @ A with
// scale = lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora (Merge).
//
// A tracksum checkpoint of a pretrained model (base.go) holds such a directory next to base.json,
// which names the base snapshot and its weights' SHA-256.
//
// # Example
//
//	a := &peft.Adapter{Config: peft.NewConfig(cfg.Tracker.LoRA, peft.TaskCausalLM, snap.Dir, nil), Tensors: loraTensors}
//	err := peft.Write(filepath.Join(ck, peft.AdapterDir), a)
//	back, err := peft.Read(filepath.Join(ck, peft.AdapterDir))
//	merged, err := peft.Merge(baseTensors, back)
package peft

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/tensorio"
)

// File names of an adapter directory, as PEFT's save_pretrained writes them.
const (
	ConfigFile  = "adapter_config.json"
	WeightsFile = "adapter_model.safetensors"
)

// Prefix is what PEFT puts before a base model's key in adapter_model.safetensors (PeftModel's
// base_model, a LoraModel, whose model is the wrapped transformers model).
const Prefix = "base_model.model."

// Suffixes of the two LoRA matrices of a module in adapter_model.safetensors.
const (
	SuffixA = ".lora_A.weight"
	SuffixB = ".lora_B.weight"
)

// PEFT task types (task_type): they decide which Auto class a PEFT user loads the base with.
const (
	// TaskCausalLM: the summarizer and the generative tracker (AutoModelForCausalLM).
	TaskCausalLM = "CAUSAL_LM"
	// TaskSeqCls: a tracker with a classification head (AutoModelForSequenceClassification), the
	// head's tensors in modules_to_save.
	TaskSeqCls = "SEQ_CLS"
	// TaskFeatureExtraction: adapters on a bare encoder (AutoModel) without a head.
	TaskFeatureExtraction = "FEATURE_EXTRACTION"
)

// TaskTypes lists the task types this package writes and reads.
var TaskTypes = []string{TaskCausalLM, TaskSeqCls, TaskFeatureExtraction}

// Config is adapter_config.json: the fields of PEFT's LoraConfig that describe a plain LoRA. PEFT
// fills the fields it has and that are absent here with its defaults; Read ignores the other
// fields PEFT writes, and refuses the ones that would change the math (per-module ranks, DoRA, ...).
type Config struct {
	PEFTType            string   `json:"peft_type"`
	TaskType            string   `json:"task_type"`
	R                   int      `json:"r"`
	LoRAAlpha           float64  `json:"lora_alpha"`
	LoRADropout         float64  `json:"lora_dropout"`
	UseRSLoRA           bool     `json:"use_rslora"`
	TargetModules       []string `json:"target_modules"`
	Bias                string   `json:"bias"`
	BaseModelNameOrPath string   `json:"base_model_name_or_path"`
	FanInFanOut         bool     `json:"fan_in_fan_out"`
	// ModulesToSave names modules trained in full and saved with the adapter (a classification
	// head: "score" for a causal LM, "classifier" for BERT); nil (JSON null) when none.
	ModulesToSave []string `json:"modules_to_save"`
	InferenceMode bool     `json:"inference_mode"`
	// InitLoRAWeights is PEFT's init_lora_weights (true: A kaiming-uniform, B zero), informational.
	InitLoRAWeights bool `json:"init_lora_weights"`
	// RankPattern and AlphaPattern are PEFT's per-module overrides of r and lora_alpha: always empty
	// here (written so PEFT versions that expect them find them).
	RankPattern  map[string]any `json:"rank_pattern"`
	AlphaPattern map[string]any `json:"alpha_pattern"`
}

// NewConfig returns the adapter config of a tracksum LoRA section: task one of TaskTypes, base the
// base snapshot's directory (base_model_name_or_path), modulesToSave the head's module names (nil
// for none).
func NewConfig(l config.LoRA, task, base string, modulesToSave []string) Config {
	return Config{
		PEFTType:            "LORA",
		TaskType:            task,
		R:                   l.Rank,
		LoRAAlpha:           l.Alpha,
		LoRADropout:         l.Dropout,
		UseRSLoRA:           l.RSLoRA,
		TargetModules:       slices.Clone(l.TargetModules),
		Bias:                "none",
		BaseModelNameOrPath: base,
		FanInFanOut:         false,
		ModulesToSave:       slices.Clone(modulesToSave),
		InferenceMode:       true,
		InitLoRAWeights:     true,
		RankPattern:         map[string]any{},
		AlphaPattern:        map[string]any{},
	}
}

// Scale is the factor of B @ A in the merged weight: lora_alpha / r, or lora_alpha / sqrt(r) with
// use_rslora (PEFT's LoraLayer.update_layer).
func (c Config) Scale() float64 {
	return config.LoRA{Rank: c.R, Alpha: c.LoRAAlpha, RSLoRA: c.UseRSLoRA}.Scale()
}

// validate refuses what this package cannot represent or merge exactly.
func (c Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.PEFTType != "LORA" {
		bad("peft_type %q is not supported (want \"LORA\")", c.PEFTType)
	}
	if !slices.Contains(TaskTypes, c.TaskType) {
		bad("task_type %q is not supported (want one of %s)", c.TaskType, strings.Join(TaskTypes, ", "))
	}
	if c.R < 1 {
		bad("r must be >= 1, got %d", c.R)
	}
	if c.LoRAAlpha <= 0 {
		bad("lora_alpha must be > 0, got %g", c.LoRAAlpha)
	}
	if c.Bias != "none" {
		bad("bias %q is not supported (want \"none\")", c.Bias)
	}
	if c.FanInFanOut {
		bad("fan_in_fan_out true (GPT-2 Conv1D weights) is not supported")
	}
	if len(c.RankPattern) > 0 || len(c.AlphaPattern) > 0 {
		bad("rank_pattern/alpha_pattern (per-module ranks) are not supported")
	}
	if len(c.TargetModules) == 0 {
		bad("target_modules is empty")
	}
	return errors.Join(errs...)
}

// Adapter is an adapter directory in memory: its config and its tensors under their PEFT keys
// (Prefix + module + SuffixA/SuffixB, or Prefix + key for a module to save).
type Adapter struct {
	Config  Config
	Tensors map[string]*tensors.Tensor
}

// Pair is the LoRA of one linear layer: Module is the base model's key of the layer without
// ".weight"; A is [r, in], B is [out, r].
type Pair struct {
	Module string
	A, B   *tensors.Tensor
}

// Pairs returns the adapter's LoRA matrices by module, sorted by module, checking that each A has
// its B, that both are float tensors of rank 2 with r rows/columns and that every other tensor
// belongs to a module to save. Errors name the key.
func (a *Adapter) Pairs() ([]Pair, error) {
	byModule := map[string]*Pair{}
	for key, t := range a.Tensors {
		if !strings.HasPrefix(key, Prefix) {
			return nil, fmt.Errorf("tensor %s: key does not start with %q", key, Prefix)
		}
		var module string
		var isA bool
		switch {
		case strings.HasSuffix(key, SuffixA):
			module, isA = strings.TrimSuffix(strings.TrimPrefix(key, Prefix), SuffixA), true
		case strings.HasSuffix(key, SuffixB):
			module = strings.TrimSuffix(strings.TrimPrefix(key, Prefix), SuffixB)
		default:
			if a.saved(key) == "" {
				return nil, fmt.Errorf("tensor %s: neither a LoRA matrix (%s, %s) nor in modules_to_save %v", key, SuffixA, SuffixB, a.Config.ModulesToSave)
			}
			continue
		}
		if !isFloat(t.DType()) || t.Rank() != 2 {
			return nil, fmt.Errorf("tensor %s: shape %s, want a rank-2 float matrix", key, t.Shape())
		}
		p := byModule[module]
		if p == nil {
			p = &Pair{Module: module}
			byModule[module] = p
		}
		dims := t.Shape().Dimensions
		if isA {
			p.A = t
			if dims[0] != a.Config.R {
				return nil, fmt.Errorf("tensor %s: shape %v, want [r=%d, in]", key, dims, a.Config.R)
			}
		} else {
			p.B = t
			if dims[1] != a.Config.R {
				return nil, fmt.Errorf("tensor %s: shape %v, want [out, r=%d]", key, dims, a.Config.R)
			}
		}
	}
	out := make([]Pair, 0, len(byModule))
	for _, m := range slices.Sorted(maps.Keys(byModule)) {
		p := byModule[m]
		switch {
		case p.A == nil:
			return nil, fmt.Errorf("module %s: %s%s%s is missing", m, Prefix, m, SuffixA)
		case p.B == nil:
			return nil, fmt.Errorf("module %s: %s%s%s is missing", m, Prefix, m, SuffixB)
		}
		out = append(out, *p)
	}
	return out, nil
}

// Saved returns the full tensors of the modules to save, keyed by their base model key (the PEFT
// key without Prefix, e.g. "score.weight").
func (a *Adapter) Saved() map[string]*tensors.Tensor {
	out := map[string]*tensors.Tensor{}
	for key, t := range a.Tensors {
		if strings.HasSuffix(key, SuffixA) || strings.HasSuffix(key, SuffixB) {
			continue
		}
		if name := a.saved(key); name != "" {
			out[name] = t
		}
	}
	return out
}

// saved returns key's base name when it belongs to a module to save (as PEFT matches them: the
// module path equals the name or ends with "." + name), else "".
func (a *Adapter) saved(key string) string {
	name, ok := strings.CutPrefix(key, Prefix)
	if !ok {
		return ""
	}
	i := strings.LastIndex(name, ".")
	if i < 0 {
		return ""
	}
	module := name[:i]
	for _, m := range a.Config.ModulesToSave {
		if module == m || strings.HasSuffix(module, "."+m) {
			return name
		}
	}
	return ""
}

func isFloat(dt dtypes.DType) bool {
	return dt == dtypes.Float32 || dt == dtypes.Float64 || dt == dtypes.BFloat16 || dt == dtypes.Float16
}

// Write writes the adapter to dir (created; an existing adapter there is replaced) as
// adapter_config.json and adapter_model.safetensors, atomically as a whole: the directory is built
// aside and renamed into place, so a reader never sees a config without its weights or a mix of
// two adapters. The adapter is checked first (Pairs).
func Write(dir string, a *Adapter) error {
	if err := a.Config.validate(); err != nil {
		return fmt.Errorf("adapter %s: %w", dir, err)
	}
	if _, err := a.Pairs(); err != nil {
		return fmt.Errorf("adapter %s: %w", dir, err)
	}
	out, err := atomicio.NewDirWith(dir, atomicio.DirOptions{Previous: isAdapterDir, Refresh: true})
	if err != nil {
		return fmt.Errorf("adapter %s: %w", dir, err)
	}
	defer out.Abort()
	if err := atomicio.WriteJSON(out.Path(ConfigFile), a.Config); err != nil {
		return fmt.Errorf("adapter %s: %w", dir, err)
	}
	specs := map[string]shapes.Shape{}
	for k, t := range a.Tensors {
		specs[k] = t.Shape()
	}
	// "format": "pt" as PEFT's own files, which transformers' loaders check.
	if err := tensorio.WriteTensorsFunc(out.Path(WeightsFile), specs, map[string]string{"format": "pt"},
		func(name string) (*tensors.Tensor, error) { return a.Tensors[name], nil }); err != nil {
		return fmt.Errorf("adapter %s: %w", dir, err)
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("adapter %s: %w", dir, err)
	}
	return nil
}

// isAdapterDir lets Write replace a previous adapter (and nothing else).
func isAdapterDir(dir string) error {
	return atomicio.OnlyFiles(dir, "tracksum-train", []string{ConfigFile, WeightsFile})
}

// Read reads an adapter directory written by Write or by PEFT's save_pretrained (safetensors
// only: an adapter_model.bin is refused with a message). Errors are one line naming the file.
func Read(dir string) (*Adapter, error) {
	cfgPath := filepath.Join(dir, ConfigFile)
	raw, err := atomicio.ReadFileMax(cfgPath, atomicio.MaxJSONBytes)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("adapter %s: %s is missing", dir, ConfigFile)
		}
		return nil, fmt.Errorf("adapter %s: %v", dir, err)
	}
	cfg, err := parseConfig(cfgPath, raw)
	if err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", cfgPath, oneLine(err))
	}
	wPath := filepath.Join(dir, WeightsFile)
	if _, err := os.Stat(wPath); errors.Is(err, os.ErrNotExist) {
		if _, errBin := os.Stat(filepath.Join(dir, "adapter_model.bin")); errBin == nil {
			return nil, fmt.Errorf("adapter %s: only adapter_model.bin (PyTorch pickle) is present; save it with safe_serialization=True", dir)
		}
		return nil, fmt.Errorf("adapter %s: %s is missing", dir, WeightsFile)
	}
	ts, err := tensorio.ReadTensors(wPath)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", dir, err)
	}
	a := &Adapter{Config: cfg, Tensors: ts}
	if _, err := a.Pairs(); err != nil {
		return nil, fmt.Errorf("%s: %w", wPath, err)
	}
	// A NaN would otherwise spread silently through every merged weight of its module.
	for _, key := range slices.Sorted(maps.Keys(ts)) {
		if err := snapshot.CheckFinite(ts[key]); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", wPath, key, err)
		}
	}
	return a, nil
}

// parseConfig decodes adapter_config.json (path, read into raw) leniently (PEFT writes many more
// fields), with target_modules as a list (PEFT also allows a regex string: refused, as the modules
// it selects depend on the model's module tree). Errors name the file.
func parseConfig(path string, raw []byte) (Config, error) {
	var probe struct {
		TargetModules json.RawMessage `json:"target_modules"`
		UseDoRA       bool            `json:"use_dora"`
	}
	if err := atomicio.DecodeJSON(path, raw, &probe, false); err != nil {
		return Config{}, fmt.Errorf("not valid JSON: %w", err)
	}
	if len(probe.TargetModules) > 0 && probe.TargetModules[0] == '"' {
		return Config{}, fmt.Errorf("%s: target_modules is a regular expression %s; only a list of module names is supported", path, probe.TargetModules)
	}
	if probe.UseDoRA {
		return Config{}, fmt.Errorf("%s: use_dora true (DoRA) is not supported", path)
	}
	var c Config
	if err := atomicio.DecodeJSON(path, raw, &c, false); err != nil {
		return Config{}, err
	}
	return c, nil
}

func oneLine(err error) error {
	return errors.New(strings.ReplaceAll(err.Error(), "\n", "; "))
}
