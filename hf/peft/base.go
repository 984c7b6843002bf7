package peft

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// Names inside a tracksum checkpoint of a pretrained model (the rest of the layout is the
// training loop's and the task's: model/checkpoint).
const (
	// BaseFile names the base snapshot the checkpoint was trained on (BaseRef).
	BaseFile = "base.json"
	// AdapterDir holds the adapters in PEFT's layout (lora.rank > 0).
	AdapterDir = "adapter"
	// FullDir holds, with full fine-tuning (lora.rank 0), every trained tensor under its base key
	// in FullWeights.
	FullDir     = "full"
	FullWeights = "model.safetensors"
)

// BaseRef is base.json: which snapshot a checkpoint's adapters apply to, with the digest of its
// weights, so that a checkpoint is never applied to another model (or to the same directory after
// its weights changed).
type BaseRef struct {
	// Dir is the snapshot's absolute directory.
	Dir string `json:"dir"`
	// ModelType is config.json's model_type.
	ModelType string `json:"model_type"`
	// WeightsSHA256 is snapshot.WeightsSHA256: the SHA-256 of the weight files in order.
	WeightsSHA256 string `json:"weights_sha256"`
	// WeightFiles are the weight files the digest covers, relative to Dir.
	WeightFiles []string `json:"weight_files"`
	// Quantization is how the snapshot stores its weights: "bitsandbytes nf4" (a 4-bit
	// snapshot, e.g. unsloth's -bnb-4bit), or empty for a plain one. A snapshot stored otherwise
	// is another model, refused naming both storages.
	Quantization string `json:"quantization,omitempty"`
	// Files are the SHA-256 of the snapshot's other files that shape the model
	// (snapshot.ShapingFiles present at training: config.json, tokenizer files, chat template,
	// generation config), by file name. Absent in checkpoints written before they were recorded.
	Files map[string]string `json:"files,omitempty"`
}

// RefOf describes an opened snapshot (hashing its files: a few seconds per GB, once per version
// of the files thanks to snapshot's digest cache).
func RefOf(ctx context.Context, s *snapshot.Snapshot) (BaseRef, error) {
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return BaseRef{}, fmt.Errorf("snapshot %s: %w", s.Dir, err)
	}
	files, err := s.FileDigests()
	if err != nil {
		return BaseRef{}, err
	}
	sum, err := s.WeightsSHA256(ctx)
	if err != nil {
		return BaseRef{}, err
	}
	return BaseRef{Dir: dir, ModelType: s.ModelType, WeightsSHA256: sum, WeightFiles: slices.Clone(s.WeightFiles), Quantization: storage(s), Files: files}, nil
}

// storage is BaseRef.Quantization for s.
func storage(s *snapshot.Snapshot) string {
	if s.Quant == nil {
		return ""
	}
	return "bitsandbytes " + s.Quant.QuantType
}

// describeStorage names a BaseRef.Quantization for messages.
func describeStorage(q string) string {
	if q == "" {
		return "an unquantized snapshot"
	}
	return "a " + q + " (4-bit) snapshot"
}

// WriteBaseRef writes ckDir/base.json for the snapshot s, atomically, and returns what it wrote.
func WriteBaseRef(ctx context.Context, ckDir string, s *snapshot.Snapshot) (BaseRef, error) {
	ref, err := RefOf(ctx, s)
	if err != nil {
		return BaseRef{}, err
	}
	if err := atomicio.WriteJSON(filepath.Join(ckDir, BaseFile), ref); err != nil {
		return BaseRef{}, fmt.Errorf("checkpoint %s: %w", ckDir, err)
	}
	return ref, nil
}

// ReadBaseRef reads ckDir/base.json through files (the directory, or the bytes its verified
// manifest holds).
func ReadBaseRef(ckDir string, files atomicio.Files) (BaseRef, error) {
	path := filepath.Join(ckDir, BaseFile)
	var ref BaseRef
	if err := atomicio.ReadJSONFrom(files, ckDir, BaseFile, &ref, true); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return BaseRef{}, fmt.Errorf("checkpoint %s: %s is missing (not a checkpoint of a pretrained model?)", ckDir, BaseFile)
		}
		return BaseRef{}, err // ReadJSON's errors name the file
	}
	if ref.Dir == "" || ref.WeightsSHA256 == "" {
		return BaseRef{}, fmt.Errorf("%s: dir and weights_sha256 must be set", path)
	}
	return ref, nil
}

// OpenBase reads ckDir/base.json (through files, as ReadBaseRef), opens the snapshot it names and checks that its weights and the
// files that shape the model (config, tokenizer, template, generation config) are the ones the
// checkpoint was trained on. dir, when not empty, is opened instead of the recorded directory (a
// snapshot moved or copied elsewhere), with the same check. A changed or missing base is a
// one-line error naming base.json, the directory, the changed file and both digests.
func OpenBase(ctx context.Context, ckDir string, files atomicio.Files, dir string) (*snapshot.Snapshot, BaseRef, error) {
	ref, err := ReadBaseRef(ckDir, files)
	if err != nil {
		return nil, BaseRef{}, err
	}
	if dir == "" {
		dir = ref.Dir
	}
	path := filepath.Join(ckDir, BaseFile)
	s, err := snapshot.Open(dir)
	if err != nil {
		return nil, BaseRef{}, fmt.Errorf("%s: base model: %w", path, err)
	}
	if s.ModelType != ref.ModelType {
		return nil, BaseRef{}, fmt.Errorf("%s: base model %s is model_type %q, the checkpoint was trained on %q", path, dir, s.ModelType, ref.ModelType)
	}
	// An adapter trained on a 4-bit snapshot applied to its unquantized original (or the
	// reverse) fails the digests below too; this says why.
	if q := storage(s); q != ref.Quantization {
		return nil, BaseRef{}, fmt.Errorf("%s: base model %s is %s, the checkpoint was trained on %s: its adapters apply to the weights they were trained with only", path, dir, describeStorage(q), describeStorage(ref.Quantization))
	}
	if ref.Files != nil {
		now, err := s.FileDigests()
		if err != nil {
			return nil, BaseRef{}, fmt.Errorf("%s: base model: %w", path, err)
		}
		for _, name := range snapshot.ShapingFiles {
			was, had := ref.Files[name]
			is, has := now[name]
			switch {
			case had && !has:
				return nil, BaseRef{}, fmt.Errorf("%s: base model %s has changed: %s is missing, the checkpoint was trained with it (sha256 %s)", path, dir, name, was)
			case !had && has:
				return nil, BaseRef{}, fmt.Errorf("%s: base model %s has changed: %s was added since training", path, dir, name)
			case was != is:
				return nil, BaseRef{}, fmt.Errorf("%s: base model %s has changed: %s sha256 %s, the checkpoint was trained on %s", path, dir, name, is, was)
			}
		}
	}
	sum, err := s.WeightsSHA256(ctx)
	if err != nil {
		return nil, BaseRef{}, fmt.Errorf("%s: base model: %w", path, err)
	}
	if sum != ref.WeightsSHA256 {
		return nil, BaseRef{}, fmt.Errorf("%s: base model %s has changed: weights sha256 %s, the checkpoint was trained on %s", path, dir, sum, ref.WeightsSHA256)
	}
	return s, ref, nil
}
