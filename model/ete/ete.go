// Package ete is TracSum's END-TO-END variant (Table 6, section C.6): one encoder-decoder reads
// the aspect and the whole abstract, each sentence after its index ("3: ..."), and writes the
// summary followed by the indices of the sentences it cites ("... [CITE] 0 3"). There is no
// tracker. The model is the summarizer's (model/summarizer: transformer with a copy mechanism,
// so indices and numbers can be copied from the source) with the longer source and output of the
// variants config section; Parse reads its output back robustly.
//
// Prediction is END-TO-END's one Predict (role.EndToEnd, shared with the variant on a pretrained
// LM) on Answerer, the summarizer seen through that input and output.
//
// A checkpoint is a summarizer checkpoint directory (checkpoint layout) plus variant.json, which
// Load requires, so that a Track-then-Sum summarizer is never run as END-TO-END.
//
// # Example
//
//	m, err := ete.Load("checkpoints/ete")
//	if err != nil {
//		return err
//	}
//	preds, err := m.Predict("12345", sentences, []string{"a", "p"})
package ete

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/role"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/model/variant"
	"github.com/tracksum/tracksum/subword"
)

// init registers END-TO-END as tracksum-train's task "end_to_end".
func init() {
	training.Register(training.Task{
		Name:        variant.EndToEnd,
		Section:     "summarizer",
		Description: "END-TO-END (TracSum Table 6): one encoder-decoder writes the summary and its citation indices from the whole abstract (summarizer.*, variants.*)",
		Train: func(ctx context.Context, cfg *config.Config, r training.Request) error {
			_, _, err := Train(ctx, cfg, r.Data, r.Out, training.OptionsOf[variant.Assign](r))
			return err
		},
	})
}

// Answerer is the from-scratch END-TO-END model (role.Answerer): the summarizer trained to read
// the aspect and the indexed sentences (IndexedSentences) and write the summary, the Marker and
// the cited indices (Target), read back by Parse.
type Answerer struct{ *summarizer.Summarizer }

// Answer implements role.Answerer: the summarizer's output for each request, its sentences shown
// with their indices.
func (a Answerer) Answer(reqs []summarizer.Request, o decode.Options) ([]string, error) {
	in := make([]summarizer.Request, len(reqs))
	for i, r := range reqs {
		in[i] = summarizer.Request{Aspect: r.Aspect, Cited: IndexedSentences(r.Cited)}
	}
	return a.Summarize(in, o)
}

// ParseAnswer implements role.Answerer with Parse.
func (Answerer) ParseAnswer(answer string, n int) role.Output { return Parse(answer, n) }

// Model is a loaded END-TO-END checkpoint: END-TO-END's one Predict (role.EndToEnd) on the
// from-scratch answerer. It is safe for concurrent use.
type Model = role.EndToEnd[Answerer]

// Load reads an END-TO-END checkpoint written by Train, through its verified manifest (package
// open).
func Load(dir string) (*Model, error) {
	return open.OpenAs[*Model](context.Background(), dir, "ete.Load", open.Options{}, checkpoint.KindEndToEnd,
		"a from-scratch END-TO-END checkpoint")
}

// TrainOptions are the parts of a Train run that are not configuration.
type TrainOptions = variant.Options

// Config returns the summarizer settings END-TO-END trains with: cfg.Summarizer with the
// variants section's source and output lengths, no full-context part, no minimum length (the
// minimum is relative to the tracked sentences, here the whole abstract) and no copy examples
// (their targets are copied sentences without the citation part: on TracSum they were 45% of the
// examples and, at 300 steps, the model copied the abstract instead of writing the marker).
func Config(cfg *config.Config) (*config.Config, error) {
	if cfg.Summarizer.Pretrained != "" {
		// tracksum-train --task end_to_end --pretrained runs pretrained.TrainEndToEnd instead; this
		// refusal is for the callers that reach the from-scratch training directly (the table6
		// cross-validation).
		return nil, fmt.Errorf("end_to_end: summarizer.pretrained is set: package ete trains the from-scratch summarizer only (tracksum-train --task end_to_end --pretrained DIR fine-tunes a pretrained LM; the table6 cross-validation does not)")
	}
	c := *cfg
	c.Summarizer.MaxSourceLen = cfg.Variants.MaxSourceLen
	c.Summarizer.MaxSummaryLen = cfg.Variants.MaxOutputLen
	c.Summarizer.Train.BatchSize = cfg.Variants.SummarizerBatchSize(config.BatchEndToEnd, false, cfg.Summarizer.Train.BatchSize)
	c.Summarizer.FullContext = false
	c.Summarizer.MinLenRatio = 0
	// The decoding aids tuned for Track-then-Sum (a longer decoding limit, a bonus for starting
	// at a cited sentence) were tuned on its summaries of tracked sentences, not on these outputs.
	c.Summarizer.MaxDecodeLen = 0
	c.Summarizer.CopyStartBonus = 0
	c.Summarizer.CopyExamples = 0
	return &c, c.Validate()
}

// Train trains END-TO-END on the end_to_end shards of the prepared directory dataDir (negatives
// included: "Unknown. [CITE]") and writes the checkpoint outDir (variant.TrainEndToEnd); an
// interrupted run resumes. It returns the loaded model and the summarizer's training report.
func Train(ctx context.Context, cfg *config.Config, dataDir, outDir string, opts TrainOptions) (*Model, *summarizer.Report, error) {
	c, err := Config(cfg)
	if err != nil {
		return nil, nil, err
	}
	data, err := ReadData(dataDir, opts.Data)
	if err != nil {
		return nil, nil, err
	}
	rep, err := variant.TrainEndToEnd(ctx, variant.Run{Data: dataDir, Out: outDir, Log: opts.Log}, variant.SummarizerPart(c, dataDir, data, opts,
		fmt.Sprintf("%d train / %d dev instances (abstract with sentence indices -> summary %s indices)", len(data.Train), len(data.Dev), Marker)))
	if err != nil {
		return nil, nil, err
	}
	m, err := Load(outDir)
	return m, rep, err
}

// ReadData reads the end_to_end rows of dataDir (by the prepared splits, or by assign) as
// summarizer rows: the indexed sentences as the source, Target as the summary.
func ReadData(dataDir string, assign variant.Assign) (*summarizer.Data, error) {
	return variant.SummarizerData(dataDir, assign, func(tok *subword.Tokenizer, r *dataset.EndToEndRow) (dataset.SummarizerRow, error) {
		sep, ok := tok.SpecialID("[SEP]")
		if !ok {
			return dataset.SummarizerRow{}, fmt.Errorf("%s: tokenizer has no [SEP] token", filepath.Join(dataDir, dataset.TokenizerFile))
		}
		src := IndexedSentences(r.Document)
		var ids []int32
		all := make([]int32, len(src))
		for k, s := range src {
			if k > 0 {
				ids = append(ids, sep)
			}
			// Encoded as Summarizer.Summarize encodes a request's sentences at inference.
			ids = append(ids, tok.Encode(s)...)
			all[k] = int32(k)
		}
		target := Target(r.Summary, r.Citations)
		return dataset.SummarizerRow{PMID: r.PMID, Aspect: r.Aspect, CitedIndexes: all, CitedSentences: src,
			Document: r.Document, Summary: target, CitedIDs: ids, DocumentIDs: r.DocumentIDs, SummaryIDs: tok.Encode(target)}, nil
	})
}
