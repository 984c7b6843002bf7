package cv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// TestDefaultTrackerIsLexicalContext cross-validates the default tracker architecture,
// lexical-context, on the built-in sample: its out-of-fold predictions equal those of
// --cv-model lexical-context (the same model, now with fold checkpoints), infer's ensemble loads
// the fold checkpoints, and the final tracker is that model fitted on every abstract.
func TestDefaultTrackerIsLexicalContext(t *testing.T) {
	if testing.Short() {
		t.Skip("fits 3 + 3 lexical trackers and a final one (~20 s)")
	}
	ctx := context.Background()
	cfg := tinyConfig(t)
	cfg.Tracker.Architecture = config.TrackerLexicalContext
	cfg.Tracker.LexicalCalibrationFolds = LexicalContextFolds
	data := preparedWithFolds(t, cfg, 3)
	run := func(model string) string {
		out := filepath.Join(t.TempDir(), model)
		if _, err := Run(ctx, cfg, Options{Data: data, Out: out, Folds: 3, Model: model, Log: &bytes.Buffer{}}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	def, lex := run(ModelTracker), run(ModelLexicalContext)
	a, err := os.ReadFile(filepath.Join(def, PredictionsFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(lex, PredictionsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("out-of-fold predictions of the default tracker differ from --cv-model lexical-context's")
	}
	for k := range 3 {
		fold := filepath.Join(def, fmt.Sprintf("fold-%d", k))
		if _, err := os.Stat(filepath.Join(fold, checkpoint.LexicalFile)); err != nil {
			t.Errorf("fold %d checkpoint: %v", k, err)
		}
	}
	e, err := infer.LoadEnsemble(def)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Members()) != 3 {
		t.Errorf("ensemble of %d folds", len(e.Members()))
	}
	// A rerun finds every fold done and its checkpoint intact (the sha256 record covers lexical.json).
	var log bytes.Buffer
	if _, err := Run(ctx, cfg, Options{Data: data, Out: def, Folds: 3, Model: ModelTracker, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log.Bytes(), []byte("already done")) {
		t.Errorf("rerun did not reuse the folds:\n%s", log.String())
	}
	out := filepath.Join(t.TempDir(), "final")
	m, fr, err := Final(ctx, cfg, FinalOptions{Data: data, Out: out, CV: def, Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Lexical() == nil || fr.WarmStart || fr.Steps != 0 || !reflect.DeepEqual(fr.FoldBestSteps, []int{0, 0, 0}) {
		t.Errorf("final: lexical %v, report %+v", m.Lexical() != nil, fr)
	}
}
