package pretrained_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/export"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/pretrained"
)

// TestAdapterConfigEditedRefused is the regression test of issue 22's adapter rough edge: with
// adapter/adapter_config.json edited (lora_alpha 1000), export merged with the edited value while
// infer used pretrained.json's: two models from one checkpoint. pretrained.json is the source of
// truth and both commands cross-check it, refusing a disagreement with one line naming both files.
func TestAdapterConfigEditedRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model (~10 s)")
	}
	cfg, data, llm := setup(t)
	cfg.Tracker.Pretrained, cfg.Tracker.Head = llm, config.HeadLMCLS
	cfg.Tracker.LoRA.Rank, cfg.Tracker.LoRA.Alpha = 4, 8
	cfg.Tracker.LoRA.TargetModules = []string{"q_proj", "v_proj"}
	loop(&cfg.Tracker.Train)
	ck := filepath.Join(t.TempDir(), "tracker")
	trainTask(t, "tracker", cfg, data, ck)
	if _, err := pretrained.LoadTracker(context.Background(), ck); err != nil {
		t.Fatalf("unedited checkpoint: %v", err)
	}

	path := filepath.Join(ck, peft.AdapterDir, peft.ConfigFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	c["lora_alpha"] = 1000
	edited, _ := json.Marshal(c)
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, peft.ErrDisagree) || !strings.Contains(err.Error(), path+" has lora_alpha 1000") ||
			!strings.Contains(err.Error(), "pretrained.json records 8") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s with an edited lora_alpha: %v, want a one-line refusal naming both files", what, err)
		}
	}
	_, err = pretrained.LoadTracker(context.Background(), ck)
	check("infer (LoadTracker)", err)
	out := filepath.Join(t.TempDir(), "merged")
	// The checkpoint's manifest refuses the edited file first, naming it.
	_, err = export.Export(context.Background(), export.Options{Checkpoint: ck, Out: out})
	if !errors.Is(err, checkpoint.ErrCheckpoint) || !strings.Contains(err.Error(), path+" has ") {
		t.Errorf("export of an edited checkpoint: %v, want the manifest's refusal naming %s", err, path)
	}
	// Without it (a checkpoint of an older release), the agreement check still does.
	if err := os.Remove(filepath.Join(ck, checkpoint.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	_, err = export.Export(context.Background(), export.Options{Checkpoint: ck, Out: out})
	check("export", err)
	if _, serr := os.Stat(out); serr == nil {
		t.Error("a refused export wrote its output")
	}
}
