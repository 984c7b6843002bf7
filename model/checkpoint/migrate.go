package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
)

// Migration (tracksum-train --migrate) is the one place that knows the layouts of releases
// without checkpoint.json: it tells a directory's kind from the metadata files each model wrote
// (describe) and seals it with that identity. Every current training path states its identity
// when it seals (Seal); Open reads nothing else.

// Migrate writes the manifest of a checkpoint written by a release without them (its members'
// first), and returns it; a directory that already has one is opened (verified) and left alone
// (wrote false). A directory whose kind its files do not settle, or an unfinished run, is
// refused. It stops when ctx is cancelled.
func Migrate(ctx context.Context, dir string) (m *Manifest, wrote bool, err error) {
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		m, err := Open(ctx, dir)
		return m, false, err
	}
	d, err := describe(dir)
	if err != nil {
		return nil, false, err
	}
	if err := checkFolds(ctx, d); err != nil {
		return nil, false, err
	}
	for _, sub := range d.Members {
		if _, _, err := Migrate(ctx, filepath.Join(dir, sub)); err != nil {
			return nil, false, err
		}
	}
	m, err = seal(ctx, dir, d.Identity())
	return m, err == nil, err
}

// Identity returns what m states about the model (Seal's argument).
func (m *Manifest) Identity() Identity {
	return Identity{Kind: m.Kind, Task: m.Task, Part: m.Part, Backbone: m.Backbone, Base: m.Base, Settings: m.Settings}
}

// The metadata describe reads, leniently: the fields that tell the kind apart, and the settings
// inference needs.
type (
	trackerMeta struct {
		Architecture string  `json:"architecture"`
		Threshold    float64 `json:"threshold"`
		AspectSet    string  `json:"aspect_set"`
	}
	pretrainedMeta struct {
		Task      string `json:"task"`
		Head      string `json:"head"`
		ModelType string `json:"model_type"`
		Variant   string `json:"variant"`
		AspectSet string `json:"aspect_set"`
		// Quantization is Meta.Quantization: "nf4" or empty.
		Quantization string `json:"quantization"`
	}
	variantMeta struct {
		Variant    string `json:"variant"`
		Part       string `json:"part"`
		Pretrained bool   `json:"pretrained"`
	}
	cvReport struct {
		Model string `json:"model"`
		K     int    `json:"k"`
	}
)

// describe tells what dir holds from the files the current and earlier releases write (without
// reading checkpoint.json, hashing nothing): the one place that maps metadata files to a kind,
// for Migrate and for Open of a directory without a manifest. A directory with none of them, with
// two models' metadata, or an unfinished run is refused with ErrCheckpoint. Files lists the paths
// only (Seal hashes them).
func describe(dir string) (*Manifest, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrCheckpoint, dir)
	}
	d := &describer{dir: dir, m: &Manifest{FormatVersion: ManifestVersion, Dir: dir}}
	switch {
	case d.has(CrossValidationFile):
		err = d.crossValidation()
	case d.has(VariantFile):
		err = d.variant()
	default:
		err = d.model("")
	}
	if err != nil {
		return nil, err
	}
	members := d.m.Members
	if d.m.Files, d.m.Members, err = payload(dir, d.m); err != nil {
		return nil, err
	}
	if d.m.Kind == KindCrossValidation || d.m.Kind == KindEnsemble {
		// An older release's folds have no manifest yet: those the metadata names are the members.
		d.m.Members = members
	}
	return d.m, nil
}

// model describes the checkpoint of one model in dir; v is its variant.json's variant ("" when it
// has none).
func (d *describer) model(v string) error {
	var found []string
	for _, n := range []string{HyperparamsFile, SummarizerFile, PretrainedFile} {
		if d.has(n) {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return fmt.Errorf("%w: %s is not a checkpoint: it has none of %s, %s, %s, %s, %s, %s", ErrCheckpoint, d.dir,
			ManifestFile, HyperparamsFile, SummarizerFile, PretrainedFile, VariantFile, CrossValidationFile)
	case 1:
	default:
		return fmt.Errorf("%w: %s is ambiguous: it holds both %s and %s (two models' metadata); which model it is cannot be told", ErrCheckpoint, d.dir, found[0], found[1])
	}
	if err := d.finished(); err != nil {
		return err
	}
	m := d.m
	m.Backbone.Type = BackboneScratch
	switch found[0] {
	case HyperparamsFile:
		var hp trackerMeta
		if err := d.read(HyperparamsFile, &hp); err != nil {
			return err
		}
		m.Kind, m.Task, m.Backbone.Architecture = KindTracker, dataset.TaskTracker, hp.Architecture
		m.Settings = Settings{Threshold: hp.Threshold, AspectSet: hp.AspectSet}
	case SummarizerFile:
		m.Kind, m.Task = KindSummarizer, dataset.TaskSummarizer
	case PretrainedFile:
		var pm pretrainedMeta
		if err := d.read(PretrainedFile, &pm); err != nil {
			return err
		}
		if pm.Task != dataset.TaskTracker && pm.Task != dataset.TaskSummarizer {
			return fmt.Errorf("%w: %s: task %q, want %s or %s", ErrCheckpoint, d.path(PretrainedFile), pm.Task, dataset.TaskTracker, dataset.TaskSummarizer)
		}
		if pm.Variant != v {
			return fmt.Errorf("%w: %s: variant %q, but %s says %q (an unfinished run?)", ErrCheckpoint, d.path(PretrainedFile), pm.Variant, VariantFile, v)
		}
		m.Kind, m.Task = pm.Task, pm.Task
		m.Backbone = Backbone{Type: BackboneCausalLM, Architecture: pm.ModelType, Head: pm.Head, Quantization: pm.Quantization}
		if pm.Head == config.HeadEncoderCLS {
			m.Backbone.Type = BackboneEncoder
		}
		m.Settings.AspectSet = pm.AspectSet
		if err := d.need(unfinished, bestWeights, baseFile); err != nil {
			return err
		}
		var b Base
		if err := d.read(baseFile, &b); err != nil {
			return err
		}
		m.Base = &b
	}
	return nil
}

// variant describes a Table 6 variant's directory (variant.json).
func (d *describer) variant() error {
	var vm variantMeta
	if err := d.read(VariantFile, &vm); err != nil {
		return err
	}
	if vm.Variant != KindSumThenTrack && vm.Variant != KindEndToEnd {
		return fmt.Errorf("%w: %s: variant %q, want %s or %s", ErrCheckpoint, d.path(VariantFile), vm.Variant, KindSumThenTrack, KindEndToEnd)
	}
	if vm.Variant == KindSumThenTrack && vm.Part == "" {
		// The directory of the two parts: its backbone is its summarizer's.
		d.m.Kind, d.m.Task = KindSumThenTrack, KindSumThenTrack
		for _, part := range []string{VariantSummarizerDir, VariantTrackerDir} {
			sub, err := describe(d.path(part))
			if err != nil {
				return fmt.Errorf("%w: %s: its %s part: %w", ErrCheckpoint, d.dir, part, err)
			}
			if sub.Kind != KindSumThenTrack || sub.Part != part {
				return fmt.Errorf("%w: %s: %s is %s checkpoint, not the %s part of sum_then_track", ErrCheckpoint, d.dir, part, article(sub.Name()), part)
			}
			// Its backbone, base and decoding are its summarizer's, its threshold its tracker's.
			if part == VariantSummarizerDir {
				d.m.Backbone, d.m.Base, d.m.Settings.AspectSet, d.m.Settings.Decoding = sub.Backbone, sub.Base, sub.Settings.AspectSet, sub.Settings.Decoding
			} else {
				d.m.Settings.Threshold = sub.Settings.Threshold
			}
		}
		return nil
	}
	inner := ""
	if vm.Pretrained {
		inner = vm.Variant
	}
	if err := d.model(inner); err != nil {
		return err
	}
	if d.m.Pretrained() != vm.Pretrained {
		return fmt.Errorf("%w: %s: %s says pretrained %v, but the model's metadata says otherwise", ErrCheckpoint, d.dir, VariantFile, vm.Pretrained)
	}
	task := d.m.Task
	d.m.Kind, d.m.Task, d.m.Part = vm.Variant, vm.Variant, vm.Part
	want := dataset.TaskSummarizer
	if vm.Part == VariantTrackerDir {
		want = dataset.TaskTracker
	}
	if task != want {
		return fmt.Errorf("%w: %s: %s names %s, but the directory holds a %s", ErrCheckpoint, d.dir, VariantFile, d.m.Name(), task)
	}
	return nil
}

// crossValidation describes a cross-validation directory (cv.json); its members are the
// subdirectories that hold a run (holdsOldRun).
func (d *describer) crossValidation() error {
	var rep cvReport
	if err := d.read(CrossValidationFile, &rep); err != nil {
		return err
	}
	if rep.Model == "" {
		return fmt.Errorf("%w: %s has no model", ErrCheckpoint, d.path(CrossValidationFile))
	}
	d.m.Task, d.m.Backbone.Type = rep.Model, BackboneScratch
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		sub := filepath.Join(d.dir, name)
		if !holdsOldRun(sub) {
			continue
		}
		if _, err := describe(sub); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrCheckpoint, d.dir, err)
		}
		d.m.Members = append(d.m.Members, name)
	}
	d.m.Kind = crossValidationKind(rep.Model, d.m.Members)
	return nil
}

// holdsOldRun reports whether dir holds a checkpoint or a cross-validation of any release, sealed
// or not, by the metadata files each kind writes.
func holdsOldRun(dir string) bool {
	for _, n := range []string{ManifestFile, HyperparamsFile, SummarizerFile, PretrainedFile, VariantFile, CrossValidationFile} {
		if st, err := os.Stat(filepath.Join(dir, n)); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}
