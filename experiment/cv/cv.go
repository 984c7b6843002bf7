// Package cv cross-validates the tracker by abstract: for each fold k of a prepared directory made
// with `tracksum-prepare --folds K`, it trains on the other folds (less a dev part carved from them
// by PMID, on which the model is selected), scores fold k, and writes CK/cv.json (per-fold figures
// and their mean ± sd) with the out-of-fold predictions (CK/oof.jsonl) and the matching references
// (CK/references.jsonl) that `tracksum-eval` scores directly. Every model run on the same prepared
// directory sees the same folds and the same dev parts, so two runs compare pairwise
// (`tracksum-eval compare`).
//
// Models: ModelTracker (the configured tracker, trained with tracker.Train into CK/fold-k),
// ModelLexical (the strong lexical baseline, tracker.Textbook: word 1-2-gram TF-IDF + three
// position features + balanced logistic regression, C = 10, whatever the tracker's configuration)
// and ModelLexicalCalibrated and ModelLexicalContext (that baseline with per-aspect calibration
// shifts, or with the context rescorer, stacked on it: ablations).
// The predictions copy the tracked sentences as the summary ("tracker + copy"), or
// "Unknown." when none is tracked.
//
// With tracker.lexical_calibration_folds the tracker's warm start carries per-aspect bias shifts
// chosen by an inner K-fold of the fold's train part; with tracker.context_rescoring each fold's
// scores are rescored by a tracker.ContextRescorer fitted on that train part too
// (stored in the fold checkpoint CK/fold-k/context.json, which infer applies, and recorded in
// CK/fold-k.json). Neither reads the fold's dev part or its held-out fold.
//
// A finished fold (CK/fold-k.json) is not redone when the command is run again; an interrupted
// tracker fold resumes from its checkpoint's resume point.
//
// Final (tracksum-train --task tracker --final --folds-from CK) then trains one tracker on every
// abstract for the step count the folds chose (ChosenSteps); infer --tracker CK scores with the
// mean of the fold checkpoints (infer.LoadEnsemble).
//
// # Example
//
//	rep, err := cv.Run(ctx, cfg, cv.Options{Data: "prepared/tracsum", Out: "checkpoints/cv-tracker", Folds: 5})
package cv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/training"
)

// Models of the harness (Options.Model).
const (
	// ModelTracker is the tracker of cfg.Tracker, trained per fold.
	ModelTracker = "tracker"
	// ModelLexical is the strong lexical baseline (tracker.Textbook, fitted on each fold's train
	// part; the dev part is not read).
	ModelLexical = "lexical"
	// ModelLexicalCalibrated is ModelLexical with per-aspect logit shifts chosen on its
	// out-of-fold logits of LexicalContextFolds inner folds of the train part (an ablation).
	ModelLexicalCalibrated = "lexical-calibrated"
	// ModelLexicalContext is ModelLexical with a context rescorer fitted on its out-of-fold logits
	// of LexicalContextFolds inner folds of the train part (tracker.FitLexicalBaseline).
	ModelLexicalContext = "lexical-context"
)

// trackerModels are the models Run cross-validates.
var trackerModels = []string{ModelTracker, ModelLexical, ModelLexicalCalibrated, ModelLexicalContext}

// LexicalContextFolds is the number of inner folds of ModelLexicalCalibrated's shifts and
// ModelLexicalContext's rescorer.
const LexicalContextFolds = 5

// Files written into the output directory.
const (
	ReportFile      = checkpoint.CrossValidationFile
	PredictionsFile = "oof.jsonl"
	ReferencesFile  = "references.jsonl"
	SettingsFile    = training.CrossValidationMarker
)

// DefaultDevShare is the share of the training folds' abstracts carved out as the dev part.
const DefaultDevShare = 0.1

// devStream is the PCG stream of the dev carving (seeded with cfg.Seed and the fold).
const devStream = 0xde5

// ErrSettings marks a rerun into an output directory made with other settings.
var ErrSettings = errors.New("cross-validation settings differ")

// Options are the parts of a cross-validation run that are not configuration.
type Options struct {
	// Data is the prepared directory; it must have folds (prepare --folds K).
	Data string
	// Out is the output directory (CK).
	Out string
	// Folds, when > 0, must equal the number of folds of Data (a guard against a wrong directory).
	Folds int
	// Model is one of trackerModels (ModelTracker when empty).
	Model string
	// DevShare is the share of the training folds' abstracts used as dev; 0 means DefaultDevShare.
	DevShare float64
	// AllowChangedConfig is passed to tracker.Train for the fold checkpoints.
	AllowChangedConfig bool
	// Log receives progress; os.Stderr when nil.
	Log io.Writer
}

// Stat is the mean and sample standard deviation (n-1) of a figure over the folds.
type Stat struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
}

// FoldResult is what one fold produced (CK/fold-k.json).
type FoldResult struct {
	Fold int `json:"fold"`
	// TrainAbstracts, DevAbstracts and TestAbstracts count the PMIDs of each part.
	TrainAbstracts int `json:"train_abstracts"`
	DevAbstracts   int `json:"dev_abstracts"`
	TestAbstracts  int `json:"test_abstracts"`
	// Steps and BestStep come from the tracker's training (0 for the lexical baseline).
	Steps    int `json:"steps"`
	BestStep int `json:"best_step"`
	// CalibrationShifts are ModelLexicalCalibrated's per-aspect logit shifts (aspect-set order);
	// the tracker logs its own.
	CalibrationShifts []float64 `json:"calibration_shifts,omitempty"`
	// Context is the fold's context rescorer (tracker.context_rescoring, or ModelLexicalContext's),
	// fitted on the train part.
	Context      *tracker.ContextRescorer `json:"context,omitempty"`
	TrainSeconds float64                  `json:"train_seconds"`
	Dev          *tracker.SplitReport     `json:"dev"`
	Test         *tracker.SplitReport     `json:"test"`
	// Scores holds the probability of every test row, in Keys order.
	Keys   []tracker.RowKey `json:"keys,omitempty"`
	Scores []float32        `json:"scores,omitempty"`
	// Rows identifies the abstracts of the fold's train, dev and test parts, and Checkpoint the
	// sha256 of the files of its checkpoint fold-k/ (tracker model): a rerun verifies both before
	// it takes the fold as done (issue 22 defect 9). Absent from records of earlier builds.
	Rows       *training.Rows    `json:"rows,omitempty"`
	Checkpoint map[string]string `json:"checkpoint_sha256,omitempty"`
}

// Report is CK/cv.json.
type Report struct {
	Model     string  `json:"model"`
	Data      string  `json:"data"`
	K         int     `json:"k"`
	FoldSeed  int64   `json:"fold_seed"`
	Seed      int64   `json:"seed"`
	DevShare  float64 `json:"dev_share"`
	Threshold float64 `json:"threshold"`
	// Folds holds each fold's dev and test figures (the scores are left out).
	Folds []FoldResult `json:"folds"`
	// Summary holds mean ± sd over the folds' test figures: sentence_precision, sentence_recall,
	// sentence_f1, sentence_auc, exact_match, instance_f1 and f1/ASPECT per aspect.
	Summary map[string]Stat `json:"summary"`
	// Pooled scores all out-of-fold predictions together.
	Pooled      *tracker.SplitReport `json:"pooled"`
	Predictions string               `json:"predictions"`
	References  string               `json:"references"`
	// WallSeconds is the time of this invocation (resumed folds cost nothing).
	WallSeconds float64 `json:"wall_seconds"`
}

// Run cross-validates opts.Model on opts.Data and writes opts.Out (see the package comment).
func Run(ctx context.Context, cfg *config.Config, opts Options) (*Report, error) {
	start := time.Now()
	folds, err := startRun(&opts, "", trackerModels...)
	if err != nil {
		return nil, err
	}
	log := opts.Log
	tc := cfg.Tracker
	all, err := readRows(opts.Data, tc.MaxLen-1)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	for _, k := range all.keys {
		if folds.Fold(k.PMID) < 0 {
			return nil, fmt.Errorf("cv: %s: PMID %s of the tracker shards is in no fold of %s", opts.Data, k.PMID, dataset.SplitsFile)
		}
	}
	insts, err := readInstances(opts.Data)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}

	lock, err := lockOut(opts.Out)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	// Recorded with only the tracker's section (as the pipeline records its tracker part), so
	// that a tracker cross-validation run on its own can serve as a pipeline's OUT/tracker.
	if err := checkSettings(opts, cfg); err != nil {
		return nil, err
	}

	results := make([]FoldResult, folds.K)
	for k := range folds.K {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cv: %w", err)
		}
		if results[k], err = trackerFold(ctx, cfg, opts, folds, all, k); err != nil {
			return nil, err
		}
	}

	preds, refs, pooled, err := outOfFold(results, all, insts, tc.Threshold)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	if err := atomicio.WriteJSONL(filepath.Join(opts.Out, PredictionsFile), preds); err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	if err := atomicio.WriteJSONL(filepath.Join(opts.Out, ReferencesFile), refs); err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	rep := &Report{Model: opts.Model, Data: opts.Data, K: folds.K, FoldSeed: folds.Seed, Seed: cfg.Seed,
		DevShare: opts.DevShare, Threshold: tc.Threshold, Pooled: pooled, Predictions: PredictionsFile,
		References: ReferencesFile, Summary: summarize(results)}
	for _, r := range results {
		r.Keys, r.Scores = nil, nil
		rep.Folds = append(rep.Folds, r)
	}
	rep.WallSeconds = time.Since(start).Seconds()
	if err := writeReport(opts.Out, rep); err != nil {
		return nil, err
	}
	s := rep.Summary
	fmt.Fprintf(log, "cv: %s, %d folds: sentence F1 %.4f ± %.4f (P %.4f R %.4f AUC %.4f), exact-set match %.4f ± %.4f; pooled F1 %.4f\n",
		opts.Model, folds.K, s["sentence_f1"].Mean, s["sentence_f1"].SD, s["sentence_precision"].Mean, s["sentence_recall"].Mean,
		s["sentence_auc"].Mean, s["exact_match"].Mean, s["exact_match"].SD, pooled.Sentence["f1"])
	return rep, nil
}

// trackerFold returns fold k's result: the one saved in fold-k.json when it still holds (same
// rows, same checkpoint), else the fold trained (or fitted) again, scored and saved.
func trackerFold(ctx context.Context, cfg *config.Config, opts Options, folds *dataset.Folds, all *rows, k int) (FoldResult, error) {
	log := opts.Log
	path := filepath.Join(opts.Out, fmt.Sprintf("fold-%d.json", k))
	foldDir := filepath.Join(opts.Out, fmt.Sprintf("fold-%d", k))
	data, parts := all.partition(folds, k, opts.DevShare, cfg.Seed)
	rows := data.Rows()
	if r, err := readFoldResult(path); err == nil {
		redo, err := verifyFold(r, path, foldDir, rows, opts.Model == ModelTracker)
		if err != nil {
			return FoldResult{}, err
		}
		if redo == "" {
			fmt.Fprintf(log, "cv: fold %d/%d already done (%s): test sentence F1 %.4f\n", k+1, folds.K, path, r.Test.Sentence["f1"])
			return *r, nil
		}
		fmt.Fprintf(log, "cv: fold %d/%d: %s; training it again\n", k+1, folds.K, redo)
	} else if !errors.Is(err, os.ErrNotExist) {
		return FoldResult{}, fmt.Errorf("cv: %w", err)
	}
	fmt.Fprintf(log, "cv: fold %d/%d (%s): %d train, %d dev, %d test abstracts\n", k+1, folds.K, opts.Model,
		parts[0], parts[1], parts[2])
	r := FoldResult{Fold: k, TrainAbstracts: parts[0], DevAbstracts: parts[1], TestAbstracts: parts[2],
		Keys: data.Test.Keys, Rows: &rows}
	t0 := time.Now()
	devProbs, err := fitTrackerFold(ctx, cfg, opts, k, data, foldDir, &r)
	if err != nil {
		return r, err
	}
	r.TrainSeconds = time.Since(t0).Seconds()
	if opts.Model == ModelTracker {
		if r.Checkpoint, err = checkpointSums(foldDir); err != nil {
			return r, fmt.Errorf("cv: fold %d: %w", k, err)
		}
	}
	tc := cfg.Tracker
	r.Dev = tracker.EvaluateScores(data.Dev, devProbs, tc.Threshold)
	r.Test = tracker.EvaluateScores(data.Test, r.Scores, tc.Threshold)
	if err := atomicio.WriteJSON(path, &r); err != nil {
		return r, fmt.Errorf("cv: %w", err)
	}
	fmt.Fprintf(log, "cv: fold %d/%d: test sentence F1 %.4f (P %.4f R %.4f, AUC %.4f), exact-set match %.4f, %.0fs\n",
		k+1, folds.K, r.Test.Sentence["f1"], r.Test.Sentence["precision"], r.Test.Sentence["recall"],
		r.Test.Sentence["auc"], r.Test.ExactMatch, r.TrainSeconds)
	return r, nil
}

// fitTrackerFold trains (opts.Model tracker, into foldDir) or fits (the lexical models) fold k's
// tracker on data, records in r what it learnt and its held-out scores, and returns its dev scores.
func fitTrackerFold(ctx context.Context, cfg *config.Config, opts Options, k int, data *tracker.Data, foldDir string, r *FoldResult) ([]float32, error) {
	var devProbs []float32
	switch opts.Model {
	case ModelLexical, ModelLexicalCalibrated, ModelLexicalContext:
		stage := map[string]tracker.LexicalStage{ModelLexical: tracker.StageNone,
			ModelLexicalCalibrated: tracker.StageCalibration, ModelLexicalContext: tracker.StageContext}[opts.Model]
		b, err := tracker.FitLexicalBaseline(data, stage, LexicalContextFolds, cfg.Seed)
		if err != nil {
			return nil, fmt.Errorf("cv: fold %d: %w", k, err)
		}
		r.CalibrationShifts, r.Context = b.Shifts, b.Context
		if devProbs, err = b.ScoreSplit(data.Dev); err != nil {
			return nil, fmt.Errorf("cv: fold %d: %w", k, err)
		}
		if r.Scores, err = b.ScoreSplit(data.Test); err != nil {
			return nil, fmt.Errorf("cv: fold %d: %w", k, err)
		}
	default:
		// The fold checkpoint carries the context rescorer (tracker.context_rescoring), and
		// ScoreSplit scores as infer does with it: OOF scores = infer --tracker fold-k.
		m, rep, err := tracker.Train(ctx, cfg, opts.Data, foldDir,
			tracker.TrainOptions{Log: opts.Log, Data: data, AllowChangedConfig: opts.AllowChangedConfig})
		if err != nil {
			return nil, fmt.Errorf("cv: fold %d: %w", k, err)
		}
		r.Steps, r.BestStep, r.Context = rep.Steps, rep.BestStep, m.Context()
		if devProbs, err = m.ScoreSplit(data.Dev); err != nil {
			return nil, fmt.Errorf("cv: fold %d: %w", k, err)
		}
		if r.Scores, err = m.ScoreSplit(data.Test); err != nil {
			return nil, fmt.Errorf("cv: fold %d: %w", k, err)
		}
	}
	return devProbs, nil
}

// rows are all tracker rows of a prepared directory (train, dev and test splits together).
type rows struct {
	base     *tracker.Data
	examples []tracker.Example
	keys     []tracker.RowKey
}

func readRows(dir string, maxTokens int) (*rows, error) {
	d, err := tracker.ReadData(dir, maxTokens)
	if err != nil {
		return nil, err
	}
	r := &rows{base: d}
	for _, s := range []tracker.SplitData{d.Train, d.Dev, d.Test} {
		r.examples = append(r.examples, s.Examples...)
		r.keys = append(r.keys, s.Keys...)
	}
	return r, nil
}

// Parts of a fold (carve): every PMID is in exactly one.
const (
	PartTrain = iota
	PartDev
	PartTest
)

// carve assigns every PMID of folds to a part of fold k: PartTest for fold k, PartDev for a seeded
// share of the other folds' PMIDs (the same for every model cross-validated with the same seed
// and dev share, so tracker and summarizer folds have the same dev parts), PartTrain for the rest.
// counts holds the abstracts of each part.
func carve(folds *dataset.Folds, k int, devShare float64, seed int64) (part map[string]int, counts [3]int) {
	var others []string
	for i, ids := range folds.IDs {
		if i != k {
			others = append(others, ids...)
		}
	}
	slices.Sort(others)
	rng := rand.New(rand.NewPCG(uint64(seed), devStream+uint64(k)))
	rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	nDev := min(max(1, int(math.Round(float64(len(others))*devShare))), len(others)-1)
	part = map[string]int{}
	for i, id := range others {
		part[id] = PartTrain
		if i < nDev {
			part[id] = PartDev
		}
	}
	for _, id := range folds.IDs[k] {
		part[id] = PartTest
	}
	return part, [3]int{len(others) - nDev, nDev, len(folds.IDs[k])}
}

// partition returns the training data of fold k: the test part is fold k, the dev part a seeded
// share of the other folds' PMIDs (carve), the train part the rest. parts counts their abstracts.
func (r *rows) partition(folds *dataset.Folds, k int, devShare float64, seed int64) (*tracker.Data, [3]int) {
	part, counts := carve(folds, k, devShare, seed)
	d := &tracker.Data{Manifest: r.base.Manifest, Tokenizer: r.base.Tokenizer, Aspects: r.base.Aspects}
	for i, key := range r.keys {
		dst := &d.Train
		switch part[key.PMID] {
		case PartTest:
			dst = &d.Test
		case PartDev:
			dst = &d.Dev
		}
		dst.Examples = append(dst.Examples, r.examples[i])
		dst.Keys = append(dst.Keys, key)
	}
	return d, counts
}

// readInstances reads every instance (document, reference summary and citations) from the
// end_to_end shards, negatives included, keyed by (PMID, aspect).
func readInstances(dir string) (map[[2]string]dataset.Instance, error) {
	out := map[[2]string]dataset.Instance{}
	for _, split := range dataset.Splits {
		for row, err := range dataset.ReadShards[dataset.EndToEndRow](dir, dataset.TaskEndToEnd, split) {
			if err != nil {
				return nil, err
			}
			idx := make([]int, len(row.Citations))
			for i, c := range row.Citations {
				idx[i] = int(c)
			}
			out[[2]string{row.PMID, row.Aspect}] = dataset.Instance{PMID: row.PMID, Aspect: row.Aspect,
				Document: row.Document, Summary: row.Summary, Indexes: idx}
		}
	}
	return out, nil
}

// outOfFold joins the folds' test scores into one prediction per instance (tracked sentences at
// threshold, copied as the summary), the matching references, and the pooled figures. Records are
// ordered by PMID, then by the aspect order of the aspect set.
func outOfFold(results []FoldResult, all *rows, insts map[[2]string]dataset.Instance, threshold float64) ([]dataset.Prediction, []dataset.Instance, *tracker.SplitReport, error) {
	type scored struct {
		index int
		p     float32
	}
	byInst := map[[2]string][]scored{}
	var pooled tracker.SplitData
	var probs []float32
	label := map[tracker.RowKey]tracker.Example{}
	for i, k := range all.keys {
		label[k] = all.examples[i]
	}
	for _, r := range results {
		if len(r.Keys) != len(r.Scores) {
			return nil, nil, nil, fmt.Errorf("fold %d: %d keys but %d scores", r.Fold, len(r.Keys), len(r.Scores))
		}
		for i, k := range r.Keys {
			key := [2]string{k.PMID, k.Aspect}
			byInst[key] = append(byInst[key], scored{k.SentenceIndex, r.Scores[i]})
			ex, ok := label[k]
			if !ok {
				return nil, nil, nil, fmt.Errorf("fold %d: row %s/%s/%d is not in the prepared directory", r.Fold, k.PMID, k.Aspect, k.SentenceIndex)
			}
			pooled.Examples = append(pooled.Examples, ex)
			pooled.Keys = append(pooled.Keys, k)
			probs = append(probs, r.Scores[i])
		}
	}
	order := map[string]int{}
	for i, a := range all.base.Aspects {
		order[a.Code] = i
	}
	keys := make([][2]string, 0, len(byInst))
	for k := range byInst {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return order[a[1]] - order[b[1]]
	})
	preds := make([]dataset.Prediction, 0, len(keys))
	refs := make([]dataset.Instance, 0, len(keys))
	for _, key := range keys {
		ref, ok := insts[key]
		if !ok {
			return nil, nil, nil, fmt.Errorf("instance %s/%s has tracker rows but no end_to_end row", key[0], key[1])
		}
		sc := byInst[key]
		if len(sc) != len(ref.Document) {
			return nil, nil, nil, fmt.Errorf("instance %s/%s: %d scored sentences for a %d-sentence abstract", key[0], key[1], len(sc), len(ref.Document))
		}
		p := dataset.Prediction{PMID: key[0], Aspect: key[1], Indexes: []int{}, Scores: make([]float32, len(sc))}
		for _, s := range sc {
			p.Scores[s.index] = s.p
		}
		var cited []string
		for i, s := range p.Scores {
			if float64(s) >= threshold {
				p.Indexes = append(p.Indexes, i)
				cited = append(cited, ref.Document[i])
			}
		}
		p.Summary = dataset.UnknownSummary
		if len(cited) > 0 {
			p.Summary = strings.Join(cited, " ") // what infer's extractive summarizer writes
		}
		preds = append(preds, p)
		refs = append(refs, ref)
	}
	return preds, refs, tracker.EvaluateScores(pooled, probs, threshold), nil
}

// summarize returns mean ± sd over the folds of the test figures.
func summarize(results []FoldResult) map[string]Stat {
	vals := map[string][]float64{}
	for _, r := range results {
		for _, m := range []string{"precision", "recall", "f1", "auc"} {
			vals["sentence_"+m] = append(vals["sentence_"+m], r.Test.Sentence[m])
		}
		vals["exact_match"] = append(vals["exact_match"], r.Test.ExactMatch)
		vals["instance_f1"] = append(vals["instance_f1"], r.Test.InstanceF1)
		for a, m := range r.Test.PerAspect {
			vals["f1/"+a] = append(vals["f1/"+a], m["f1"])
		}
	}
	out := map[string]Stat{}
	for name, v := range vals {
		out[name] = meanSD(v)
	}
	return out
}

// meanSD returns the mean and the sample standard deviation (0 for fewer than 2 values).
func meanSD(v []float64) Stat {
	var s Stat
	for _, x := range v {
		s.Mean += x
	}
	s.Mean /= float64(len(v))
	if len(v) > 1 {
		var ss float64
		for _, x := range v {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(v)-1))
	}
	return s
}

// checkSettings records the settings of the run in CK/cv-settings.json, or checks that an
// existing output directory was made with the same ones: finished folds are reused, so they must
// come from the same model, data, folds and configuration.
func checkSettings(opts Options, cfg *config.Config) error {
	rec, err := trackerRecord(cfg)
	if err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	return checkSettingsOf(opts.Out, opts.Data, map[string]any{"model": opts.Model, "dev_share": opts.DevShare}, rec)
}

// trackerRecord is the configuration record of a tracker cross-validation with cfg.
func trackerRecord(cfg *config.Config) (configRecord, error) {
	return modelRecord(cfg, "tracker", onlySection(cfg, "tracker"))
}

// checkSettingsOf is checkSettings for any cross-validation: settings (model, dev share, ...) plus
// the hashes of the configuration record rec and of data's splits.json and manifest.json. A
// record written by an earlier build with rec.Legacy is accepted and rewritten.
// Entries named in allowed (the component cross-validations a pipeline may find in place) do not
// make a new output directory count as non-empty.
func checkSettingsOf(out, data string, settings map[string]any, rec configRecord, allowed ...string) error {
	if err := recordSettings(out, data, settings, rec, allowed...); err != nil {
		return err
	}
	// The run is about to change out's files: out is a finished cross-validation again only once
	// writeReport seals it.
	if err := checkpoint.Unseal(out); err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	return nil
}

// writeReport writes out's cv.json, then its manifest (checkpoint.Seal), last: a cross-validation
// of rep's model, the fold ensemble infer runs for the tracker's (which keeps its fold
// checkpoints). A fold checkpoint an older release trained, which this run reused, is sealed
// first as tracksum-train --migrate would (checkpoint.Migrate); the others sealed themselves.
func writeReport(out string, rep any) error {
	if err := atomicio.WriteJSON(filepath.Join(out, ReportFile), rep); err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	id := checkpoint.Identity{Kind: checkpoint.KindCrossValidation, Backbone: checkpoint.Backbone{Type: checkpoint.BackboneScratch}}
	switch r := rep.(type) {
	case *Report:
		id.Task = r.Model
		if r.Model == ModelTracker {
			id.Kind, id.Settings.Threshold = checkpoint.KindEnsemble, r.Threshold
		}
	case *SummarizerReport:
		id.Task = r.Model
	case *PipelineReport:
		id.Task = r.Model
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	for _, e := range entries {
		dir := filepath.Join(out, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "fold-") {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, checkpoint.ManifestFile)); errors.Is(err, os.ErrNotExist) {
			if _, _, err := checkpoint.Migrate(context.Background(), dir); err != nil {
				return fmt.Errorf("cv: %w", err)
			}
		}
	}
	if _, err := checkpoint.Seal(out, id); err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	return nil
}

// recordSettings is checkSettingsOf's check and record.
func recordSettings(out, data string, settings map[string]any, rec configRecord, allowed ...string) error {
	y := rec.YAML
	splits, err := os.ReadFile(filepath.Join(data, dataset.SplitsFile))
	if err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	man, err := os.ReadFile(filepath.Join(data, dataset.ManifestFile))
	if err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	sum := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }
	record := func(y []byte) ([]byte, error) {
		s := maps.Clone(settings)
		s["config_sha256"], s["splits_sha256"], s["manifest_sha256"] = sum(y), sum(splits), sum(man)
		b, err := json.MarshalIndent(s, "", "  ")
		return append(b, '\n'), err
	}
	b, err := record(y)
	if err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	path := filepath.Join(out, SettingsFile)
	old, err := os.ReadFile(path)
	if err == nil && rec.Legacy != nil && !bytes.Equal(old, b) {
		if legacy, lerr := record(rec.Legacy); lerr == nil && bytes.Equal(old, legacy) {
			// The same run recorded by an earlier build: rewrite the record (config.yaml first,
			// so that a crash in between leaves the old record, still accepted).
			if err := atomicio.WriteFile(filepath.Join(out, "config.yaml"), y, 0o644); err != nil {
				return fmt.Errorf("cv: %w", err)
			}
			if err := atomicio.WriteFile(path, b, 0o644); err != nil {
				return fmt.Errorf("cv: %w", err)
			}
			return nil
		}
	}
	switch {
	case err == nil && !bytes.Equal(old, b):
		return fmt.Errorf("cv: %w: %s was made with another model, dev share, prepared directory or config (%s); use another --out or delete it",
			ErrSettings, out, SettingsFile)
	case err == nil:
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("cv: %w", err)
	}
	entries, err := os.ReadDir(out)
	if err == nil {
		entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { return slices.Contains(allowed, e.Name()) })
	}
	if err != nil || len(entries) > 0 {
		return fmt.Errorf("cv: %s is not empty and is not a cross-validation output (no %s)", out, SettingsFile)
	}
	if err := atomicio.WriteFile(filepath.Join(out, "config.yaml"), y, 0o644); err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	return atomicio.WriteFile(path, b, 0o644)
}

// foldCheckpointFiles are the files of a tracker fold checkpoint that infer --tracker CV reads,
// whose sha256 the fold's record keeps (context.json only when the fold has one; a lexical-context
// fold has lexical.json instead of the variables).
var foldCheckpointFiles = []string{filepath.Join(checkpoint.BestDir, checkpoint.BestVariables), checkpoint.HyperparamsFile,
	checkpoint.TokenizerFile, checkpoint.ContextFile, checkpoint.LexicalFile}

// checkpointSums returns the sha256 of the foldCheckpointFiles present in dir.
func checkpointSums(dir string) (map[string]string, error) {
	out := map[string]string{}
	_, err := os.Stat(filepath.Join(dir, checkpoint.LexicalFile))
	lexical := err == nil
	for _, name := range foldCheckpointFiles {
		sum, _, err := atomicio.SHA256(filepath.Join(dir, name))
		optional := name == checkpoint.ContextFile || name == checkpoint.LexicalFile ||
			(lexical && name == filepath.Join(checkpoint.BestDir, checkpoint.BestVariables))
		if errors.Is(err, os.ErrNotExist) && optional {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[filepath.ToSlash(name)] = sum
	}
	return out, nil
}

// verifyFold checks a finished fold's record r (at path) before a rerun takes it as done: its
// rows must be those of the fold's partition now, and, for a model with a checkpoint (withDir),
// its checkpoint dir must still be there with the files it recorded. It returns why the fold
// must be trained again ("" when it is done), or an error for a damaged checkpoint, which is
// never replaced silently.
func verifyFold(r *FoldResult, path, dir string, rows training.Rows, withDir bool) (string, error) {
	if r.Rows != nil {
		if d := rows.Differs(*r.Rows); d != "" {
			return fmt.Sprintf("%s was made on other rows (%s differ)", path, d), nil
		}
	}
	if !withDir {
		return "", nil
	}
	if _, err := os.Stat(filepath.Join(dir, checkpoint.HyperparamsFile)); err != nil {
		return fmt.Sprintf("%s is there but its checkpoint %s is missing", path, dir), nil
	}
	if r.Checkpoint == nil {
		return "", nil
	}
	for _, name := range slices.Sorted(maps.Keys(r.Checkpoint)) {
		sum, _, err := atomicio.SHA256(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return "", fmt.Errorf("cv: %s: %w (damaged fold checkpoint; delete %s and %s to train the fold again)", path, err, dir, path)
		}
		if sum != r.Checkpoint[name] {
			return "", fmt.Errorf("cv: %s does not match the sha256 recorded in %s (damaged fold checkpoint); delete %s and %s to train the fold again",
				filepath.Join(dir, filepath.FromSlash(name)), path, dir, path)
		}
	}
	return "", nil
}

func readFoldResult(path string) (*FoldResult, error) {
	var r FoldResult
	if err := readJSONFile(path, &r); err != nil {
		return nil, err
	}
	if r.Test == nil || len(r.Keys) != len(r.Scores) {
		return nil, fmt.Errorf("%s: incomplete fold result (delete it to redo the fold)", path)
	}
	return &r, nil
}
