package role

import (
	"fmt"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/variant"
)

// SumThenTrack is TracSum's SUM-THEN-TRACK (Table 6, C.5) on a summarizer of the whole abstract
// and a pair tracker: model/stt's and model/pretrained's loaders return it with their own parts
// (the type parameters keep them reachable as such), infer composes it with any. It is safe for
// concurrent use when its parts are.
type SumThenTrack[S Summarizer, T PairTracker] struct {
	Summarizer S
	Tracker    T
	// Decode are the summarizer's decoding settings (the checkpoint's by default).
	Decode decode.Options
	// Threshold is the probability from which a sentence is cited (each loader sets its
	// default; infer resolves the one used: infer.Threshold).
	Threshold float64
}

// Predict writes one prediction per aspect of an abstract, in order (Algorithm 3): the summary of
// the whole abstract, and the sentences whose pair with it the tracker scores >= Threshold
// (Scores holds every sentence's probability). A summary saying the aspect is absent is the
// negative prediction ("Unknown.", no citation, no scores).
func (m *SumThenTrack[S, T]) Predict(pmid string, doc []string, aspects []string) ([]dataset.Prediction, error) {
	reqs := make([]summarizer.Request, len(aspects))
	for i, a := range aspects {
		reqs[i] = summarizer.Request{Aspect: a, Cited: doc}
	}
	sums, err := m.Summarizer.Summarize(reqs, m.Decode)
	if err != nil {
		return nil, fmt.Errorf("%s: abstract %s: %w", variant.SumThenTrack, pmid, err)
	}
	preds := make([]dataset.Prediction, len(aspects))
	var pairs []tracker.PairRequest
	var scored []int
	for i, a := range aspects {
		preds[i] = dataset.Prediction{PMID: pmid, Aspect: a, Summary: sums[i], Indexes: []int{}}
		if dataset.IsUnknownSummary(sums[i]) {
			preds[i].Summary = dataset.UnknownSummary
			continue
		}
		if len(doc) == 0 {
			continue // no sentence to cite
		}
		pairs = append(pairs, tracker.PairRequest{Doc: doc, Aspect: a, Summary: sums[i]})
		scored = append(scored, i)
	}
	if len(scored) == 0 {
		return preds, nil
	}
	// One call for every aspect: the sentences of all pairs share the tracker's batches.
	scores, err := m.Tracker.ScorePairs(pairs)
	if err == nil && len(scores) != len(pairs) {
		err = fmt.Errorf("the pair tracker returned %d score lists for %d summaries", len(scores), len(pairs))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: abstract %s: %w", variant.SumThenTrack, pmid, err)
	}
	for j, i := range scored {
		if len(scores[j]) != len(doc) {
			return nil, fmt.Errorf("%s: abstract %s, aspect %s: the pair tracker returned %d scores for %d sentences", variant.SumThenTrack, pmid, aspects[i], len(scores[j]), len(doc))
		}
		cite(&preds[i], scores[j], m.Threshold)
	}
	return preds, nil
}

// cite gives a SUM-THEN-TRACK prediction its citations (TracSum Algorithm 3): its Scores become
// scores (one probability per sentence of the abstract) and the sentences scoring >= threshold
// are appended to its Indexes.
func cite(pred *dataset.Prediction, scores []float32, threshold float64) {
	pred.Scores = scores
	for k, s := range scores {
		if float64(s) >= threshold {
			pred.Indexes = append(pred.Indexes, k)
		}
	}
}

// EndToEnd is TracSum's END-TO-END (Table 6, C.6) on an answerer: model/ete's and
// model/pretrained's loaders return it with their own answerer, infer composes it with any. It
// counts what it repaired (Stats) and is safe for concurrent use when its answerer is.
type EndToEnd[A Answerer] struct {
	// S is the model that answers (named S as each backbone's END-TO-END model was).
	S A
	// Decode are the decoding settings (the checkpoint's by default; infer's flags override them).
	Decode decode.Options
	// Meta is the checkpoint's variant.json (zero when composed from a loaded answerer).
	Meta variant.Meta

	repairs Repairs
}

// Predict writes one prediction per aspect of an abstract, in order (Algorithm 4): the answer read
// back by the answerer (invalid, out-of-range and repeated indices dropped; "Unknown." without
// citations), with the problems it repaired, counted in Stats.
func (m *EndToEnd[A]) Predict(pmid string, doc []string, aspects []string) ([]dataset.Prediction, error) {
	reqs := make([]summarizer.Request, len(aspects))
	for i, a := range aspects {
		reqs[i] = summarizer.Request{Aspect: a, Cited: doc}
	}
	answers, err := m.S.Answer(reqs, m.Decode)
	if err == nil && len(answers) != len(aspects) {
		err = fmt.Errorf("the answerer returned %d answers for %d aspects", len(answers), len(aspects))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: abstract %s: %w", variant.EndToEnd, pmid, err)
	}
	return m.repairs.Predictions(pmid, aspects, answers, func(text string) Output { return m.S.ParseAnswer(text, len(doc)) }), nil
}

// Stats returns what Predict has repaired so far.
func (m *EndToEnd[A]) Stats() Stats { return m.repairs.Stats() }
