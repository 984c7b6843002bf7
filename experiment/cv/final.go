package cv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/tracker"
)

// FinalFile is written into the final checkpoint (FinalOptions.Out): where its step count came from
// and what it was trained on.
const FinalFile = "final.json"

// noOpLearningRate is the learning rate of the single step run when the cross-validation chose
// step 0 (the warm start): the training loop needs at least one step and a positive learning rate,
// and AdamW moves each weight by about this much, far below float32 resolution of any weight in use,
// so the step scores as the warm start and the warm start stays the best checkpoint.
const noOpLearningRate = 1e-30

// FinalOptions are the parts of the final training that are not configuration.
type FinalOptions struct {
	// Data is the prepared directory the cross-validation ran on; Out the final checkpoint.
	Data, Out string
	// CV is the cross-validation directory (tracksum-train --task tracker --folds K --out CV).
	CV string
	// AllowChangedConfig accepts a configuration that differs from the cross-validation's (the
	// step count then comes from other settings), and is passed to tracker.Train.
	AllowChangedConfig bool
	// Log receives progress; os.Stderr when nil.
	Log io.Writer
}

// FinalReport is FinalOptions.Out/final.json.
type FinalReport struct {
	// CV is the cross-validation directory, FoldBestSteps the best-on-dev step of each fold.
	CV            string `json:"cv"`
	FoldBestSteps []int  `json:"fold_best_steps"`
	// Steps is the step count trained (the lower median of FoldBestSteps); WarmStart is true when it
	// is 0 and the checkpoint is the lexical warm start (false for the lexical-context tracker, which
	// has no training loop).
	Steps     int  `json:"steps"`
	WarmStart bool `json:"warm_start"`
	// Data is the prepared directory; Abstracts and Rows count what was trained on: every tracker
	// row of every split.
	Data      string `json:"data"`
	Abstracts int    `json:"abstracts"`
	Rows      int    `json:"rows"`
	// HeldOut says that no abstract was held out: report.json's "dev" figures are in-sample.
	HeldOut string `json:"held_out"`
}

// finalHeldOut is FinalReport.HeldOut.
const finalHeldOut = "none: every abstract of the prepared directory was trained on; report.json's dev figures are in-sample " +
	"(training abstracts); the estimate of this model's quality is the cross-validation's cv.json"

// ChosenSteps returns the step count the cross-validation in dir chose: the lower median over its
// folds of the best-on-dev step recorded in fold-k.json (a step some fold actually selected), and
// the folds' steps.
func ChosenSteps(dir string) (int, []int, error) {
	path := filepath.Join(dir, ReportFile)
	var rep Report
	err := atomicio.ReadJSON(path, &rep, false)
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return 0, nil, fmt.Errorf("cv: %w (not a finished cross-validation)", err)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("cv: %w", err)
	}
	if rep.Model != ModelTracker || rep.K < 2 {
		return 0, nil, fmt.Errorf("cv: %s: model %q with k = %d: the final tracker needs a --cv-model %s cross-validation", path, rep.Model, rep.K, ModelTracker)
	}
	steps := make([]int, rep.K)
	for k := range rep.K {
		r, err := readFoldResult(filepath.Join(dir, fmt.Sprintf("fold-%d.json", k)))
		if err != nil {
			return 0, nil, fmt.Errorf("cv: %w", err)
		}
		if r.Fold != k || r.BestStep < 0 || r.BestStep > r.Steps {
			return 0, nil, fmt.Errorf("cv: %s: fold %d, best step %d of %d steps", filepath.Join(dir, fmt.Sprintf("fold-%d.json", k)), r.Fold, r.BestStep, r.Steps)
		}
		steps[k] = r.BestStep
	}
	sorted := slices.Sorted(slices.Values(steps))
	return sorted[(len(sorted)-1)/2], steps, nil
}

// checkSameRun checks that the cross-validation in dir ran on the prepared directory data (same
// splits.json and manifest) and, unless allowChanged, with configuration cfg.
func checkSameRun(dir, data string, cfg *config.Config, allowChanged bool) error {
	path := filepath.Join(dir, SettingsFile)
	var s map[string]any
	if err := atomicio.ReadJSON(path, &s, false); err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	sum := func(file string) (string, error) {
		b, err := os.ReadFile(filepath.Join(data, file))
		if err != nil {
			return "", err
		}
		h := sha256.Sum256(b)
		return hex.EncodeToString(h[:]), nil
	}
	for key, file := range map[string]string{"splits_sha256": dataset.SplitsFile, "manifest_sha256": dataset.ManifestFile} {
		h, err := sum(file)
		if err != nil {
			return fmt.Errorf("cv: %w", err)
		}
		if s[key] != h {
			return fmt.Errorf("cv: %s was made on another prepared directory than %s (%s differs)", dir, data, file)
		}
	}
	// The cross-validation recorded only the tracker's section (Run, trackerRecord); one made by
	// an earlier build recorded the legacy form.
	rec, err := trackerRecord(cfg)
	if err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	h, legacy := sha256.Sum256(rec.YAML), sha256.Sum256(rec.Legacy)
	if got := s["config_sha256"]; got != hex.EncodeToString(h[:]) && got != hex.EncodeToString(legacy[:]) && !allowChanged {
		return fmt.Errorf("cv: %w: the configuration differs from the one %s was made with (%s); pass the same --config and flags, or --allow-changed-config",
			ErrSettings, dir, filepath.Join(dir, "config.yaml"))
	}
	return nil
}

// Final trains the final tracker: one model on every abstract of opts.Data (the train, dev and
// test splits together) for the step count the cross-validation opts.CV chose (ChosenSteps), with
// no early stopping and no held-out part. The training loop still needs a dev split for its
// bookkeeping: it is given the training rows themselves, evaluated only at the start and at the
// last step, so the checkpoint holds the last step (or the warm start, should it score higher
// in-sample, which is logged). The learning-rate schedule spans the chosen steps. When the
// cross-validation chose step 0, the final model is the (calibrated) lexical warm start fitted on
// every abstract. The lexical-context tracker (tracker.architecture) has no training loop: its
// folds record step 0 and the final model is that tracker fitted on every abstract. It writes
// opts.Out/final.json (FinalReport).
func Final(ctx context.Context, cfg *config.Config, opts FinalOptions) (*tracker.Model, *FinalReport, error) {
	log := opts.Log
	if log == nil {
		log = os.Stderr
	}
	if opts.Data == "" || opts.Out == "" || opts.CV == "" {
		return nil, nil, errors.New("cv: final: no prepared directory, output directory or cross-validation directory")
	}
	// The cross-validation's manifest is verified first: its fold records choose the step count.
	if _, err := open.Verify(ctx, opts.CV, "--folds-from", open.Options{Log: log}, checkpoint.KindEnsemble, checkpoint.KindCrossValidation); err != nil {
		return nil, nil, fmt.Errorf("cv: final: %w", err)
	}
	steps, foldSteps, err := ChosenSteps(opts.CV)
	if err != nil {
		return nil, nil, err
	}
	if err := checkSameRun(opts.CV, opts.Data, cfg, opts.AllowChangedConfig); err != nil {
		return nil, nil, err
	}
	tc := cfg.Tracker
	warmStart := tc.Lexical && tc.LexicalWarmStart
	lexical := tc.Architecture == config.TrackerLexicalContext
	if steps == 0 && !warmStart && !lexical {
		return nil, nil, fmt.Errorf("cv: final: %s chose step 0, but tracker.lexical and tracker.lexical_warm_start are not both on: there is no warm start to keep", opts.CV)
	}
	all, err := readRows(opts.Data, tc.MaxLen-1)
	if err != nil {
		return nil, nil, fmt.Errorf("cv: %w", err)
	}
	pmids := map[string]bool{}
	for _, k := range all.keys {
		pmids[k.PMID] = true
	}
	every := tracker.SplitData{Examples: all.examples, Keys: all.keys}
	data := &tracker.Data{Manifest: all.base.Manifest, Tokenizer: all.base.Tokenizer, Aspects: all.base.Aspects,
		Train: every, Dev: every}

	c := *cfg
	loop := &c.Tracker.Train
	loop.Patience = 0
	fmt.Fprintf(log, "cv: final: %s: best-on-dev steps per fold %v -> %d steps (lower median)\n", opts.CV, foldSteps, steps)
	switch {
	case lexical:
		fmt.Fprintf(log, "cv: final: tracker.architecture %s has no training loop: the final model is that tracker fitted on all abstracts\n", tc.Architecture)
	case steps == 0:
		loop.MaxSteps, loop.EvalEvery, loop.LearningRate = 1, 1, noOpLearningRate
		fmt.Fprintf(log, "cv: final: the cross-validation chose step 0: the final model is the calibrated lexical warm start "+
			"fitted on all abstracts (one no-op step at learning rate %g, since the training loop needs one)\n", noOpLearningRate)
	default:
		loop.MaxSteps, loop.EvalEvery = steps, steps
	}
	// Enough epochs that max_steps, not the epochs, ends training (each epoch has >= 1 step).
	loop.Epochs = max(loop.Epochs, loop.MaxSteps)
	fmt.Fprintf(log, "cv: final: training on all %d abstracts (%d rows, every split) of %s; no abstract is held out, so the "+
		"\"dev\" figures below are in-sample; the estimate of this model is %s\n", len(pmids), len(every.Examples), opts.Data,
		filepath.Join(opts.CV, ReportFile))
	if tc.Calibrate {
		fmt.Fprintf(log, "cv: final: tracker.calibrate is fitted on the training abstracts (in-sample)\n")
	}
	m, rep, err := tracker.Train(ctx, &c, opts.Data, opts.Out, tracker.TrainOptions{Log: log, Data: data,
		AllowChangedConfig: opts.AllowChangedConfig})
	if err != nil {
		return nil, nil, fmt.Errorf("cv: final: %w", err)
	}
	if want := min(steps, loop.MaxSteps); steps > 0 && rep.BestStep != want {
		fmt.Fprintf(log, "cv: final: note: the checkpoint holds step %d, which scored higher in-sample than step %d\n", rep.BestStep, want)
	}
	fr := &FinalReport{CV: opts.CV, FoldBestSteps: foldSteps, Steps: steps, WarmStart: !lexical && (steps == 0 || rep.BestStep == 0),
		Data: opts.Data, Abstracts: len(pmids), Rows: len(every.Examples), HeldOut: finalHeldOut}
	if err := atomicio.WriteJSON(filepath.Join(opts.Out, FinalFile), fr); err != nil {
		return nil, nil, fmt.Errorf("cv: %w", err)
	}
	// tracker.Train sealed the checkpoint; seal it again so that checkpoint.json stays last.
	if _, err := checkpoint.Seal(opts.Out, m.Hyperparams().Identity()); err != nil {
		return nil, nil, fmt.Errorf("cv: %w", err)
	}
	fmt.Fprintf(log, "cv: final: wrote %s: tracker trained on all %d abstracts, the CV's %d steps (%d run; %s)\n",
		opts.Out, len(pmids), steps, rep.Steps, FinalFile)
	return m, fr, nil
}
