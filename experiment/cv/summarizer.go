package cv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/infer/ground"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/summarizer"
)

// ModelSummarizer is the summarizer of cfg.Summarizer, cross-validated on gold citations
// (tracksum-train --task summarizer --folds K).
const ModelSummarizer = "summarizer"

// Files of a summarizer cross-validation besides those of the tracker's.
const (
	// CopyFile holds the baseline "copy all cited sentences" on the same instances.
	CopyFile = "copy.jsonl"
)

// SummarizerFold is what one fold of the summarizer cross-validation produced (CK/fold-k.json).
type SummarizerFold struct {
	Fold           int `json:"fold"`
	TrainAbstracts int `json:"train_abstracts"`
	DevAbstracts   int `json:"dev_abstracts"`
	TestAbstracts  int `json:"test_abstracts"`
	// TrainRows, DevRows and TestRows count the summaries (positive instances) of each part.
	TrainRows int `json:"train_rows"`
	DevRows   int `json:"dev_rows"`
	TestRows  int `json:"test_rows"`
	// Steps, BestStep, Stop and ExamplesPerSec come from the fold's training (summarizer.Report).
	Steps          int     `json:"steps"`
	BestStep       int     `json:"best_step"`
	Stop           string  `json:"stop"`
	ExamplesPerSec float64 `json:"examples_per_sec"`
	TrainSeconds   float64 `json:"train_seconds"`
	DecodeSeconds  float64 `json:"decode_seconds"`
	// Dev holds the best dev evaluation of training (loss and greedy ROUGE on the dev part).
	Dev map[string]float64 `json:"dev"`
	// Decoding is the decoding Predictions and DevPredictions were written with (the config's
	// summarizer decoding keys); another one re-decodes the fold from its checkpoint.
	Decoding Decoding `json:"decoding"`
	// Predictions are the fold checkpoint's summaries of the held-out positives from their gold
	// citations, DevPredictions those of the dev part's positives (left out of cv.json).
	Predictions    []dataset.Prediction `json:"predictions,omitempty"`
	DevPredictions []dataset.Prediction `json:"dev_predictions,omitempty"`
}

// Decoding holds the summarizer's decoding keys (config.Summarizer), which a summarizer
// cross-validation applies over its fold checkpoints' own (as tracksum-infer's flags do).
type Decoding struct {
	BeamSize       int     `json:"beam_size"`
	LengthPenalty  float64 `json:"length_penalty"`
	NoRepeatNgram  int     `json:"no_repeat_ngram"`
	MinLenRatio    float64 `json:"min_len_ratio"`
	CopyChainBonus float64 `json:"copy_chain_bonus"`
	WordRule       bool    `json:"word_rule"`
	// MaxDecodeLen is omitted when 0 so that records written before it keep their meaning.
	MaxDecodeLen   int     `json:"max_decode_len,omitempty"`
	CopyStartBonus float64 `json:"copy_start_bonus,omitempty"`
	// Grounding is infer.grounding, applied to each summary with its gold citations (empty in
	// records written before it: no grounding).
	Grounding string `json:"grounding,omitempty"`
	// RepeatSourceNgrams is omitted when false (records written before it).
	RepeatSourceNgrams bool `json:"repeat_source_ngrams,omitempty"`
}

// decodingOf returns the decoding keys of c.
func decodingOf(c config.Summarizer) Decoding {
	return Decoding{BeamSize: c.BeamSize, LengthPenalty: c.LengthPenalty, NoRepeatNgram: c.NoRepeatNgram,
		MinLenRatio: c.MinLenRatio, CopyChainBonus: c.CopyChainBonus, WordRule: c.WordRule, MaxDecodeLen: c.MaxDecodeLen,
		CopyStartBonus: c.CopyStartBonus, RepeatSourceNgrams: c.RepeatSourceNgrams}
}

// apply sets d on a loaded summarizer and returns its decoding options.
func (d Decoding) apply(s *summarizer.Summarizer) decode.Options {
	s.Meta.BeamSize, s.Meta.LengthPenalty, s.Meta.NoRepeatNgram = d.BeamSize, d.LengthPenalty, d.NoRepeatNgram
	s.Meta.MinLenRatio, s.Meta.CopyChainBonus, s.Meta.MaxDecodeLen = d.MinLenRatio, d.CopyChainBonus, d.MaxDecodeLen
	s.Net.ChainBonus = float32(d.CopyChainBonus)
	s.Meta.CopyStartBonus, s.Net.StartBonus = d.CopyStartBonus, float32(d.CopyStartBonus)
	s.Meta.RepeatSourceNgrams = d.RepeatSourceNgrams
	s.SetWordRule(d.WordRule)
	return s.DecodeOptions()
}

// SummarizerReport is CK/cv.json of a summarizer cross-validation.
type SummarizerReport struct {
	Model    string  `json:"model"`
	Data     string  `json:"data"`
	K        int     `json:"k"`
	FoldSeed int64   `json:"fold_seed"`
	Seed     int64   `json:"seed"`
	DevShare float64 `json:"dev_share"`
	// Folds holds each fold's training figures (the predictions are in oof.jsonl).
	Folds []SummarizerFold `json:"folds"`
	// Decoding is the decoding of the predictions (the config's keys over the checkpoints').
	Decoding Decoding `json:"decoding"`
	// Systems are the summarizer (oof.jsonl) and the copy baseline (copy.jsonl), scored by eval
	// on the held-out positives with their gold citations.
	Systems []*SystemScores `json:"systems"`
	// DevSystems are the same on each fold's dev part (fold-k-dev-*.jsonl against
	// fold-k-dev.jsonl): the figures to tune decoding on, never the held-out ones.
	DevSystems []*SystemScores `json:"dev_systems"`
	// Comparisons: the summarizer against the copy baseline (paired bootstrap over instances).
	Comparisons []*Comparison `json:"comparisons"`
	References  string        `json:"references"`
	WallSeconds float64       `json:"wall_seconds"`
}

// onlySection returns a copy of cfg in which every model section but keep ("tracker" or
// "summarizer") and the infer and eval sections are the built-in defaults: what the pipeline runs
// a component cross-validation with, and the legacy form of its settings record (modelRecord now
// records the kept sections only, so that a new default elsewhere does not refuse it either).
func onlySection(cfg *config.Config, keep string) *config.Config {
	c := *cfg
	d := config.Default()
	if keep != "tracker" {
		c.Tracker = d.Tracker
	}
	if keep != "summarizer" {
		c.Summarizer = d.Summarizer
		recordDecoding(&c.Summarizer)
	}
	c.Infer, c.Eval = d.Infer, d.Eval
	c.Infer.Grounding = ""
	return &c
}

// withoutDecoding returns a copy of cfg whose summarizer decoding keys are the fixed values of
// recordDecoding: a summarizer cross-validation keeps its fold checkpoints when only these change
// and decodes them again with the new keys (decodingOf).
func withoutDecoding(cfg *config.Config) *config.Config {
	c := *cfg
	recordDecoding(&c.Summarizer)
	// Grounding is applied after decoding, so it is redone with it.
	c.Infer.Grounding = ""
	return &c
}

// recordDecoding sets the summarizer decoding keys to the fixed values a settings record holds
// (any decoding is applied again without retraining): the defaults of the time these records were
// introduced, and zero for the keys added since (max_decode_len, copy_start_bonus,
// repeat_source_ngrams: zero, or left out of the YAML when zero). A later change of a decoding default then neither changes the records nor
// refuses the finished cross-validations.
func recordDecoding(s *config.Summarizer) {
	s.BeamSize, s.LengthPenalty, s.NoRepeatNgram = 4, 2, 4
	s.MinLenRatio, s.CopyChainBonus, s.WordRule = 0.6, 8, true
	s.MaxDecodeLen, s.CopyStartBonus, s.RepeatSourceNgrams = 0, 0, false
}

// RunSummarizer cross-validates the summarizer of cfg on gold citations: for each fold k it trains
// on the other folds' summaries (less the dev part carved exactly as the tracker's, on which the
// checkpoint is selected), summarizes fold k's positives from their reference citations, and
// scores them against "copy all cited sentences" (CK/copy.jsonl) with eval. Outputs: fold-k/ (the
// checkpoint), fold-k.json, fold-k-dev.jsonl (the dev part's positives, TracSum JSONL: decoding
// can be tuned on them with tracksum-infer --tracker gold), oof.jsonl, copy.jsonl,
// references.jsonl (positives only), cv.json (SummarizerReport), config.yaml, cv-settings.json.
func RunSummarizer(ctx context.Context, cfg *config.Config, opts Options) (*SummarizerReport, error) {
	start := time.Now()
	folds, err := startRun(&opts, "summarizer", ModelSummarizer)
	if err != nil {
		return nil, err
	}
	sr := &summarizerRun{ctx: ctx, cfg: cfg, opts: opts, log: opts.Log, folds: folds}
	if err := sr.readRows(); err != nil {
		return nil, err
	}
	lock, err := lockOut(opts.Out)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	rec, err := modelRecord(withoutDecoding(cfg), "summarizer", withoutDecoding(onlySection(cfg, "summarizer")))
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	if err := checkSettingsOf(opts.Out, opts.Data, map[string]any{"model": opts.Model, "dev_share": opts.DevShare}, rec); err != nil {
		return nil, err
	}

	sr.want = decodingOf(cfg.Summarizer)
	sr.want.Grounding = cfg.Infer.Grounding
	sr.grounder = infer.NewGrounder(cfg)
	results := make([]SummarizerFold, folds.K)
	var devPreds, devCopies, devRefs []string
	for k := range folds.K {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cv: %w", err)
		}
		r, dev, err := sr.fold(k)
		if err != nil {
			return nil, err
		}
		devPreds, devCopies, devRefs = append(devPreds, dev[0]), append(devCopies, dev[1]), append(devRefs, dev[2])
		results[k] = r
	}
	if err := sr.writeOutOfFold(results); err != nil {
		return nil, err
	}
	rep, err := sr.score(devPreds, devCopies, devRefs)
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		r.Predictions, r.DevPredictions = nil, nil
		rep.Folds = append(rep.Folds, r)
	}
	rep.WallSeconds = time.Since(start).Seconds()
	if err := writeReport(opts.Out, rep); err != nil {
		return nil, err
	}
	if err := writeTable(sr.log, fmt.Sprintf("cv: summarizer on gold citations, dev parts of the %d folds (for tuning), decoding %+v", folds.K, sr.want),
		rep.DevSystems, nil); err != nil {
		return nil, err
	}
	if err := writeTable(sr.log, fmt.Sprintf("cv: summarizer on gold citations, %d folds, %d positive instances", folds.K, len(sr.all)),
		rep.Systems, rep.Comparisons); err != nil {
		return nil, err
	}
	return rep, nil
}

// summarizerRun is the state RunSummarizer's stages share.
type summarizerRun struct {
	ctx   context.Context
	cfg   *config.Config
	opts  Options
	log   io.Writer
	folds *dataset.Folds
	// base is the prepared directory's summarizer data; all its rows of every split (positives),
	// in PMID then aspect order; negatives the rows "Unknown." trained on with
	// summarizer.train_negatives.
	base      *summarizer.Data
	all       []dataset.SummarizerRow
	negatives []dataset.SummarizerRow
	// want is the decoding every fold's summaries are decoded with.
	want     Decoding
	grounder *ground.Grounder
}

// readRows reads the summarizer rows of every split, refusing a PMID the folds do not place.
func (sr *summarizerRun) readRows() error {
	data := sr.opts.Data
	base, err := summarizer.ReadData(data)
	if err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	var all []dataset.SummarizerRow
	all = append(append(all, base.Train...), base.Dev...)
	for row, err := range dataset.ReadShards[dataset.SummarizerRow](data, dataset.TaskSummarizer, dataset.SplitTest) {
		if err != nil {
			return fmt.Errorf("cv: %w", err)
		}
		all = append(all, row)
	}
	for _, r := range all {
		if sr.folds.Fold(r.PMID) < 0 {
			return fmt.Errorf("cv: %s: PMID %s of the summarizer shards is in no fold of %s", data, r.PMID, dataset.SplitsFile)
		}
	}
	aspectOrder := map[string]int{}
	for i, a := range dataset.Aspects(base.Manifest.AspectSet) {
		aspectOrder[a.Code] = i
	}
	sortRows(all, aspectOrder)
	// summarizer.train_negatives: each fold trains on its train part's negatives too ("Unknown."),
	// and is still selected and scored on the positives, so that the two settings compare.
	var negatives []dataset.SummarizerRow
	if sr.cfg.Summarizer.TrainNegatives {
		for _, split := range []string{dataset.SplitTrain, dataset.SplitDev, dataset.SplitTest} {
			neg, err := dataset.SummarizerNegatives(data, split)
			if err != nil {
				return fmt.Errorf("cv: %w", err)
			}
			negatives = append(negatives, neg...)
		}
		sortRows(negatives, aspectOrder)
	}
	sr.base, sr.all, sr.negatives = base, all, negatives
	return nil
}

// fold trains fold k's summarizer (or finds it trained), decodes its held-out and dev summaries
// when they are missing or were decoded otherwise, and writes the dev part's files: it returns the
// fold's result and the paths of its dev summaries, dev copies and dev references.
func (sr *summarizerRun) fold(k int) (SummarizerFold, [3]string, error) {
	opts := sr.opts
	part, counts := carve(sr.folds, k, opts.DevShare, sr.cfg.Seed)
	data := &summarizer.Data{Manifest: sr.base.Manifest, Tokenizer: sr.base.Tokenizer, TokenizerPath: sr.base.TokenizerPath}
	var test []dataset.SummarizerRow
	for _, row := range sr.all {
		switch part[row.PMID] {
		case PartTrain:
			data.Train = append(data.Train, row)
		case PartDev:
			data.Dev = append(data.Dev, row)
		case PartTest:
			test = append(test, row)
		}
	}
	for _, row := range sr.negatives {
		if part[row.PMID] == PartTrain {
			data.Train = append(data.Train, row)
		}
	}
	dir := filepath.Join(opts.Out, fmt.Sprintf("fold-%d", k))
	r, s, err := sr.train(k, dir, counts, data, test)
	if err != nil {
		return r, [3]string{}, err
	}
	if s != nil || r.Decoding != sr.want || len(r.Predictions) != len(test) || len(r.DevPredictions) != len(data.Dev) {
		if err := sr.decode(k, dir, s, &r, data.Dev, test); err != nil {
			return r, [3]string{}, err
		}
	}
	dev, err := sr.writeDev(k, r, data.Dev)
	return r, dev, err
}

// train trains fold k's summarizer into dir on data, unless dir.json holds a finished fold, which
// it returns with a nil summarizer.
func (sr *summarizerRun) train(k int, dir string, counts [3]int, data *summarizer.Data, test []dataset.SummarizerRow) (SummarizerFold, *summarizer.Summarizer, error) {
	K := sr.folds.K
	path := dir + ".json"
	var r SummarizerFold
	if err := readJSONFile(path, &r); err == nil && r.Fold == k && r.Dev != nil {
		fmt.Fprintf(sr.log, "cv: summarizer fold %d/%d already trained (%s)\n", k+1, K, path)
		return r, nil, nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return r, nil, fmt.Errorf("cv: %w", err)
	}
	r = SummarizerFold{Fold: k, TrainAbstracts: counts[0], DevAbstracts: counts[1], TestAbstracts: counts[2],
		TrainRows: len(data.Train), DevRows: len(data.Dev), TestRows: len(test)}
	fmt.Fprintf(sr.log, "cv: summarizer fold %d/%d: %d train, %d dev, %d test abstracts (%d/%d/%d summaries)\n", k+1, K,
		counts[0], counts[1], counts[2], r.TrainRows, r.DevRows, r.TestRows)
	t0 := time.Now()
	s, rep, err := summarizer.Train(sr.ctx, sr.cfg, sr.opts.Data, dir,
		summarizer.TrainOptions{Log: sr.log, Data: data, AllowChangedConfig: sr.opts.AllowChangedConfig})
	if err != nil {
		return r, nil, fmt.Errorf("cv: fold %d: %w", k, err)
	}
	r.TrainSeconds = time.Since(t0).Seconds()
	r.Steps, r.BestStep, r.Stop, r.ExamplesPerSec, r.Dev = rep.Steps, rep.BestStep, rep.Stop, rep.ExamplesPerSec, rep.Dev
	fmt.Fprintf(sr.log, "cv: summarizer fold %d/%d: best dev ROUGE-L %.4f at step %d of %d (%s), %.1f examples/s, %.0fs training\n",
		k+1, K, rep.Dev["rougeL"], r.BestStep, r.Steps, r.Stop, r.ExamplesPerSec, r.TrainSeconds)
	return r, s, nil
}

// decode summarizes fold k's held-out and dev rows from their gold citations with sr.want
// (loading the checkpoint in dir when s is nil) and saves r in dir.json.
func (sr *summarizerRun) decode(k int, dir string, s *summarizer.Summarizer, r *SummarizerFold, dev, test []dataset.SummarizerRow) error {
	var err error
	if s == nil {
		if s, err = openFoldSummarizer(sr.ctx, dir); err != nil {
			return fmt.Errorf("cv: %w", err)
		}
		fmt.Fprintf(sr.log, "cv: summarizer fold %d/%d: decoding with %+v\n", k+1, sr.folds.K, sr.want)
	}
	t0 := time.Now()
	dopts := sr.want.apply(s)
	if r.Predictions, err = summarizeGold(sr.ctx, s, dopts, sr.grounder, test); err != nil {
		return fmt.Errorf("cv: fold %d: %w", k, err)
	}
	if r.DevPredictions, err = summarizeGold(sr.ctx, s, dopts, sr.grounder, dev); err != nil {
		return fmt.Errorf("cv: fold %d: %w", k, err)
	}
	r.Decoding, r.DecodeSeconds = sr.want, time.Since(t0).Seconds()
	if err := atomicio.WriteJSON(dir+".json", r); err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	fmt.Fprintf(sr.log, "cv: summarizer fold %d/%d: %d held-out and %d dev summaries decoded in %.0fs\n", k+1, sr.folds.K,
		len(test), len(dev), r.DecodeSeconds)
	return nil
}

// writeDev writes fold k's dev summaries, the dev copies and the dev references (the files dev
// decoding is tuned on) and returns their paths.
func (sr *summarizerRun) writeDev(k int, r SummarizerFold, dev []dataset.SummarizerRow) ([3]string, error) {
	out := sr.opts.Out
	devRef := filepath.Join(out, fmt.Sprintf("fold-%d-dev.jsonl", k))
	copies := make([]dataset.Prediction, len(dev))
	for i, row := range dev {
		copies[i] = copyOf(row)
	}
	devPred := filepath.Join(out, fmt.Sprintf("fold-%d-dev-summarizer.jsonl", k))
	devCopy := filepath.Join(out, fmt.Sprintf("fold-%d-dev-copy.jsonl", k))
	for _, f := range []struct {
		path string
		recs []dataset.Prediction
	}{{devPred, r.DevPredictions}, {devCopy, copies}} {
		if err := atomicio.WriteJSONL(f.path, f.recs); err != nil {
			return [3]string{}, fmt.Errorf("cv: %w", err)
		}
	}
	if err := atomicio.WriteJSONL(devRef, references(dev)); err != nil {
		return [3]string{}, fmt.Errorf("cv: %w", err)
	}
	return [3]string{devPred, devCopy, devRef}, nil
}

// writeOutOfFold writes the out-of-fold summaries, the copies and the references in the order of
// sr.all (PMID, then aspect order).
func (sr *summarizerRun) writeOutOfFold(results []SummarizerFold) error {
	byKey := map[[2]string]dataset.Prediction{}
	for _, r := range results {
		for _, p := range r.Predictions {
			byKey[[2]string{p.PMID, p.Aspect}] = p
		}
	}
	var preds, copies []dataset.Prediction
	for _, row := range sr.all {
		p, ok := byKey[[2]string{row.PMID, row.Aspect}]
		if !ok {
			return fmt.Errorf("cv: no out-of-fold summary of %s/%s (fold %d); delete its fold-k.json to redo it", row.PMID, row.Aspect, sr.folds.Fold(row.PMID))
		}
		preds = append(preds, p)
		copies = append(copies, copyOf(row))
	}
	files := []struct {
		path string
		recs any
	}{{filepath.Join(sr.opts.Out, PredictionsFile), preds}, {filepath.Join(sr.opts.Out, CopyFile), copies},
		{filepath.Join(sr.opts.Out, ReferencesFile), references(sr.all)}}
	for _, f := range files {
		var err error
		switch recs := f.recs.(type) {
		case []dataset.Prediction:
			err = atomicio.WriteJSONL(f.path, recs)
		case []dataset.Instance:
			err = atomicio.WriteJSONL(f.path, recs)
		}
		if err != nil {
			return fmt.Errorf("cv: %w", err)
		}
	}
	return nil
}

// score scores the out-of-fold summaries and the copies (and their comparison), and the dev
// parts' files, into the report (its folds and wall time left to the caller).
func (sr *summarizerRun) score(devPreds, devCopies, devRefs []string) (*SummarizerReport, error) {
	ctx, cfg, opts := sr.ctx, sr.cfg, sr.opts
	refPath := filepath.Join(opts.Out, ReferencesFile)
	sum, err := scoreSystem(ctx, "summarizer", "summarizer (gold citations)", filepath.Join(opts.Out, PredictionsFile), refPath, sr.folds, cfg.Eval)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	cp, err := scoreSystem(ctx, "copy", "copy all cited sentences", filepath.Join(opts.Out, CopyFile), refPath, sr.folds, cfg.Eval)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	comp, err := compareSystems(ctx, sum, cp, refPath, cfg.Eval)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	devSum, err := scoreFoldFiles(ctx, "summarizer", "summarizer (gold citations)", devPreds, devRefs, cfg.Eval)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	devCp, err := scoreFoldFiles(ctx, "copy", "copy all cited sentences", devCopies, devRefs, cfg.Eval)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	return &SummarizerReport{Model: opts.Model, Data: opts.Data, K: sr.folds.K, FoldSeed: sr.folds.Seed, Seed: cfg.Seed, DevShare: opts.DevShare,
		Decoding: sr.want, Systems: []*SystemScores{sum, cp}, DevSystems: []*SystemScores{devSum, devCp}, Comparisons: []*Comparison{comp},
		References: ReferencesFile}, nil
}

// startRun is the prologue every cross-validation (Run, RunSummarizer, RunPipeline) begins with:
// opts.Log defaults to stderr and opts.Model to models[0], a model not among models is refused
// (what names the cross-validation in that message: "" for the tracker's), and the options are
// checked and the folds read (checkOptions). It returns the folds.
func startRun(opts *Options, what string, models ...string) (*dataset.Folds, error) {
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.Model == "" {
		opts.Model = models[0]
	}
	if !slices.Contains(models, opts.Model) {
		want := "one of " + strings.Join(models, ", ")
		switch len(models) {
		case 1:
			want = models[0]
		case 2:
			want = models[0] + " or " + models[1]
		}
		if what != "" {
			what += " "
		}
		return nil, fmt.Errorf("cv: unknown %smodel %q (want %s)", what, opts.Model, want)
	}
	return checkOptions(opts)
}

// lockOut creates a cross-validation's output directory and takes its lock, so that two runs
// never write one directory at once; the caller releases it.
func lockOut(out string) (*atomicio.Lock, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	lock, err := atomicio.Acquire(out)
	if err != nil {
		return nil, fmt.Errorf("cv: %s: %w", out, err)
	}
	return lock, nil
}

// checkOptions applies the defaults shared by the cross-validations and reads the folds.
func checkOptions(opts *Options) (*dataset.Folds, error) {
	if opts.DevShare == 0 {
		opts.DevShare = DefaultDevShare
	}
	if opts.DevShare <= 0 || opts.DevShare >= 1 {
		return nil, fmt.Errorf("cv: dev share must be in (0, 1), got %g", opts.DevShare)
	}
	if opts.Data == "" || opts.Out == "" {
		return nil, errors.New("cv: no prepared directory or no output directory")
	}
	folds, err := dataset.ReadFolds(opts.Data)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	if opts.Folds > 0 && opts.Folds != folds.K {
		return nil, fmt.Errorf("cv: --folds %d, but %s was prepared with %d folds", opts.Folds, opts.Data, folds.K)
	}
	return folds, nil
}

// sortRows orders summarizer rows by PMID, then by the aspect set's order.
func sortRows(rows []dataset.SummarizerRow, order map[string]int) {
	slices.SortStableFunc(rows, func(a, b dataset.SummarizerRow) int {
		if c := strings.Compare(a.PMID, b.PMID); c != 0 {
			return c
		}
		return order[a.Aspect] - order[b.Aspect]
	})
}

func citedIndexes(row dataset.SummarizerRow) []int {
	idx := make([]int, len(row.CitedIndexes))
	for i, c := range row.CitedIndexes {
		idx[i] = int(c)
	}
	return idx
}

// references returns the rows as reference instances (TracSum JSONL).
func references(rows []dataset.SummarizerRow) []dataset.Instance {
	out := make([]dataset.Instance, len(rows))
	for i, r := range rows {
		out[i] = dataset.Instance{PMID: r.PMID, Document: r.Document, Aspect: r.Aspect, Summary: r.Summary, Indexes: citedIndexes(r)}
	}
	return out
}

// decodeChunk is the number of summaries decoded together by one worker: large enough to batch
// the decoder's matrix products, small enough to keep both cores busy to the end.
const decodeChunk = 8

// copyOf is the copy baseline's prediction for a row: its gold cited sentences, joined.
func copyOf(row dataset.SummarizerRow) dataset.Prediction {
	return dataset.Prediction{PMID: row.PMID, Aspect: row.Aspect, Summary: strings.Join(row.CitedSentences, " "), Indexes: citedIndexes(row)}
}

// summarizeGold summarizes each row from its gold cited sentences (and its abstract for a
// full-context checkpoint) with the decoding o, on runtime.NumCPU() workers, then grounds each
// summary in its citations with g (nil: not at all), as infer's Track-then-Sum does.
func summarizeGold(ctx context.Context, s *summarizer.Summarizer, o decode.Options, g *ground.Grounder, rows []dataset.SummarizerRow) ([]dataset.Prediction, error) {
	out := make([]dataset.Prediction, len(rows))
	reqs := make([]summarizer.Request, len(rows))
	for i, r := range rows {
		reqs[i] = summarizer.Request{Aspect: r.Aspect, Cited: r.CitedSentences, Document: r.Document}
		out[i] = dataset.Prediction{PMID: r.PMID, Aspect: r.Aspect, Indexes: citedIndexes(r)}
	}
	err := parallelChunks(ctx, len(reqs), func(lo, hi int) error {
		sums, err := s.Summarize(reqs[lo:hi], o)
		if err != nil {
			return err
		}
		for i, sum := range sums {
			out[lo+i].Summary, out[lo+i].Indexes, _ = g.Apply(rows[lo+i].Document, sum, out[lo+i].Indexes)
		}
		return nil
	})
	return out, err
}

// parallelChunks calls f on consecutive chunks [lo, hi) of n items from runtime.NumCPU()
// goroutines and returns the first error.
func parallelChunks(ctx context.Context, n int, f func(lo, hi int) error) error {
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := range jobs {
				if err := f(lo, min(lo+decodeChunk, n)); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for lo := 0; lo < n; lo += decodeChunk {
		if ctx.Err() != nil {
			break
		}
		jobs <- lo
	}
	close(jobs)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

func cmpErr(prev, err error) error {
	if prev != nil {
		return prev
	}
	return err
}

// openFoldSummarizer opens the summarizer checkpoint of a fold (dir) as every command opens a
// checkpoint (package open): its manifest verified, loaded by its backbone's opener. The
// cross-validation decodes with the from-scratch summarizer's settings, so it must be one.
func openFoldSummarizer(ctx context.Context, dir string) (*summarizer.Summarizer, error) {
	c, err := open.OpenKind(ctx, dir, "the summarizer cross-validation", open.Options{}, checkpoint.KindSummarizer)
	if err != nil {
		return nil, err
	}
	return open.As[*summarizer.Summarizer](c, "the summarizer cross-validation", "a from-scratch summarizer")
}
