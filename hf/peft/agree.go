package peft

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// ErrDisagree marks a checkpoint whose adapter_config.json and training metadata describe
// different adapters (one of them edited by hand).
var ErrDisagree = errors.New("adapter settings disagree")

// CheckAgreement cross-checks the adapter of the checkpoint ck against l, the LoRA settings its
// metadata file (metaName, e.g. pretrained.json) records: infer builds the model from the
// metadata and export merges with adapter/adapter_config.json, so the two must describe the
// same adapter (r, lora_alpha, use_rslora, target_modules), or inference and the exported model
// would silently differ (issue 22: lora_alpha edited to 1000 changed the export only). A
// checkpoint without adapter/ (full fine-tuning) has nothing to check. files reads ck's files (the
// directory, or the bytes its verified manifest holds). The error is one line naming both files.
func CheckAgreement(ck string, files atomicio.Files, l config.LoRA, metaName string) error {
	path := filepath.Join(ck, AdapterDir, ConfigFile)
	var c Config
	err := atomicio.ReadJSONFrom(files, ck, AdapterDir+"/"+ConfigFile, &c, false)
	if errors.Is(err, os.ErrNotExist) {
		if l.Rank > 0 {
			if _, derr := os.Stat(filepath.Join(ck, AdapterDir)); derr == nil {
				return fmt.Errorf("%s is missing", path)
			}
		}
		return nil
	}
	if err != nil {
		return err // names the file
	}
	meta := filepath.Join(ck, metaName)
	diff := func(field string, a, m any) error {
		return fmt.Errorf("%w: %s has %s %v but %s records %v (one of them was edited); restore it or retrain",
			ErrDisagree, path, field, a, meta, m)
	}
	switch {
	case l.Rank == 0:
		return fmt.Errorf("%w: %s exists but %s records full fine-tuning (lora rank 0)", ErrDisagree, path, meta)
	case c.R != l.Rank:
		return diff("r", c.R, l.Rank)
	case math.Abs(c.LoRAAlpha-l.Alpha) > 1e-12*math.Max(1, math.Abs(l.Alpha)):
		return diff("lora_alpha", c.LoRAAlpha, l.Alpha)
	case c.UseRSLoRA != l.RSLoRA:
		return diff("use_rslora", c.UseRSLoRA, l.RSLoRA)
	case !sameSet(c.TargetModules, l.TargetModules) && !(slices.Contains(c.ModulesToSave, "classifier") && encoderTargets(c.TargetModules, l.TargetModules)):
		return diff("target_modules", c.TargetModules, l.TargetModules)
	}
	return nil
}

// encoderTargets reports whether an adapter_config.json's targets are the configured ones as a
// fine-tuned encoder's adapter records them (model/pretrained's encoder: the Llama-family names
// written as the layers they select, hf/family's TargetAliases).
func encoderTargets(recorded, configured []string) bool {
	for _, name := range family.FineTunedEncoders() {
		f, _ := family.Lookup(name)
		if sameSet(recorded, f.SelectedTargets(configured)) {
			return true
		}
	}
	return false
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
