package summarizer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/training"
)

// Issue 10 item 7: `train --task summarizer --out TRACKER_CHECKPOINT` reported "summarizer
// completed" with the tracker's metrics and wrote summarizer.json into the tracker's directory.
func TestTrainIntoTrackerCheckpointRefused(t *testing.T) {
	cfg := config.Default()
	out := t.TempDir()
	files := map[string]string{"hparams.json": "{}\n", "config.yaml": "seed: 1\n", "metrics.jsonl": `{"split":"dev","step":4}` + "\n",
		// A finished tracker checkpoint states what it is in its manifest.
		checkpoint.ManifestFile: `{"format_version": 1, "kind": "tracker", "task": "tracker", "backbone": {"type": "scratch"}}`}
	for name, content := range files {
		os.WriteFile(filepath.Join(out, name), []byte(content), 0o644)
	}
	var log bytes.Buffer
	_, _, err := Train(context.Background(), &cfg, filepath.Join(out, "no-data"), out, TrainOptions{Log: &log})
	if !errors.Is(err, training.ErrResume) || !strings.Contains(err.Error(), "holds a tracker checkpoint") {
		t.Fatalf("err = %v, want a refusal naming the tracker checkpoint", err)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != len(files) {
		t.Errorf("directory now holds %v", entries)
	}
	for name, content := range files {
		if got, _ := os.ReadFile(filepath.Join(out, name)); string(got) != content {
			t.Errorf("%s changed to %q", name, got)
		}
	}
}

// Issue 10 item 6 (summarizer side): a rerun into a checkpoint with progress and other settings,
// another model or another tokenizer is refused before any of its files changes; with
// AllowChangedConfig only the settings may differ.
func TestWriteCheckpointFilesResumeChecks(t *testing.T) {
	base := config.Default()
	base.Summarizer.BeamSize = 4
	meta := Meta{FormatVersion: formatVersion, Hyperparams: Hyperparams{VocabSize: 100}, AspectSet: "tracsum"}
	otherModel := meta
	otherModel.Hyperparams.VocabSize = 101
	changed := base
	changed.Summarizer.BeamSize = 5
	for _, tc := range []struct {
		desc  string
		cfg   config.Config
		meta  Meta
		tok   string
		allow bool
		want  string // "" for success
	}{
		{desc: "same", cfg: base, meta: meta, tok: "tok"},
		{desc: "changed setting", cfg: changed, meta: meta, tok: "tok", want: "summarizer.beam_size: 4 -> 5"},
		{desc: "changed setting allowed", cfg: changed, meta: meta, tok: "tok", allow: true},
		{desc: "other model", cfg: base, meta: otherModel, tok: "tok", allow: true, want: "another model"},
		{desc: "other tokenizer", cfg: base, meta: meta, tok: "other", allow: true, want: "another tokenizer"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "ck")
			tokPath := filepath.Join(dir, "tokenizer.json")
			os.WriteFile(tokPath, []byte("tok"), 0o644)
			if err := writeCheckpointFiles(out, meta, tokPath, &base, false, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			// Progress: a resume point at step 3.
			os.MkdirAll(filepath.Join(out, training.StateDir), 0o755)
			os.WriteFile(filepath.Join(out, training.StateDir, "state.json"), []byte(`{"step": 3}`), 0o644)
			os.WriteFile(filepath.Join(out, training.StateDir, "variables.safetensors"), nil, 0o644)
			before, _ := os.ReadFile(filepath.Join(out, checkpoint.ConfigFile))
			os.WriteFile(tokPath, []byte(tc.tok), 0o644)
			err := writeCheckpointFiles(out, tc.meta, tokPath, &tc.cfg, tc.allow, &bytes.Buffer{})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, training.ErrResume) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrResume containing %q", err, tc.want)
			}
			if after, _ := os.ReadFile(filepath.Join(out, checkpoint.ConfigFile)); string(after) != string(before) {
				t.Error("a refused rerun changed config.yaml")
			}
		})
	}
}
