package cv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/checkpoint/checkpointtest"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/tracker"
)

// tinyCV cross-validates the tracker of the tiny profile on the built-in sample with 3 folds and
// returns the config, the prepared directory and the cross-validation directory.
func tinyCV(t *testing.T) (*config.Config, string, string) {
	t.Helper()
	cfg := tinyConfig(t)
	data := preparedWithFolds(t, cfg, 3)
	out := filepath.Join(t.TempDir(), "cv")
	if _, err := Run(context.Background(), cfg, Options{Data: data, Out: out, Folds: 3, Log: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	return cfg, data, out
}

// TestEnsembleAndFinal checks infer's ensemble of the fold checkpoints (scores = the mean of the
// folds' scores, infer end to end, refused inconsistent folds) and the final training (--final
// --folds-from) on one tiny cross-validation.
func TestEnsembleAndFinal(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 3 tiny trackers and 2 final ones (~30 s)")
	}
	cfg, data, cvDir := tinyCV(t)
	t.Run("ensemble", func(t *testing.T) { testEnsemble(t, cfg, data, cvDir) })
	t.Run("final", func(t *testing.T) { testFinal(t, cfg, data, cvDir) })
}

func testEnsemble(t *testing.T, cfg *config.Config, data, cvDir string) {
	insts, err := readInstances(data)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []tracker.Request
	for _, in := range insts {
		reqs = append(reqs, tracker.Request{Doc: in.Document, Aspect: in.Aspect})
	}
	if !infer.IsCrossValidation(cvDir) || infer.IsCrossValidation(filepath.Join(cvDir, "fold-0")) {
		t.Fatal("IsCrossValidation: wrong answer for the CV directory or a fold checkpoint")
	}
	e, err := infer.LoadEnsemble(cvDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Members()) != 3 {
		t.Fatalf("%d members, want 3", len(e.Members()))
	}
	testEnsembleLoadsWhatOpenVerified(t, cvDir)
	got, err := e.ScoreBatch(reqs)
	if err != nil {
		t.Fatal(err)
	}
	var folds [][][]float32
	for k := range 3 {
		m, err := tracker.Load(filepath.Join(cvDir, fmt.Sprintf("fold-%d", k)))
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.ScoreBatch(reqs)
		if err != nil {
			t.Fatal(err)
		}
		folds = append(folds, s)
	}
	differs := false // the folds must disagree somewhere, or the mean proves nothing
	for i := range reqs {
		for j := range reqs[i].Doc {
			mean := (float64(folds[0][i][j]) + float64(folds[1][i][j]) + float64(folds[2][i][j])) / 3
			if math.Abs(float64(got[i][j])-mean) > 1e-6 {
				t.Fatalf("request %d sentence %d: ensemble %v, mean of the folds %v", i, j, got[i][j], mean)
			}
			differs = differs || math.Abs(float64(folds[0][i][j])-mean) > 1e-3
		}
	}
	if !differs {
		t.Fatal("the fold checkpoints score alike: the test cannot tell the mean from one fold")
	}

	// infer end to end with --tracker CV: the test split, track-only and with the extractive
	// summarizer, scores from the ensemble and indexes at the threshold.
	pred := filepath.Join(t.TempDir(), "pred.jsonl")
	var log bytes.Buffer
	st, err := infer.Run(context.Background(), cfg, infer.Options{Tracker: cvDir, Summarizer: infer.ExtractiveSummarizer,
		Input: data, Split: dataset.SplitTest, Out: pred, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "ensemble of the 3 fold checkpoints") {
		t.Errorf("infer log does not name the ensemble:\n%s", log.String())
	}
	preds := readPredictions(t, pred)
	if len(preds) != st.Predictions || len(preds) == 0 {
		t.Fatalf("%d predictions, stats say %d", len(preds), st.Predictions)
	}
	for _, p := range preds {
		in := insts[[2]string{p.PMID, p.Aspect}]
		want, err := e.ScoreBatch([]tracker.Request{{Doc: in.Document, Aspect: p.Aspect}})
		if err != nil {
			t.Fatal(err)
		}
		var idx []int
		for j, s := range p.Scores {
			if math.Abs(float64(s-want[0][j])) > 1e-5 {
				t.Fatalf("%s/%s sentence %d: infer %v, ensemble %v", p.PMID, p.Aspect, j, s, want[0][j])
			}
			if float64(s) >= e.Threshold() {
				idx = append(idx, j)
			}
		}
		if !slices.Equal(idx, p.Indexes) && !(len(idx) == 0 && len(p.Indexes) == 0) {
			t.Fatalf("%s/%s: indexes %v, scores at the threshold give %v", p.PMID, p.Aspect, p.Indexes, idx)
		}
	}

	// Inconsistent or incomplete folds are refused with the fold named.
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, fold string) func()
		want   string
	}{
		{"missing fold", func(t *testing.T, fold string) func() {
			mustRename(t, fold, fold+".away")
			return func() { mustRename(t, fold+".away", fold) }
		}, "fold 2"},
		{"other aspect names", func(t *testing.T, fold string) func() {
			return editFile(t, filepath.Join(fold, checkpoint.HyperparamsFile), func(b []byte) []byte {
				var hp map[string]any
				if err := json.Unmarshal(b, &hp); err != nil {
					t.Fatal(err)
				}
				names := hp["aspect_names"].([]any)
				names[0] = "Something else"
				out, _ := json.Marshal(hp)
				return out
			})
		}, "aspects"},
		{"other tokenizer", func(t *testing.T, fold string) func() {
			return editFile(t, filepath.Join(fold, checkpoint.TokenizerFile), func(b []byte) []byte { return append(b, '\n') })
		}, "another tokenizer"},
		{"not a tracker CV", func(t *testing.T, fold string) func() {
			return editFile(t, filepath.Join(cvDir, ReportFile), func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"model": "tracker"`), []byte(`"model": "lexical"`), 1)
			})
		}, "model \"lexical\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			undo := tc.break_(t, filepath.Join(cvDir, "fold-2"))
			defer undo()
			_, err := infer.LoadEnsemble(cvDir)
			if !errors.Is(err, infer.ErrEnsemble) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrEnsemble naming %q", err, tc.want)
			}
		})
	}
	if _, err := infer.LoadEnsemble(cvDir); err != nil {
		t.Fatalf("after undoing the damage: %v", err)
	}
}

func testFinal(t *testing.T, cfg *config.Config, data, cvDir string) {
	ctx := context.Background()
	steps, foldSteps, err := ChosenSteps(cvDir)
	if err != nil {
		t.Fatal(err)
	}
	if sorted := slices.Sorted(slices.Values(foldSteps)); len(foldSteps) != 3 || steps != sorted[1] {
		t.Fatalf("chosen %d from %v: want the median", steps, foldSteps)
	}
	for _, tc := range []struct {
		best []int
		want int
	}{{[]int{7, 3, 5}, 5}, {[]int{0, 4, 0}, 0}, {[]int{6, 6, 2}, 6}} {
		if got, _, err := ChosenSteps(cvWithBestSteps(t, cvDir, tc.best)); err != nil || got != tc.want {
			t.Errorf("best steps %v: chosen %d (%v), want %d", tc.best, got, err, tc.want)
		}
	}
	all, err := readRows(data, cfg.Tracker.MaxLen-1)
	if err != nil {
		t.Fatal(err)
	}

	// A CV that chose 5 steps: the final trains 5 steps on every row, holding nothing out.
	out := filepath.Join(t.TempDir(), "final")
	var log bytes.Buffer
	m, fr, err := Final(ctx, cfg, FinalOptions{Data: data, Out: out, CV: cvWithBestSteps(t, cvDir, []int{7, 3, 5}), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if fr.Steps != 5 || fr.Abstracts != cfg.Prepare.SampleSize || fr.Rows != len(all.examples) {
		t.Errorf("final.json %+v: want 5 steps on %d abstracts, %d rows", fr, cfg.Prepare.SampleSize, len(all.examples))
	}
	var rep tracker.Report
	if err := atomicio.ReadJSON(filepath.Join(out, checkpoint.ReportFile), &rep, true); err != nil {
		t.Fatal(err)
	}
	if rep.Steps != 5 || rep.Test != nil {
		t.Errorf("report.json: %d steps (want 5), test %+v (want none: nothing is held out)", rep.Steps, rep.Test)
	}
	if fr.WarmStart != (rep.BestStep == 0) || (rep.BestStep != 0 && rep.BestStep != 5) {
		t.Errorf("best step %d, warm start %v", rep.BestStep, fr.WarmStart)
	}
	if !strings.Contains(log.String(), "in-sample") {
		t.Errorf("the log does not say the dev figures are in-sample:\n%s", log.String())
	}
	if _, err := os.Stat(filepath.Join(out, FinalFile)); err != nil {
		t.Error(err)
	}
	loaded, err := tracker.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.ScoreSplit(tracker.SplitData{Examples: all.examples[:50]})
	b, _ := loaded.ScoreSplit(tracker.SplitData{Examples: all.examples[:50]})
	if !slices.Equal(a, b) {
		t.Error("the loaded final checkpoint scores differently from the returned model")
	}

	// Step 0 chosen: the final model is the warm start (best step 0, said in the log).
	log.Reset()
	out0 := filepath.Join(t.TempDir(), "final-0")
	if _, fr, err = Final(ctx, cfg, FinalOptions{Data: data, Out: out0, CV: cvWithBestSteps(t, cvDir, []int{0, 0, 3}), Log: &log}); err != nil {
		t.Fatal(err)
	}
	if err := atomicio.ReadJSON(filepath.Join(out0, checkpoint.ReportFile), &rep, true); err != nil {
		t.Fatal(err)
	}
	if fr.Steps != 0 || !fr.WarmStart || rep.BestStep != 0 || !strings.Contains(log.String(), "calibrated lexical warm start") {
		t.Errorf("step 0: final.json %+v, best step %d, log:\n%s", fr, rep.BestStep, log.String())
	}

	// Refused: another configuration, no CV.
	other := *cfg
	other.Seed++
	if _, _, err := Final(ctx, &other, FinalOptions{Data: data, Out: filepath.Join(t.TempDir(), "x"), CV: cvDir}); !errors.Is(err, ErrSettings) {
		t.Errorf("other config: %v", err)
	}
	if _, _, err := Final(ctx, cfg, FinalOptions{Data: data, Out: filepath.Join(t.TempDir(), "x"), CV: data}); !errors.Is(err, checkpoint.ErrCheckpoint) || !strings.Contains(err.Error(), data+" is not a checkpoint") {
		t.Errorf("no CV: %v", err)
	}
}

// cvWithBestSteps copies the reports of the cross-validation cvDir (not its checkpoints, which
// Final does not read) with fold k's best step set to best[k].
func cvWithBestSteps(t *testing.T, cvDir string, best []int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cv")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := []string{ReportFile, SettingsFile}
	for k := range best {
		files = append(files, fmt.Sprintf("fold-%d.json", k))
	}
	for i, f := range files {
		b, err := os.ReadFile(filepath.Join(cvDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if i >= 2 {
			var r map[string]any
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			r["best_step"], r["steps"] = best[i-2], max(best[i-2], 10)
			b, _ = json.Marshal(r)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// editFile rewrites path with edit and returns the function that restores it. edit gets a copy,
// so an edit made in place cannot change what the restore writes back.
func editFile(t *testing.T, path string, edit func([]byte) []byte) func() {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edit(bytes.Clone(old)), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.WriteFile(path, old, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// testEnsembleLoadsWhatOpenVerified checks that the ensemble's opener reads cv.json and each
// fold's metadata and tokenizer from the bytes Open verified (the folds' member manifests): files
// changed on disk after Open are not read again.
func testEnsembleLoadsWhatOpenVerified(t *testing.T, cvDir string) {
	t.Helper()
	ctx := context.Background()
	m, err := checkpoint.Open(ctx, cvDir)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{ReportFile}
	for k := range 3 {
		fold := fmt.Sprintf("fold-%d", k)
		files = append(files, filepath.Join(fold, checkpoint.HyperparamsFile), filepath.Join(fold, checkpoint.TokenizerFile))
	}
	defer checkpointtest.BreakFiles(t, cvDir, files...)()
	c, err := open.Load(ctx, m, open.Options{})
	if err != nil {
		t.Fatalf("loading the opened cross-validation read its files again: %v", err)
	}
	if e, ok := c.Model.(*infer.Ensemble); !ok || len(e.Members()) != 3 {
		t.Fatalf("opened %T, want an ensemble of 3 folds", c.Model)
	}
}
