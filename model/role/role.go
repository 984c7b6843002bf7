// Package role declares, once, the four parts a TracSum method is composed of, and composes
// TracSum's Table 6 variants over them, whichever backbone (the from-scratch models or a
// fine-tuned pretrained LM) implements the parts:
//
//   - Tracker scores (sentence, aspect) pairs: Track-then-Sum's first stage (infer.Pipeline).
//   - PairTracker scores (sentence, summary) pairs: SUM-THEN-TRACK's second stage.
//   - Summarizer writes a summary from sentences and an aspect (and the abstract, TTS (+) f).
//   - Answerer writes END-TO-END's raw answer, summary and cited indices, for an abstract and an
//     aspect, and reads such an answer back (ParseMarked's repairs).
//
// SumThenTrack and EndToEnd hold the one Predict of each variant (TracSum Algorithms 3 and 4);
// Track-then-Sum is composed in package infer (Pipeline.Process). The backbones implement the
// parts as methods of their models: *tracker.Model (Tracker, PairTracker), *summarizer.Summarizer
// (Summarizer), ete.Answerer (Answerer: the summarizer on indexed sentences), *pretrained.Tracker
// (Tracker, PairTracker), *pretrained.Summarizer (Summarizer, Answerer) and infer's fold Ensemble
// (Tracker). Which parts a checkpoint holds is the loaders' business (model/variant's marker,
// model/pretrained's meta): a part implements a role's methods whatever it was trained for.
package role

import (
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
)

// Tracker scores (sentence, aspect) pairs: for each request, the probability that each sentence
// of its abstract (Doc) reports its aspect, one per sentence in order. A request is one instance
// (a tracker with a context rescorer rescores its sentences together): it holds the whole
// abstract.
type Tracker interface {
	ScoreBatch(reqs []tracker.Request) ([][]float32, error)
}

// PairTracker scores (sentence, summary) pairs (SUM-THEN-TRACK's tracker, TracSum C.5.3): for each
// request, the probability that each sentence of its abstract supports its summary, one per
// sentence in order.
type PairTracker interface {
	ScorePairs(reqs []tracker.PairRequest) ([][]float32, error)
}

// Summarizer writes one summary per request from its cited sentences and aspect (and its
// Document, when the model reads the abstract as context), with the decoding settings o.
type Summarizer interface {
	Summarize(reqs []summarizer.Request, o decode.Options) ([]string, error)
}

// Answerer is END-TO-END's model (TracSum C.6). Answer writes, for each request (an aspect and
// the whole abstract in Cited), the raw answer naming the summary and the indices of the
// sentences it cites, in the model's own format: the answerer shows the model each sentence with
// its index. ParseAnswer reads an answer for an abstract of n sentences back, repairing what it
// must (ParseMarked).
type Answerer interface {
	Answer(reqs []summarizer.Request, o decode.Options) ([]string, error)
	ParseAnswer(answer string, n int) Output
}
