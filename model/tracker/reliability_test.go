package tracker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/training"
)

// Issue 10 item 7: `train --task tracker --out SUMMARIZER_CHECKPOINT` must be refused before
// anything is written there.
func TestTrainIntoSummarizerCheckpointRefused(t *testing.T) {
	out := t.TempDir()
	// A finished summarizer checkpoint, as its manifest states it.
	m := checkpoint.Manifest{FormatVersion: checkpoint.ManifestVersion, Kind: checkpoint.KindSummarizer, Task: checkpoint.KindSummarizer,
		Backbone: checkpoint.Backbone{Type: checkpoint.BackboneScratch}}
	if err := checkpoint.WriteJSON(filepath.Join(out, checkpoint.ManifestFile), &m); err != nil {
		t.Fatal(err)
	}
	_, _, err := Train(context.Background(), tinyConfig(t), filepath.Join(out, "no-data"), out, TrainOptions{Log: testLog(t)})
	if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "holds a summarizer checkpoint") {
		t.Fatalf("err = %v, want ErrCheckpoint naming the summarizer checkpoint", err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("wrote into the summarizer checkpoint: %v", entries)
	}
}

// Issue 10 item 6: resuming with a changed --learning-rate (or --seed, --max-steps...) proceeded
// and config.yaml then recorded settings that were not those trained with.
func TestResumeWithChangedConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	data := syntheticPrepared(t)
	out := filepath.Join(t.TempDir(), "run")
	cfg := tinyConfig(t)
	cfg.Tracker.Train.MaxSteps = 2
	if _, _, err := Train(context.Background(), cfg, data, out, TrainOptions{Log: testLog(t)}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(out, checkpoint.ConfigFile))
	changed := *cfg
	changed.Seed++
	changed.Tracker.Train.MaxSteps = 3
	_, _, err := Train(context.Background(), &changed, data, out, TrainOptions{Log: testLog(t), AfterStep: func(int) { t.Error("trained") }})
	if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "tracker.train.max_steps: 2 -> 3") ||
		!strings.Contains(err.Error(), "seed: ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v, want a one-line refusal listing seed and tracker.train.max_steps", err)
	}
	if after, _ := os.ReadFile(filepath.Join(out, checkpoint.ConfigFile)); string(after) != string(before) {
		t.Error("a refused run changed config.yaml")
	}
	// The run had finished: with --allow-changed-config it would train nothing and config.yaml
	// would claim settings no step used (issue 35 item 21), so it is refused all the same.
	_, _, err = Train(context.Background(), &changed, data, out, TrainOptions{Log: testLog(t), AllowChangedConfig: true,
		AfterStep: func(int) { t.Error("trained") }})
	if err == nil || !strings.Contains(err.Error(), "a finished run is not trained further") || !strings.Contains(err.Error(), "tracker.train.max_steps: 2 -> 3") {
		t.Fatalf("err = %v, want the refusal of a finished run", err)
	}
	if after, _ := os.ReadFile(filepath.Join(out, checkpoint.ConfigFile)); string(after) != string(before) {
		t.Error("a refused run changed config.yaml")
	}
	if _, err := os.Stat(filepath.Join(out, "config.step-2.yaml")); err == nil {
		t.Error("a refused run wrote config.step-2.yaml")
	}
	if _, err := training.ReadResumePoint(out); err != nil {
		t.Error(err)
	}
}
