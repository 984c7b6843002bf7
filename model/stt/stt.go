// Package stt is TracSum's SUM-THEN-TRACK variant (Table 6, section C.5): a summarizer writes the
// aspect summary from the whole abstract ("Unknown." when the abstract does not report the
// aspect), then a tracker scores every sentence against that summary and the sentences with
// probability >= threshold are its citations (Algorithm 3).
//
// Both models are the Track-then-Sum ones, trained on other inputs: the summarizer
// (model/summarizer) on (aspect, whole abstract) -> summary, from the end_to_end shards (negatives
// included); the tracker (model/tracker) on (sentence [SEP] summary) pairs labelled by the
// citations, from the sum_then_track shards, with the aspect as its aspect token and the
// sentence's position as its position features. The variants config section sets the longer
// inputs; everything else comes from the summarizer and tracker sections.
//
// Prediction is SUM-THEN-TRACK's one Predict (role.SumThenTrack, shared with the variant on a
// pretrained LM): a loaded Model is that composition on these two models.
//
// A checkpoint directory holds variant.json and two ordinary checkpoints, summarizer/ and
// tracker/ (checkpoint.VariantSummarizerDir, VariantTrackerDir), each with its own variant.json.
//
// # Example
//
//	m, err := stt.Load("checkpoints/stt")
//	if err != nil {
//		return err
//	}
//	preds, err := m.Predict("12345", sentences, []string{"a", "p"})
package stt

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/role"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/model/variant"
	"github.com/tracksum/tracksum/subword"
)

// init registers SUM-THEN-TRACK as tracksum-train's task "sum_then_track".
func init() {
	training.Register(training.Task{
		Name:    variant.SumThenTrack,
		Section: "summarizer",
		Description: "SUM-THEN-TRACK (TracSum Table 6): a summarizer of the whole abstract, then a tracker of (sentence, summary) pairs " +
			"(summarizer.*, tracker.*, variants.*; --epochs etc. set summarizer.train, the tracker uses tracker.train)",
		Train: func(ctx context.Context, cfg *config.Config, r training.Request) error {
			_, _, err := Train(ctx, cfg, r.Data, r.Out, training.OptionsOf[variant.Assign](r))
			return err
		},
	})
}

// Model is a loaded SUM-THEN-TRACK checkpoint: SUM-THEN-TRACK's one Predict (role.SumThenTrack)
// on the from-scratch summarizer and the tracker of (sentence [SEP] summary) pairs
// (tracker.PairExample, scored by its ScorePairs). Threshold defaults to the tracker's
// tracker.threshold (infer resolves it: infer.Threshold). It is safe for concurrent use.
type Model = role.SumThenTrack[*summarizer.Summarizer, *tracker.Model]

// Load reads a SUM-THEN-TRACK checkpoint directory written by Train, through its verified
// manifest (package open).
func Load(dir string) (*Model, error) {
	return open.OpenAs[*Model](context.Background(), dir, "stt.Load", open.Options{}, checkpoint.KindSumThenTrack,
		"a from-scratch SUM-THEN-TRACK checkpoint")
}

// LoadParts loads SUM-THEN-TRACK from its two sub-checkpoints, which must be the summarizer and
// the tracker parts of from-scratch SUM-THEN-TRACK checkpoints made with the same tokenizer.
func LoadParts(summarizerDir, trackerDir string) (*Model, error) {
	ctx := context.Background()
	sc, err := open.OpenKind(ctx, summarizerDir, "stt.LoadParts", open.Options{}, checkpoint.KindSumThenTrack)
	if err != nil {
		return nil, err
	}
	s, err := open.As[*summarizer.Summarizer](sc, "stt.LoadParts", "the summarizer part of a from-scratch SUM-THEN-TRACK checkpoint")
	if err != nil {
		return nil, err
	}
	tc, err := open.OpenKind(ctx, trackerDir, "stt.LoadParts", open.Options{}, checkpoint.KindSumThenTrack)
	if err != nil {
		return nil, err
	}
	t, err := open.As[*tracker.Model](tc, "stt.LoadParts", "the tracker part of a from-scratch SUM-THEN-TRACK checkpoint")
	if err != nil {
		return nil, err
	}
	return compose(opened[*summarizer.Summarizer]{s, sc.Manifest}, opened[*tracker.Model]{t, tc.Manifest})
}

// TrainOptions are the parts of a Train run that are not configuration.
type TrainOptions = variant.Options

// Report is OUT/report.json: the two models' training reports.
type Report = variant.Report[*summarizer.Report, *tracker.Report]

// Config returns the settings SUM-THEN-TRACK trains with: the summarizer's with the variants
// section's source length, no full-context part and no minimum length (it is relative to the
// source, here the whole abstract); the tracker's with the variants section's pair length.
func Config(cfg *config.Config) (*config.Config, error) {
	if cfg.Summarizer.Pretrained != "" || cfg.Tracker.Pretrained != "" {
		// tracksum-train --task sum_then_track --pretrained runs pretrained.TrainSumThenTrack
		// instead; this refusal is for the callers that reach the from-scratch training directly
		// (the table6 cross-validation).
		return nil, fmt.Errorf("sum_then_track: summarizer.pretrained or tracker.pretrained is set: package stt trains the from-scratch models only (tracksum-train --task sum_then_track --pretrained DIR fine-tunes a pretrained LM; the table6 cross-validation does not)")
	}
	c := *cfg
	c.Summarizer.MaxSourceLen = cfg.Variants.MaxSourceLen
	c.Summarizer.Train.BatchSize = cfg.Variants.SummarizerBatchSize(config.BatchSumThenTrack, false, cfg.Summarizer.Train.BatchSize)
	c.Summarizer.FullContext = false
	c.Summarizer.MinLenRatio = 0
	// The decoding aids tuned for Track-then-Sum (a longer decoding limit, a bonus for starting
	// at a cited sentence) were tuned on its summaries of tracked sentences, not on these outputs.
	c.Summarizer.MaxDecodeLen = 0
	c.Summarizer.CopyStartBonus = 0
	c.Tracker.MaxLen = cfg.Variants.PairMaxLen
	// The pair tracker reads (sentence, summary) token pairs, which the lexical-context tracker
	// (word n-grams of one sentence's text) cannot: it is then the transformer, as before
	// lexical-context became the default.
	if c.Tracker.Architecture == config.TrackerLexicalContext {
		c.Tracker.Architecture = tracker.ArchTransformer
	}
	return &c, c.Validate()
}

// Train trains SUM-THEN-TRACK on the prepared directory dataDir into outDir: the summarizer into
// outDir/summarizer, then the pair tracker into outDir/tracker (variant.TrainSumThenTrack). An
// interrupted run resumes.
func Train(ctx context.Context, cfg *config.Config, dataDir, outDir string, opts TrainOptions) (*Model, *Report, error) {
	c, err := Config(cfg)
	if err != nil {
		return nil, nil, err
	}
	sdata, err := ReadSummarizerData(dataDir, opts.Data)
	if err != nil {
		return nil, nil, err
	}
	tdata, err := ReadTrackerData(dataDir, c.Tracker.MaxLen-1, opts.Data)
	if err != nil {
		return nil, nil, err
	}
	rep, err := variant.TrainSumThenTrack(ctx, variant.Run{Data: dataDir, Out: outDir, Log: opts.Log},
		variant.SummarizerPart(c, dataDir, sdata, opts,
			fmt.Sprintf("summarizer of the whole abstract: %d train / %d dev instances", len(sdata.Train), len(sdata.Dev))),
		variant.Part[*tracker.Report]{
			Announce: fmt.Sprintf("tracker of (sentence, summary) pairs: %d train / %d dev pairs", len(tdata.Train.Examples), len(tdata.Dev.Examples)),
			Train: func(ctx context.Context, dir string) (checkpoint.Identity, *tracker.Report, error) {
				tm, rep, err := tracker.Train(ctx, c, dataDir, dir, tracker.TrainOptions{Log: opts.Log, AfterStep: opts.AfterStep, Trace: opts.Trace,
					AllowChangedConfig: opts.AllowChangedConfig, Data: tdata, Part: true})
				if err != nil {
					return checkpoint.Identity{}, nil, err
				}
				return tm.Hyperparams().Identity(), rep, nil
			}})
	if err != nil {
		return nil, nil, err
	}
	m, err := Load(outDir)
	return m, rep, err
}

// ReadSummarizerData reads the end_to_end rows of dataDir (by the prepared splits, or by assign)
// as summarizer rows whose tracked sentences are the whole abstract.
func ReadSummarizerData(dataDir string, assign variant.Assign) (*summarizer.Data, error) {
	return variant.SummarizerData(dataDir, assign, func(_ *subword.Tokenizer, r *dataset.EndToEndRow) (dataset.SummarizerRow, error) {
		all := make([]int32, len(r.Document))
		for k := range all {
			all[k] = int32(k)
		}
		// DocumentIDs are the sentences joined with [SEP], as Summarize joins a request's.
		return dataset.SummarizerRow{PMID: r.PMID, Aspect: r.Aspect, CitedIndexes: all, CitedSentences: r.Document,
			Document: r.Document, Summary: r.Summary, CitedIDs: r.DocumentIDs, DocumentIDs: r.DocumentIDs, SummaryIDs: r.SummaryIDs}, nil
	})
}

// ReadTrackerData reads the sum_then_track rows of dataDir (by the prepared splits, or by assign)
// as tracker examples (tracker.PairExample) of at most maxTokens tokens.
func ReadTrackerData(dataDir string, maxTokens int, assign variant.Assign) (*tracker.Data, error) {
	man, err := dataset.ReadManifest(dataDir)
	if err != nil {
		return nil, err
	}
	aspects := dataset.Aspects(man.AspectSet)
	if len(aspects) == 0 {
		return nil, fmt.Errorf("%s: unknown aspect set %q", dataDir, man.AspectSet)
	}
	tok, err := subword.Load(filepath.Join(dataDir, dataset.TokenizerFile))
	if err != nil {
		return nil, err
	}
	sep, ok := tok.SpecialID("[SEP]")
	if !ok {
		return nil, fmt.Errorf("%s: tokenizer has no [SEP] token", dataDir)
	}
	index := map[string]int{}
	for i, a := range aspects {
		index[a.Code] = i
	}
	train, dev, err := variant.Rows(dataDir, dataset.TaskSumThenTrack, func(r *dataset.SumThenTrackRow) string { return r.PMID }, assign)
	if err != nil {
		return nil, err
	}
	convert := func(rows []dataset.SumThenTrackRow) (tracker.SplitData, error) {
		// Every sentence of a positive instance is a row: their count is the abstract's length.
		n := map[[2]string]int{}
		for _, r := range rows {
			n[[2]string{r.PMID, r.Aspect}]++
		}
		var sd tracker.SplitData
		for _, r := range rows {
			a, ok := index[r.Aspect]
			if !ok {
				return sd, fmt.Errorf("%s: sum_then_track row %s/%s: aspect %q not in set %q", dataDir, r.PMID, r.Aspect, r.Aspect, man.AspectSet)
			}
			ex := tracker.PairExample(r.SentenceIDs, r.SummaryIDs, sep, maxTokens, a, int(r.SentenceIndex), n[[2]string{r.PMID, r.Aspect}])
			if r.Label {
				ex.Label = 1
			}
			sd.Examples = append(sd.Examples, ex)
			sd.Keys = append(sd.Keys, tracker.RowKey{PMID: r.PMID, Aspect: r.Aspect, SentenceIndex: int(r.SentenceIndex)})
		}
		return sd, nil
	}
	d := &tracker.Data{Manifest: man, Tokenizer: tok, Aspects: aspects}
	if d.Train, err = convert(train); err != nil {
		return nil, err
	}
	if d.Dev, err = convert(dev); err != nil {
		return nil, err
	}
	return d, nil
}
