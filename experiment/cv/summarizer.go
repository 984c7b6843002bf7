package cv

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/tracksum/tracksum/model/decode"
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
	log := opts.Log
	if log == nil {
		log = os.Stderr
	}
	if opts.Model == "" {
		opts.Model = ModelSummarizer
	}
	if opts.Model != ModelSummarizer {
		return nil, fmt.Errorf("cv: unknown summarizer model %q (want %s)", opts.Model, ModelSummarizer)
	}
	folds, err := checkOptions(&opts)
	if err != nil {
		return nil, err
	}
	base, err := summarizer.ReadData(opts.Data)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	var all []dataset.SummarizerRow
	all = append(append(all, base.Train...), base.Dev...)
	for row, err := range dataset.ReadShards[dataset.SummarizerRow](opts.Data, dataset.TaskSummarizer, dataset.SplitTest) {
		if err != nil {
			return nil, fmt.Errorf("cv: %w", err)
		}
		all = append(all, row)
	}
	for _, r := range all {
		if folds.Fold(r.PMID) < 0 {
			return nil, fmt.Errorf("cv: %s: PMID %s of the summarizer shards is in no fold of %s", opts.Data, r.PMID, dataset.SplitsFile)
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
	if cfg.Summarizer.TrainNegatives {
		for _, split := range []string{dataset.SplitTrain, dataset.SplitDev, dataset.SplitTest} {
			neg, err := dataset.SummarizerNegatives(opts.Data, split)
			if err != nil {
				return nil, fmt.Errorf("cv: %w", err)
			}
			negatives = append(negatives, neg...)
		}
		sortRows(negatives, aspectOrder)
	}

	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	lock, err := atomicio.Acquire(opts.Out)
	if err != nil {
		return nil, fmt.Errorf("cv: %s: %w", opts.Out, err)
	}
	defer lock.Release()
	rec, err := modelRecord(withoutDecoding(cfg), "summarizer", withoutDecoding(onlySection(cfg, "summarizer")))
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	if err := checkSettingsOf(opts.Out, opts.Data, map[string]any{"model": opts.Model, "dev_share": opts.DevShare}, rec); err != nil {
		return nil, err
	}

	want := decodingOf(cfg.Summarizer)
	want.Grounding = cfg.Infer.Grounding
	grounder := infer.NewGrounder(cfg)
	results := make([]SummarizerFold, folds.K)
	var devPreds, devCopies, devRefs []string
	for k := range folds.K {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cv: %w", err)
		}
		part, counts := carve(folds, k, opts.DevShare, cfg.Seed)
		data := &summarizer.Data{Manifest: base.Manifest, Tokenizer: base.Tokenizer, TokenizerPath: base.TokenizerPath}
		var test []dataset.SummarizerRow
		for _, row := range all {
			switch part[row.PMID] {
			case PartTrain:
				data.Train = append(data.Train, row)
			case PartDev:
				data.Dev = append(data.Dev, row)
			case PartTest:
				test = append(test, row)
			}
		}
		for _, row := range negatives {
			if part[row.PMID] == PartTrain {
				data.Train = append(data.Train, row)
			}
		}
		dir := filepath.Join(opts.Out, fmt.Sprintf("fold-%d", k))
		path := dir + ".json"
		devRef := filepath.Join(opts.Out, fmt.Sprintf("fold-%d-dev.jsonl", k))
		var r SummarizerFold
		var s *summarizer.Summarizer
		if err := readJSONFile(path, &r); err == nil && r.Fold == k && r.Dev != nil {
			fmt.Fprintf(log, "cv: summarizer fold %d/%d already trained (%s)\n", k+1, folds.K, path)
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("cv: %w", err)
		} else {
			r = SummarizerFold{Fold: k, TrainAbstracts: counts[0], DevAbstracts: counts[1], TestAbstracts: counts[2],
				TrainRows: len(data.Train), DevRows: len(data.Dev), TestRows: len(test)}
			fmt.Fprintf(log, "cv: summarizer fold %d/%d: %d train, %d dev, %d test abstracts (%d/%d/%d summaries)\n", k+1, folds.K,
				counts[0], counts[1], counts[2], r.TrainRows, r.DevRows, r.TestRows)
			t0 := time.Now()
			var rep *summarizer.Report
			s, rep, err = summarizer.Train(ctx, cfg, opts.Data, dir,
				summarizer.TrainOptions{Log: log, Data: data, AllowChangedConfig: opts.AllowChangedConfig})
			if err != nil {
				return nil, fmt.Errorf("cv: fold %d: %w", k, err)
			}
			r.TrainSeconds = time.Since(t0).Seconds()
			r.Steps, r.BestStep, r.Stop, r.ExamplesPerSec, r.Dev = rep.Steps, rep.BestStep, rep.Stop, rep.ExamplesPerSec, rep.Dev
			fmt.Fprintf(log, "cv: summarizer fold %d/%d: best dev ROUGE-L %.4f at step %d of %d (%s), %.1f examples/s, %.0fs training\n",
				k+1, folds.K, rep.Dev["rougeL"], r.BestStep, r.Steps, r.Stop, r.ExamplesPerSec, r.TrainSeconds)
		}
		if s != nil || r.Decoding != want || len(r.Predictions) != len(test) || len(r.DevPredictions) != len(data.Dev) {
			if s == nil {
				if s, err = summarizer.Load(dir); err != nil {
					return nil, fmt.Errorf("cv: %w", err)
				}
				fmt.Fprintf(log, "cv: summarizer fold %d/%d: decoding with %+v\n", k+1, folds.K, want)
			}
			t0 := time.Now()
			dopts := want.apply(s)
			if r.Predictions, err = summarizeGold(ctx, s, dopts, grounder, test); err != nil {
				return nil, fmt.Errorf("cv: fold %d: %w", k, err)
			}
			if r.DevPredictions, err = summarizeGold(ctx, s, dopts, grounder, data.Dev); err != nil {
				return nil, fmt.Errorf("cv: fold %d: %w", k, err)
			}
			r.Decoding, r.DecodeSeconds = want, time.Since(t0).Seconds()
			if err := atomicio.WriteJSON(path, &r); err != nil {
				return nil, fmt.Errorf("cv: %w", err)
			}
			fmt.Fprintf(log, "cv: summarizer fold %d/%d: %d held-out and %d dev summaries decoded in %.0fs\n", k+1, folds.K,
				len(test), len(data.Dev), r.DecodeSeconds)
		}
		copies := make([]dataset.Prediction, len(data.Dev))
		for i, row := range data.Dev {
			copies[i] = copyOf(row)
		}
		devPred := filepath.Join(opts.Out, fmt.Sprintf("fold-%d-dev-summarizer.jsonl", k))
		devCopy := filepath.Join(opts.Out, fmt.Sprintf("fold-%d-dev-copy.jsonl", k))
		for _, f := range []struct {
			path string
			recs []dataset.Prediction
		}{{devPred, r.DevPredictions}, {devCopy, copies}} {
			if err := atomicio.WriteJSONL(f.path, f.recs); err != nil {
				return nil, fmt.Errorf("cv: %w", err)
			}
		}
		if err := atomicio.WriteJSONL(devRef, references(data.Dev)); err != nil {
			return nil, fmt.Errorf("cv: %w", err)
		}
		devPreds, devCopies, devRefs = append(devPreds, devPred), append(devCopies, devCopy), append(devRefs, devRef)
		results[k] = r
	}

	// Out-of-fold predictions in the order of all (PMID, then aspect order).
	byKey := map[[2]string]dataset.Prediction{}
	for _, r := range results {
		for _, p := range r.Predictions {
			byKey[[2]string{p.PMID, p.Aspect}] = p
		}
	}
	var preds, copies []dataset.Prediction
	for _, row := range all {
		p, ok := byKey[[2]string{row.PMID, row.Aspect}]
		if !ok {
			return nil, fmt.Errorf("cv: no out-of-fold summary of %s/%s (fold %d); delete its fold-k.json to redo it", row.PMID, row.Aspect, folds.Fold(row.PMID))
		}
		preds = append(preds, p)
		copies = append(copies, copyOf(row))
	}
	refPath := filepath.Join(opts.Out, ReferencesFile)
	files := []struct {
		path string
		recs any
	}{{filepath.Join(opts.Out, PredictionsFile), preds}, {filepath.Join(opts.Out, CopyFile), copies}, {refPath, references(all)}}
	for _, f := range files {
		var err error
		switch recs := f.recs.(type) {
		case []dataset.Prediction:
			err = atomicio.WriteJSONL(f.path, recs)
		case []dataset.Instance:
			err = atomicio.WriteJSONL(f.path, recs)
		}
		if err != nil {
			return nil, fmt.Errorf("cv: %w", err)
		}
	}
	sum, err := scoreSystem(ctx, "summarizer", "summarizer (gold citations)", filepath.Join(opts.Out, PredictionsFile), refPath, folds, cfg.Eval)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	cp, err := scoreSystem(ctx, "copy", "copy all cited sentences", filepath.Join(opts.Out, CopyFile), refPath, folds, cfg.Eval)
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
	rep := &SummarizerReport{Model: opts.Model, Data: opts.Data, K: folds.K, FoldSeed: folds.Seed, Seed: cfg.Seed, DevShare: opts.DevShare,
		Decoding: want, Systems: []*SystemScores{sum, cp}, DevSystems: []*SystemScores{devSum, devCp}, Comparisons: []*Comparison{comp},
		References: ReferencesFile}
	for _, r := range results {
		r.Predictions, r.DevPredictions = nil, nil
		rep.Folds = append(rep.Folds, r)
	}
	rep.WallSeconds = time.Since(start).Seconds()
	if err := writeReport(opts.Out, rep); err != nil {
		return nil, err
	}
	if err := writeTable(log, fmt.Sprintf("cv: summarizer on gold citations, dev parts of the %d folds (for tuning), decoding %+v", folds.K, want),
		rep.DevSystems, nil); err != nil {
		return nil, err
	}
	if err := writeTable(log, fmt.Sprintf("cv: summarizer on gold citations, %d folds, %d positive instances", folds.K, len(all)),
		rep.Systems, rep.Comparisons); err != nil {
		return nil, err
	}
	return rep, nil
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
