package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/model/checkpoint"
)

// lexicalTrainer returns a Train of the built-in sample into out with the tiny profile and the
// default tracker architecture, lexical-context (3 inner folds: the sample is small).
func lexicalTrainer(t *testing.T) func(out string) (*Model, *Report, error) {
	t.Helper()
	cfg := tinyConfig(t)
	cfg.Tracker.Architecture = ArchLexicalContext
	cfg.Tracker.LexicalCalibrationFolds = 3
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	data := syntheticPrepared(t)
	return func(out string) (*Model, *Report, error) {
		return Train(context.Background(), cfg, data, out, TrainOptions{Log: testLog(t)})
	}
}

// TestTrainLexicalContextRoundTrip trains the lexical-context tracker on the built-in sample, then
// checks the checkpoint: its files, identical scores after Load (ScoreSplit, and Score on raw
// sentences as infer calls it), the 0.5 rule of the report, and a rerun giving the same files.
func TestTrainLexicalContextRoundTrip(t *testing.T) {
	train := lexicalTrainer(t)
	out := filepath.Join(t.TempDir(), "run")
	m, rep, err := train(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Lexical() == nil || m.Context() == nil {
		t.Fatal("trained model is not a lexical-context tracker")
	}
	if rep.Architecture != ArchLexicalContext || rep.Steps != 0 {
		t.Errorf("report architecture %q, %d steps", rep.Architecture, rep.Steps)
	}
	if f1 := rep.Dev.Sentence["f1"]; f1 < 0.8 {
		t.Errorf("dev F1 %.3f, want >= 0.8 on the synthetic sample", f1)
	}
	for _, f := range []string{checkpoint.HyperparamsFile, checkpoint.TokenizerFile, checkpoint.ConfigFile,
		checkpoint.LexicalFile, checkpoint.ContextFile, checkpoint.ReportFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("checkpoint file %s: %v", f, err)
		}
	}
	if _, err := os.Stat(checkpoint.BestWeights(out)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lexical-context checkpoint has network variables: %v", err)
	}
	loaded, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if hp := loaded.Hyperparams(); hp.Architecture != ArchLexicalContext || hp.DModel != 0 || len(hp.Aspects) == 0 {
		t.Errorf("loaded hyperparameters %+v", hp)
	}
	cfg := tinyConfig(t)
	d, err := ReadData(syntheticPrepared(t), cfg.Tracker.MaxLen-1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []SplitData{d.Train, d.Dev, d.Test} {
		want, err := m.ScoreSplit(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := loaded.ScoreSplit(s)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatal("scores after Load differ from the trained model's")
		}
	}
	split, err := loaded.ScoreSplit(d.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if got := EvaluateScores(d.Dev, split, 0.5); !reflect.DeepEqual(got, rep.Dev) {
		t.Errorf("report dev figures %+v, ScoreSplit's at 0.5 %+v", rep.Dev.Sentence, got.Sentence)
	}
	byRow := map[RowKey]float32{}
	for i, k := range d.Dev.Keys {
		byRow[k] = split[i]
	}
	for key, doc := range devDocs(t, syntheticPrepared(t)) {
		probs, err := loaded.Score(doc, key[1])
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range probs {
			if w := byRow[RowKey{PMID: key[0], Aspect: key[1], SentenceIndex: i}]; p != w {
				t.Fatalf("%s/%s sentence %d: Score %v, ScoreSplit %v", key[0], key[1], i, p, w)
			}
		}
	}
	// A rerun into the finished checkpoint fits again (seconds) and writes the same model.
	before, err := os.ReadFile(filepath.Join(out, checkpoint.LexicalFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := train(out); err != nil {
		t.Fatal(err)
	}
	if after, err := os.ReadFile(filepath.Join(out, checkpoint.LexicalFile)); err != nil || string(after) != string(before) {
		t.Errorf("rerun wrote another %s (%v)", checkpoint.LexicalFile, err)
	}
}

// TestLoadLexicalContextRefusesCorrupt checks that a damaged or hostile lexical.json (or a missing
// context.json) is refused with an ErrCheckpoint error naming the file, on one line.
func TestLoadLexicalContextRefusesCorrupt(t *testing.T) {
	train := lexicalTrainer(t)
	out := filepath.Join(t.TempDir(), "run")
	if _, _, err := train(out); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(out, checkpoint.LexicalFile))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(change func(f map[string]any)) string {
		var c map[string]any
		if err := json.Unmarshal(good, &c); err != nil {
			t.Fatal(err)
		}
		change(c)
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	firstAspect := func(c map[string]any) map[string]any {
		for _, a := range c["aspects"].([]any) {
			if a != nil {
				return a.(map[string]any)
			}
		}
		t.Fatal("no fitted aspect")
		return nil
	}
	for _, tc := range []struct {
		desc, content, want string
	}{
		{"not JSON", "not json", "invalid character"},
		{"truncated", string(good[:len(good)/2]), "unexpected end of JSON input"},
		{"other format", edit(func(c map[string]any) { c["format"] = "pickle" }), `format "pickle"`},
		{"unknown field", edit(func(c map[string]any) { c["exec"] = "rm -rf /" }), "unknown field"},
		{"too few aspects", edit(func(c map[string]any) { c["aspects"] = c["aspects"].([]any)[:1] }), "1 aspects, hparams.json has"},
		{"idf shorter than terms", edit(func(c map[string]any) {
			a := firstAspect(c)
			a["idf"] = a["idf"].([]any)[1:]
		}), "idf values for"},
		{"weights shorter", edit(func(c map[string]any) {
			a := firstAspect(c)
			a["weights"] = a["weights"].([]any)[3:]
		}), "weights for"},
		{"duplicate term", edit(func(c map[string]any) {
			a := firstAspect(c)
			terms := a["terms"].([]any)
			terms[1] = terms[0]
		}), "duplicate term"},
		{"negative idf", edit(func(c map[string]any) { firstAspect(c)["idf"].([]any)[0] = -1.0 }), "idf -1"},
		{"shifts of the wrong size", edit(func(c map[string]any) { c["shifts"] = []any{0.0} }), "1 shifts for"},
		{"huge number", strings.Replace(edit(func(c map[string]any) { firstAspect(c)["bias"] = 1.0 }), `"bias":1`, `"bias":1e999`, 1), "cannot unmarshal"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range []string{checkpoint.HyperparamsFile, checkpoint.TokenizerFile, checkpoint.ContextFile} {
				b, err := os.ReadFile(filepath.Join(out, name))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, checkpoint.LexicalFile)
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Load: %v; want one line with ErrCheckpoint, %s and %q", err, path, tc.want)
			}
		})
	}
	t.Run("no context.json", func(t *testing.T) {
		dir := t.TempDir()
		for _, name := range []string{checkpoint.HyperparamsFile, checkpoint.TokenizerFile, checkpoint.LexicalFile} {
			b, err := os.ReadFile(filepath.Join(out, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Load(dir); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), checkpoint.ContextFile) {
			t.Errorf("Load without context.json: %v", err)
		}
		if err := os.Remove(filepath.Join(dir, checkpoint.LexicalFile)); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), checkpoint.LexicalFile) {
			t.Errorf("Load without lexical.json: %v", err)
		}
	})
}
