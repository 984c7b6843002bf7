// Package variant holds what TracSum's Table 6 variants of Track-then-Sum share (model/stt for
// SUM-THEN-TRACK, model/ete for END-TO-END): the variant.json marker of their checkpoints
// (checkpoint.VariantFile), so that a checkpoint of one kind is never run as another, their
// training written once over each backbone's part trainers (TrainSumThenTrack, TrainEndToEnd:
// the from-scratch models and model/pretrained's fine-tuned LMs call them), and the reading of
// prepared rows either by the prepared splits or by a PMID assignment (the
// cross-validation harness trains on some folds and holds one out).
package variant

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// Variant names: the tracksum-train --task values and the "variant" of variant.json.
const (
	SumThenTrack = "sum_then_track"
	EndToEnd     = "end_to_end"
)

// formatVersion is the version of variant.json this build writes and reads.
const formatVersion = 1

// ErrCheckpoint marks a directory that is not a finished checkpoint of the wanted variant.
// It wraps checkpoint.ErrCheckpoint, the one sentinel of every kind of checkpoint.
var ErrCheckpoint = fmt.Errorf("variant %w", checkpoint.ErrCheckpoint)

// Meta is variant.json.
type Meta struct {
	FormatVersion int    `json:"format_version"`
	Variant       string `json:"variant"`
	// Part names a sub-checkpoint of SUM-THEN-TRACK ("summarizer" or "tracker"); empty for the
	// variant's own directory.
	Part string `json:"part,omitempty"`
	// AspectSet is the aspect registry of the data it was trained on.
	AspectSet string `json:"aspect_set"`
	// Pretrained marks the variant's models as fine-tuned Hugging Face causal LMs (model/pretrained,
	// tracksum-train --pretrained) rather than the from-scratch ones (model/stt, model/ete): the
	// two kinds share the variant names but not their checkpoint layout, so each loader refuses
	// the other's.
	Pretrained bool `json:"pretrained,omitempty"`
}

// Write writes dir/variant.json atomically, removing dir's manifest (checkpoint.Unseal): the
// caller seals the directory once the variant's files are all written.
func Write(dir string, m Meta) error {
	m.FormatVersion = formatVersion
	// The variant's files are changing: its manifest is written again once they are in place.
	if err := checkpoint.Unseal(dir); err != nil {
		return err
	}
	return checkpoint.WriteJSON(filepath.Join(dir, checkpoint.VariantFile), m)
}

// Read reads dir/variant.json and checks that it is a checkpoint of variant want (and part, when
// part is not empty). Errors wrap ErrCheckpoint and name the directory.
func Read(dir, want, part string) (Meta, error) {
	path := filepath.Join(dir, checkpoint.VariantFile)
	var m Meta
	if err := atomicio.ReadJSON(path, &m, true); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return m, fmt.Errorf("%w: %s has no %s (not a %s checkpoint, or its training has not finished)", ErrCheckpoint, dir, checkpoint.VariantFile, want)
		}
		return m, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	switch {
	case m.FormatVersion != formatVersion:
		return m, fmt.Errorf("%w: %s: format version %d, this build reads %d", ErrCheckpoint, path, m.FormatVersion, formatVersion)
	case m.Variant != want:
		return m, fmt.Errorf("%w: %s is a %q checkpoint, not %q", ErrCheckpoint, dir, m.Variant, want)
	case part != "" && m.Part != part:
		return m, fmt.Errorf("%w: %s is the %q part of %s, not its %q", ErrCheckpoint, dir, m.Part, want, part)
	}
	return m, nil
}

// ReadKind is Read that also checks whose models the checkpoint holds: a fine-tuned pretrained
// LM's (pretrained true) or the from-scratch models' (false). The error says which loader reads
// the other kind.
func ReadKind(dir, want, part string, pretrained bool) (Meta, error) {
	m, err := Read(dir, want, part)
	switch {
	case err != nil:
		return m, err
	case m.Pretrained && !pretrained:
		return m, fmt.Errorf("%w: %s is a %s checkpoint of a fine-tuned pretrained LM (tracksum-train --pretrained), not of the from-scratch models: load it with package pretrained (tracksum-infer --method does)", ErrCheckpoint, dir, want)
	case !m.Pretrained && pretrained:
		return m, fmt.Errorf("%w: %s is a %s checkpoint of the from-scratch models, not of a fine-tuned pretrained LM: load it with package %s (tracksum-infer --method does)", ErrCheckpoint, dir, want, fromScratchPackage(want))
	}
	return m, nil
}

// fromScratchPackage names the package that loads the from-scratch checkpoints of variant v.
func fromScratchPackage(v string) string {
	if v == SumThenTrack {
		return "stt"
	}
	return "ete"
}

// Assign places an abstract (by PMID) in a training part: dataset.SplitTrain, dataset.SplitDev,
// or "" for left out (a cross-validation's held-out fold).
type Assign func(pmid string) string

// Rows reads the rows of task from the prepared directory dataDir into a train and a dev part.
// With assign nil they are the prepared train and dev splits; otherwise the rows of every split go
// where assign puts their PMID (pmid reads it from a row).
func Rows[T any](dataDir, task string, pmid func(*T) string, assign Assign) (train, dev []T, err error) {
	splits := []string{dataset.SplitTrain, dataset.SplitDev}
	if assign != nil {
		splits = dataset.Splits
	}
	for _, split := range splits {
		for row, err := range dataset.ReadShards[T](dataDir, task, split) {
			if err != nil {
				return nil, nil, err
			}
			to := split
			if assign != nil {
				to = assign(pmid(&row))
			}
			switch to {
			case dataset.SplitTrain:
				train = append(train, row)
			case dataset.SplitDev:
				dev = append(dev, row)
			case "":
			default:
				return nil, nil, fmt.Errorf("variant: assignment of abstract %s: %q is neither %q, %q nor \"\"", pmid(&row), to, dataset.SplitTrain, dataset.SplitDev)
			}
		}
	}
	return train, dev, nil
}
