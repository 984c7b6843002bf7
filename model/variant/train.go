package variant

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/subword"
)

// Options are the parts of a variant's training run that are not configuration, on either
// backbone (model/stt, model/ete, model/pretrained). Data, when set, trains on the abstracts it
// puts in dataset.SplitTrain (selecting on those in dataset.SplitDev) among all the prepared
// splits, instead of the prepared train and dev splits: a cross-validation fold.
type Options = training.TaskOptions[Assign]

// Run is one training of a variant's checkpoint directory: what its variant.json and manifests
// state besides the parts' own identities.
type Run struct {
	// Pretrained marks the parts as fine-tuned pretrained LMs (Meta.Pretrained).
	Pretrained bool
	// Data is the prepared directory (its manifest gives the aspect set), Out the checkpoint.
	Data, Out string
	// Log receives the line announcing each part; os.Stderr when nil.
	Log io.Writer
}

// Part is one model of a variant, as its backbone trains it.
type Part[R any] struct {
	// Announce is logged, after the variant's name, before the part trains; SUM-THEN-TRACK adds
	// " -> " and the part's directory.
	Announce string
	// Train trains the part into dir (an interrupted run resumes) and returns the identity its
	// manifest states (before As) and its training report.
	Train func(ctx context.Context, dir string) (checkpoint.Identity, R, error)
}

// Report is report.json of a SUM-THEN-TRACK directory: its two parts' training reports.
type Report[S, T any] struct {
	Summarizer S `json:"summarizer"`
	Tracker    T `json:"tracker"`
}

// TrainSumThenTrack trains SUM-THEN-TRACK into r.Out: the summarizer part into
// r.Out/summarizer, then the pair tracker into r.Out/tracker, each marked with its variant.json
// and sealed as that part; then report.json, and the directory of both is sealed last (the
// summarizer's backbone and decoding, the tracker's threshold), which marks it finished.
func TrainSumThenTrack[S, T any](ctx context.Context, r Run, summarize Part[S], track Part[T]) (*Report[S, T], error) {
	lock, err := training.LockOutDir(r.Out, checkpoint.VariantFile, SumThenTrack)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	meta, err := r.begin(SumThenTrack)
	if err != nil {
		return nil, err
	}
	if err := Write(r.Out, meta); err != nil {
		return nil, err
	}
	rep := &Report[S, T]{}
	sid, err := trainPart(ctx, r, meta, checkpoint.VariantSummarizerDir, summarize, &rep.Summarizer)
	if err != nil {
		return nil, err
	}
	tid, err := trainPart(ctx, r, meta, checkpoint.VariantTrackerDir, track, &rep.Tracker)
	if err != nil {
		return nil, err
	}
	if err := checkpoint.WriteJSON(filepath.Join(r.Out, checkpoint.ReportFile), rep); err != nil {
		return nil, err
	}
	id := sid.As(checkpoint.KindSumThenTrack, "")
	id.Settings.Threshold = tid.Settings.Threshold
	if _, err := checkpoint.Seal(r.Out, id); err != nil {
		return nil, err
	}
	return rep, nil
}

// trainPart trains part (checkpoint.VariantSummarizerDir or VariantTrackerDir) of SUM-THEN-TRACK
// into its directory under r.Out, marks and seals it, and stores its report in rep.
func trainPart[R any](ctx context.Context, r Run, meta Meta, part string, p Part[R], rep *R) (checkpoint.Identity, error) {
	dir := filepath.Join(r.Out, part)
	fmt.Fprintf(cmp.Or[io.Writer](r.Log, os.Stderr), "%s: %s -> %s\n", SumThenTrack, p.Announce, dir)
	id, res, err := p.Train(ctx, dir)
	if err != nil {
		return id, err
	}
	*rep = res
	meta.Part = part
	if err := Write(dir, meta); err != nil {
		return id, err
	}
	_, err = checkpoint.Seal(dir, id.As(checkpoint.KindSumThenTrack, part))
	return id, err
}

// TrainEndToEnd trains END-TO-END's one model into r.Out (the model's own training locks it),
// then writes variant.json and seals the directory: a checkpoint whose training has not finished
// is not loadable as END-TO-END. It returns the model's training report.
func TrainEndToEnd[R any](ctx context.Context, r Run, p Part[R]) (R, error) {
	var zero R
	meta, err := r.begin(EndToEnd)
	if err != nil {
		return zero, err
	}
	fmt.Fprintf(cmp.Or[io.Writer](r.Log, os.Stderr), "%s: %s\n", EndToEnd, p.Announce)
	id, rep, err := p.Train(ctx, r.Out)
	if err != nil {
		return zero, err
	}
	if err := Write(r.Out, meta); err != nil {
		return zero, err
	}
	if _, err := checkpoint.Seal(r.Out, id.As(checkpoint.KindEndToEnd, "")); err != nil {
		return zero, err
	}
	return rep, nil
}

// begin refuses an r.Out holding a checkpoint of another variant or backbone before anything is
// written into it, and returns variant.json of the directory, with the data's aspect set.
func (r Run) begin(v string) (Meta, error) {
	if _, err := os.Stat(filepath.Join(r.Out, checkpoint.VariantFile)); err == nil {
		if _, err := ReadKind(r.Out, v, "", r.Pretrained); err != nil {
			return Meta{}, fmt.Errorf("%s: --out: %w", v, err)
		}
	}
	man, err := dataset.ReadManifest(r.Data)
	if err != nil {
		return Meta{}, err
	}
	return Meta{Variant: v, AspectSet: man.AspectSet, Pretrained: r.Pretrained}, nil
}

// SummarizerPart is the from-scratch summarizer (model/summarizer), trained on data with the
// settings cfg as a variant's model: SUM-THEN-TRACK's summarizer part, END-TO-END's one model.
func SummarizerPart(cfg *config.Config, dataDir string, data *summarizer.Data, opts Options, announce string) Part[*summarizer.Report] {
	return Part[*summarizer.Report]{Announce: announce, Train: func(ctx context.Context, dir string) (checkpoint.Identity, *summarizer.Report, error) {
		sm, rep, err := summarizer.Train(ctx, cfg, dataDir, dir, summarizer.TrainOptions{Log: opts.Log, AfterStep: opts.AfterStep, Trace: opts.Trace,
			AllowChangedConfig: opts.AllowChangedConfig, Data: data, Part: true})
		if err != nil {
			return checkpoint.Identity{}, nil, err
		}
		return sm.Identity(), rep, nil
	}}
}

// SummarizerData reads the end_to_end rows of dataDir (negatives included; by the prepared
// splits, or by assign) as the from-scratch summarizer's rows, each made by convert with the
// prepared tokenizer: the inputs of SUM-THEN-TRACK's summarizer and of END-TO-END.
func SummarizerData(dataDir string, assign Assign, convert func(*subword.Tokenizer, *dataset.EndToEndRow) (dataset.SummarizerRow, error)) (*summarizer.Data, error) {
	man, err := dataset.ReadManifest(dataDir)
	if err != nil {
		return nil, err
	}
	tokPath := filepath.Join(dataDir, dataset.TokenizerFile)
	tok, err := subword.Load(tokPath)
	if err != nil {
		return nil, err
	}
	train, dev, err := Rows(dataDir, dataset.TaskEndToEnd, func(r *dataset.EndToEndRow) string { return r.PMID }, assign)
	if err != nil {
		return nil, err
	}
	d := &summarizer.Data{Manifest: man, Tokenizer: tok, TokenizerPath: tokPath}
	for _, part := range []struct {
		rows []dataset.EndToEndRow
		out  *[]dataset.SummarizerRow
	}{{train, &d.Train}, {dev, &d.Dev}} {
		*part.out = make([]dataset.SummarizerRow, len(part.rows))
		for i := range part.rows {
			if (*part.out)[i], err = convert(tok, &part.rows[i]); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}
