package pretrained

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/checkpoint"
	ckopen "github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/role"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/model/variant"
)

// TracSum's Table 6 variants on a fine-tuned pretrained causal LM, as the paper ran them
// (sections C.5 and C.6, Tables 18-19), with the training, checkpoints and decoding of the
// Track-then-Sum models of this package. Their prediction is package role's, composed over the
// parts' methods (role.SumThenTrack, role.EndToEnd), as for the from-scratch models:
//
//   - SUM-THEN-TRACK: a summarizer reads the aspect and the whole abstract (Table 18) and writes
//     "Summary: ..."; a pair tracker scores each (sentence, summary) pair (PairTrackerMessages,
//     tracker.head lm_cls or generative); the sentences scoring >= the threshold are cited. Its
//     directory has variant.json and two pretrained checkpoints, summarizer/ and tracker/, each with
//     its own variant.json, as model/stt's layout.
//   - END-TO-END: one model reads the aspect and the indexed sentences (Table 19) and writes
//     "Summary: ...\nCitations: 0, 3", read back by ParseEndToEnd with role.ParseMarked's repairs. Its
//     directory is a pretrained checkpoint plus variant.json, as model/ete's.
//
// variant.json has "pretrained": true, so that the from-scratch loaders (model/stt, model/ete)
// refuse these checkpoints and these loaders refuse theirs; pretrained.json's variant keeps each
// part from being loaded as a Track-then-Sum model or as the other variant.

// VariantOptions are the parts of a variant's training run that are not configuration.
type VariantOptions = variant.Options

// DefaultPairThreshold is the probability from which SUM-THEN-TRACK cites a sentence unless the
// caller sets another (infer resolves one: infer.Threshold): the paper's default (section C.5.1).
const DefaultPairThreshold = 0.5

// SumThenTrack is a loaded SUM-THEN-TRACK checkpoint on a pretrained LM: SUM-THEN-TRACK's one
// Predict (role.SumThenTrack) on the summarizer of the whole abstract and the pair tracker
// (Tracker.ScorePairs). Threshold defaults to DefaultPairThreshold. It is safe for concurrent use.
type SumThenTrack = role.SumThenTrack[*Summarizer, *Tracker]

// SumThenTrackReport is report.json of a SUM-THEN-TRACK directory: its two parts' reports.
type SumThenTrackReport = variant.Report[*Report, *Report]

// wholeAbstractInstances reads the end_to_end rows (negatives included, "Unknown.") as summarizer
// instances whose sentences are the whole abstract: the inputs of the SUM-THEN-TRACK summarizer
// and of END-TO-END.
func wholeAbstractInstances(dataDir string, assign variant.Assign) func() (train, dev []summaryInstance, err error) {
	return func() ([]summaryInstance, []summaryInstance, error) {
		train, dev, err := variant.Rows(dataDir, dataset.TaskEndToEnd, func(r *dataset.EndToEndRow) string { return r.PMID }, assign)
		if err != nil {
			return nil, nil, err
		}
		convert := func(rows []dataset.EndToEndRow) []summaryInstance {
			out := make([]summaryInstance, len(rows))
			for i, r := range rows {
				out[i] = summaryInstance{PMID: r.PMID, Aspect: r.Aspect, Sentences: r.Document, Summary: r.Summary, Citations: r.Citations}
			}
			return out
		}
		return convert(train), convert(dev), nil
	}
}

// TrainSumThenTrack fine-tunes SUM-THEN-TRACK on the prepared directory dataDir into outDir: the
// summarizer of the whole abstract (summarizer.pretrained, summarizer.* settings, from the
// end_to_end rows) into outDir/summarizer, then the pair tracker (tracker.pretrained, else the
// same snapshot; tracker.* settings, from the sum_then_track rows) into outDir/tracker. The pair
// tracker's prompt cap is tracker.max_seq_len plus summarizer.max_summary_len, room for the
// summary it reads besides the sentence. An interrupted run resumes. LoadSumThenTrack loads the
// result.
func TrainSumThenTrack(ctx context.Context, cfg *config.Config, dataDir, outDir string, opts VariantOptions) error {
	log := cmp.Or[io.Writer](opts.Log, os.Stderr)
	if cfg.Summarizer.Pretrained == "" {
		return fmt.Errorf("sum_then_track on a pretrained LM needs summarizer.pretrained (--pretrained DIR): tracker.pretrained alone would pair a from-scratch summarizer with a pretrained tracker")
	}
	base := cmp.Or(cfg.Tracker.Pretrained, cfg.Summarizer.Pretrained)
	_, err := variant.TrainSumThenTrack(ctx, variant.Run{Pretrained: true, Data: dataDir, Out: outDir, Log: log},
		variant.Part[*Report]{
			Announce: fmt.Sprintf("summarizer of the whole abstract (pretrained %s)", cfg.Summarizer.Pretrained),
			Train: func(ctx context.Context, dir string) (checkpoint.Identity, *Report, error) {
				return reported(trainSummarizer(ctx, cfg, training.Request{Data: dataDir, Out: dir, Log: log, AllowChangedConfig: opts.AllowChangedConfig},
					variant.SumThenTrack, wholeAbstractInstances(dataDir, opts.Data)))
			}},
		variant.Part[*Report]{
			Announce: fmt.Sprintf("tracker of (sentence, summary) pairs (pretrained %s)", base),
			Train: func(ctx context.Context, dir string) (checkpoint.Identity, *Report, error) {
				return reported(trainTracker(ctx, cfg, training.Request{Data: dataDir, Out: dir, Log: log, AllowChangedConfig: opts.AllowChangedConfig}, trackerRun{
					variant: variant.SumThenTrack, snapDir: base, maxSeqLen: cfg.Tracker.MaxSeqLen + cfg.Summarizer.MaxSummaryLen,
					rows: func() (train, dev []labelledPair, err error) {
						tr, dv, err := variant.Rows(dataDir, dataset.TaskSumThenTrack, func(r *dataset.SumThenTrackRow) string { return r.PMID }, opts.Data)
						return summaryPairs(tr), summaryPairs(dv), err
					}}))
			}})
	return err
}

// reported is a part's training result as variant.Part's Train returns it: its identity and report.
func reported(rep *Report, err error) (checkpoint.Identity, *Report, error) {
	if err != nil {
		return checkpoint.Identity{}, nil, err
	}
	return rep.id, rep, nil
}

// LoadSumThenTrack loads a SUM-THEN-TRACK directory written by TrainSumThenTrack, through its
// verified manifest (package open).
func LoadSumThenTrack(ctx context.Context, dir string, opts ...LoadOptions) (*SumThenTrack, error) {
	return ckopen.OpenAs[*SumThenTrack](ctx, dir, "pretrained.LoadSumThenTrack", openOptions(opts), checkpoint.KindSumThenTrack,
		"a SUM-THEN-TRACK checkpoint on a pretrained LM")
}

// LoadSumThenTrackParts loads SUM-THEN-TRACK from its two parts, which must be the summarizer and
// the pair tracker of SUM-THEN-TRACK directories on pretrained LMs, trained on one aspect set.
func LoadSumThenTrackParts(ctx context.Context, summarizerDir, trackerDir string, opts ...LoadOptions) (*SumThenTrack, error) {
	s, err := ckopen.OpenAs[*Summarizer](ctx, summarizerDir, "pretrained.LoadSumThenTrackParts", openOptions(opts), checkpoint.KindSumThenTrack,
		"the summarizer part of a SUM-THEN-TRACK checkpoint on a pretrained LM")
	if err != nil {
		return nil, err
	}
	t, err := ckopen.OpenAs[*Tracker](ctx, trackerDir, "pretrained.LoadSumThenTrackParts", openOptions(opts), checkpoint.KindSumThenTrack,
		"the pair tracker part of a SUM-THEN-TRACK checkpoint on a pretrained LM")
	if err != nil {
		return nil, err
	}
	return composeSumThenTrack(s, t, summarizerDir, trackerDir)
}

// openOptions are a loader's options as package open takes them.
func openOptions(opts []LoadOptions) ckopen.Options {
	return ckopen.Options{Precision: precisionOf(opts)}
}

// EndToEnd is a loaded END-TO-END checkpoint on a pretrained LM: END-TO-END's one Predict
// (role.EndToEnd) on the fine-tuned summarizer answering the Table 19 prompt
// (Summarizer.Answer, read back by ParseEndToEnd). It is safe for concurrent use.
type EndToEnd = role.EndToEnd[*Summarizer]

// TrainEndToEnd fine-tunes END-TO-END (summarizer.pretrained, summarizer.* settings, generation
// cap variants.max_output_len) on the end_to_end rows of the prepared directory dataDir
// (negatives included: "Summary: Unknown.\nCitations:") into outDir; an interrupted run resumes.
// LoadEndToEnd loads the result.
func TrainEndToEnd(ctx context.Context, cfg *config.Config, dataDir, outDir string, opts VariantOptions) error {
	log := cmp.Or[io.Writer](opts.Log, os.Stderr)
	if cfg.Summarizer.Pretrained == "" {
		return fmt.Errorf("end_to_end on a pretrained LM needs summarizer.pretrained (--pretrained DIR)")
	}
	_, err := variant.TrainEndToEnd(ctx, variant.Run{Pretrained: true, Data: dataDir, Out: outDir, Log: log}, variant.Part[*Report]{
		Announce: fmt.Sprintf("abstract with sentence indices -> \"Summary: ...\\n%s ...\" (pretrained %s) -> %s", CitationsPrefix, cfg.Summarizer.Pretrained, outDir),
		Train: func(ctx context.Context, dir string) (checkpoint.Identity, *Report, error) {
			return reported(trainSummarizer(ctx, cfg, training.Request{Data: dataDir, Out: dir, Log: log, AllowChangedConfig: opts.AllowChangedConfig},
				variant.EndToEnd, wholeAbstractInstances(dataDir, opts.Data)))
		}})
	return err
}

// LoadEndToEnd loads an END-TO-END checkpoint written by TrainEndToEnd, through its verified
// manifest (package open).
func LoadEndToEnd(ctx context.Context, dir string, opts ...LoadOptions) (*EndToEnd, error) {
	return ckopen.OpenAs[*EndToEnd](ctx, dir, "pretrained.LoadEndToEnd", openOptions(opts), checkpoint.KindEndToEnd,
		"an END-TO-END checkpoint on a pretrained LM")
}
