package tracker

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// TestRescoreRequests checks that ScoreBatch's rescoring treats each request as its own instance:
// two requests with the same aspect in one batch get what each gets alone (Rescore of its rows
// keyed as one instance), not the rescoring of their union.
func TestRescoreRequests(t *testing.T) {
	logits, exs, keys := contextData(40, "t")
	c := fitContextRescorer(logits, exs, keys, 1, 0.5)
	probs := make([]float32, 16)
	for i := range probs {
		probs[i] = float32(sigmoid(logits[i]))
	}
	reqs := []Request{{Doc: make([]string, 8), Aspect: "a"}, {Doc: make([]string, 8), Aspect: "a"}}
	got := append([]float32(nil), probs...)
	if err := c.rescoreRequests(got, exs[:16], reqs); err != nil {
		t.Fatal(err)
	}
	for r := range 2 {
		want, err := c.Rescore(Logits(probs[8*r:8*r+8]), exs[8*r:8*r+8], keys[8*r:8*r+8])
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			if got[8*r+i] != w {
				t.Fatalf("request %d sentence %d: %v, want %v (rescored alone)", r, i, got[8*r+i], w)
			}
		}
	}
	union, err := c.Rescore(Logits(probs), exs[:16], make([]RowKey, 16))
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(union, got) {
		t.Error("rescoring the two requests as one instance gives the same scores: the test cannot tell them apart")
	}
}

// TestContextRescorerCheck covers the shapes and values Load refuses in context.json.
func TestContextRescorerCheck(t *testing.T) {
	ok := []float64{1, 0, 0, 0, 0, 0, 0}
	for _, tc := range []struct {
		desc string
		c    ContextRescorer
		want string
	}{
		{"valid", ContextRescorer{Weights: [][]float64{ok, ok}, Shifts: []float64{0, 1}}, ""},
		{"too few aspects", ContextRescorer{Weights: [][]float64{ok}, Shifts: []float64{0}}, "1 weight rows and 1 shifts for 2 aspects"},
		{"short weights", ContextRescorer{Weights: [][]float64{ok, ok[:6]}, Shifts: []float64{0, 0}}, "aspect 1 has 6 weights, want 7"},
		{"NaN", ContextRescorer{Weights: [][]float64{ok, {math.NaN(), 0, 0, 0, 0, 0, 0}}, Shifts: []float64{0, 0}}, "aspect 1 has a non-finite"},
		{"infinite shift", ContextRescorer{Weights: [][]float64{ok, ok}, Shifts: []float64{math.Inf(1), 0}}, "aspect 0 has a non-finite"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := tc.c.check(2)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestTrainWithContextRescoring trains the tiny tracker with lexical calibration and context
// rescoring: the checkpoint holds context.json, Load attaches it, Score/ScoreBatch (infer's path)
// and ScoreSplit apply it and agree, the report's figures are those of ScoreSplit, a checkpoint
// without the file scores with the network alone, a bad file is refused, and a rerun with
// rescoring off removes it.
func TestTrainWithContextRescoring(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model (~10 s)")
	}
	data := syntheticPrepared(t)
	out := filepath.Join(t.TempDir(), "run")
	cfg := tinyConfig(t)
	cfg.Tracker.LexicalCalibrationFolds, cfg.Tracker.ContextRescoring = 3, true
	m, rep, err := Train(context.Background(), cfg, data, out, TrainOptions{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if m.Context() == nil {
		t.Fatal("trained model has no context rescorer")
	}
	// Rerunning the finished run reports without fitting the inner folds again, and keeps the
	// same rescorer.
	var rerunLog bytes.Buffer
	again, _, err := Train(context.Background(), cfg, data, out, TrainOptions{Log: &rerunLog})
	if err != nil {
		t.Fatal(err)
	}
	if log := rerunLog.String(); strings.Contains(log, "inner folds") || !strings.Contains(log, "already finished") {
		t.Errorf("rerun of a finished run fitted again or did not say it was finished:\n%s", log)
	}
	if !reflect.DeepEqual(again.Context(), m.Context()) {
		t.Errorf("rerun rescorer %+v, trained %+v", again.Context(), m.Context())
	}
	loaded, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(loaded.Context(), m.Context()) {
		t.Fatalf("loaded rescorer %+v, trained %+v", loaded.Context(), m.Context())
	}
	d, err := ReadData(data, cfg.Tracker.MaxLen-1)
	if err != nil {
		t.Fatal(err)
	}
	split, err := loaded.ScoreSplit(d.Dev)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := loaded.ScoreExamples(d.Dev.Examples)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(split, raw) {
		t.Error("ScoreSplit equals the network's scores: the rescorer was not applied")
	}
	if got := EvaluateScores(d.Dev, split, cfg.Tracker.Threshold); !reflect.DeepEqual(got, rep.Dev) {
		t.Errorf("report dev figures %+v, ScoreSplit's %+v", rep.Dev.Sentence, got.Sentence)
	}

	// Score on an abstract's raw sentences (what infer and serve call) = ScoreSplit's rows.
	docs := devDocs(t, data)
	byRow := map[RowKey]float32{}
	for i, k := range d.Dev.Keys {
		byRow[k] = split[i]
	}
	checked := 0
	for key, doc := range docs {
		probs, err := loaded.Score(doc, key[1])
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range probs {
			if w := byRow[RowKey{PMID: key[0], Aspect: key[1], SentenceIndex: i}]; math.Abs(float64(p-w)) > 1e-5 {
				t.Fatalf("%s/%s sentence %d: Score %v, ScoreSplit %v", key[0], key[1], i, p, w)
			}
		}
		if checked++; checked == 20 {
			break
		}
	}

	// Without context.json (a checkpoint from before, or trained with rescoring off) the
	// network's scores are used unchanged.
	old := filepath.Join(t.TempDir(), "old")
	copyCheckpoint(t, out, old)
	if err := os.Remove(filepath.Join(old, checkpoint.ContextFile)); err != nil {
		t.Fatal(err)
	}
	plain, err := Load(old)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Context() != nil {
		t.Fatal("checkpoint without context.json loaded a rescorer")
	}
	if got, err := plain.ScoreSplit(d.Dev); err != nil || !reflect.DeepEqual(got, raw) {
		t.Errorf("ScoreSplit without a rescorer differs from the network's scores (%v)", err)
	}

	// A context.json that does not fit the model is refused, naming the file.
	for _, bad := range []string{`{"weights": [[1,2,3]], "shifts": [0]}`, `{"weights": [], "shifts": [], "bias": 1}`, `not json`} {
		if err := os.WriteFile(filepath.Join(old, checkpoint.ContextFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(old); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), checkpoint.ContextFile) {
			t.Errorf("context.json %q: %v", bad, err)
		}
	}

	// Rerun with rescoring off (config change allowed): the finished run is not retrained and the
	// stale rescorer is removed, so Load scores as the config says.
	off := *cfg
	off.Tracker.ContextRescoring = false
	if _, _, err := Train(context.Background(), &off, data, out, TrainOptions{Log: testLog(t), AllowChangedConfig: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, checkpoint.ContextFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("context.json after a rerun with rescoring off: %v", err)
	}
}

// devDocs returns the sentences of every dev instance of the prepared directory.
func devDocs(t *testing.T, data string) map[[2]string][]string {
	t.Helper()
	docs := map[[2]string][]string{}
	for row, err := range dataset.ReadShards[dataset.TrackerRow](data, dataset.TaskTracker, dataset.SplitDev) {
		if err != nil {
			t.Fatal(err)
		}
		key := [2]string{row.PMID, row.Aspect}
		doc := docs[key]
		for len(doc) < int(row.DocLength) {
			doc = append(doc, "")
		}
		doc[row.SentenceIndex] = row.Sentence
		docs[key] = doc
	}
	return docs
}

// copyCheckpoint copies the files Load reads from src to dst.
func copyCheckpoint(t *testing.T, src, dst string) {
	t.Helper()
	for _, f := range []string{checkpoint.HyperparamsFile, checkpoint.TokenizerFile, checkpoint.ContextFile,
		filepath.Join(checkpoint.BestDir, checkpoint.BestVariables)} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
