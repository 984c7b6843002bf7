package tracker

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// NumContextFeatures is the number of features of a sentence's context rescoring.
const NumContextFeatures = 6

// contextPad stands for the logit of the missing neighbour of a first or last sentence: far
// below any cut, as a sentence that is certainly not relevant.
const contextPad = -8

// contextFitIterations of full-batch Adagrad fit the 7 weights per aspect of a rescorer.
const contextFitIterations = 300

// contextL2 is the rescorer's L2 penalty on its feature weights (not the bias).
const contextL2 = 1e-3

// ContextRescorer is a second stage over a tracker's logits that sees the whole abstract: per
// aspect, a logistic regression on a sentence's features within its instance (PMID, aspect):
// its logit z, z minus the instance's highest logit, whether it is that highest one, the highest
// logit itself, and the logits of the previous and next sentences (contextPad when there is
// none). A sentence-level model scores each sentence alone; relevant sentences come in runs and
// an instance's best sentence is relevant more often than its logit says, which this recovers.
// The rescorer is fitted on out-of-fold logits of the training split only (contextFromOOF),
// and Shifts (bestShifts of its own scores) keep 0.5 as the operating threshold. Train stores it
// in the checkpoint (checkpoint.ContextFile) and Load attaches it to the Model, whose ScoreBatch
// and ScoreSplit apply it; ScoreExamples (single rows, no instance) never does.
type ContextRescorer struct {
	// Weights holds, per aspect, NumContextFeatures weights then the bias.
	Weights [][]float64 `json:"weights"`
	// Shifts are the per-aspect logit shifts added after the regression.
	Shifts []float64 `json:"shifts"`
}

// contextFeatures returns the features of every row given the rows' logits and keys (rows of an
// instance may come in any order; their sentence indexes locate the neighbours).
func contextFeatures(logits []float64, keys []RowKey) [][NumContextFeatures]float64 {
	type inst struct {
		max float64
		at  map[int]float64
	}
	insts := map[[2]string]*inst{}
	for i, k := range keys {
		key := [2]string{k.PMID, k.Aspect}
		in := insts[key]
		if in == nil {
			in = &inst{max: math.Inf(-1), at: map[int]float64{}}
			insts[key] = in
		}
		in.max = math.Max(in.max, logits[i])
		in.at[k.SentenceIndex] = logits[i]
	}
	out := make([][NumContextFeatures]float64, len(logits))
	for i, k := range keys {
		in := insts[[2]string{k.PMID, k.Aspect}]
		z := logits[i]
		top := 0.0
		if z == in.max {
			top = 1
		}
		prev, ok := in.at[k.SentenceIndex-1]
		if !ok {
			prev = contextPad
		}
		next, ok := in.at[k.SentenceIndex+1]
		if !ok {
			next = contextPad
		}
		out[i] = [NumContextFeatures]float64{z, z - in.max, top, in.max, prev, next}
	}
	return out
}

// fitContextRescorer fits a rescorer on rows (logits, their examples for the labels and aspects,
// their keys for the instances) of `aspects` aspects, with decision threshold threshold.
func fitContextRescorer(logits []float64, exs []Example, keys []RowKey, aspects int, threshold float64) *ContextRescorer {
	feats := contextFeatures(logits, keys)
	c := &ContextRescorer{Weights: make([][]float64, aspects)}
	n := make([]float64, aspects)
	for _, e := range exs {
		n[e.Aspect]++
	}
	const lr = 0.5
	for a := range aspects {
		w, h := make([]float64, NumContextFeatures+1), make([]float64, NumContextFeatures+1)
		g := make([]float64, NumContextFeatures+1)
		for range contextFitIterations {
			if n[a] == 0 {
				break
			}
			clear(g)
			for i, e := range exs {
				if int(e.Aspect) != a {
					continue
				}
				d := (sigmoid(contextLogit(w, feats[i])) - float64(e.Label)) / n[a]
				for j, f := range feats[i] {
					g[j] += d * f
				}
				g[NumContextFeatures] += d
			}
			for j := range w {
				gj := g[j]
				if j < NumContextFeatures {
					gj += contextL2 * w[j]
				}
				h[j] += gj * gj
				w[j] -= lr * gj / math.Sqrt(h[j]+1e-12)
			}
		}
		c.Weights[a] = w
	}
	scores := make([]float64, len(logits))
	for i, e := range exs {
		scores[i] = contextLogit(c.Weights[e.Aspect], feats[i])
	}
	c.Shifts = bestShifts(scores, exs, aspects, threshold)
	return c
}

// Rescore returns the rescored probability of every row (logits of the first stage, the rows'
// examples for their aspects, keys for their instances). All rows of an instance must be given
// together: the features compare a sentence with the rest of its abstract.
func (c *ContextRescorer) Rescore(logits []float64, exs []Example, keys []RowKey) ([]float32, error) {
	if len(exs) != len(logits) || len(keys) != len(logits) {
		return nil, fmt.Errorf("tracker: context rescoring: %d logits, %d examples, %d keys", len(logits), len(exs), len(keys))
	}
	feats := contextFeatures(logits, keys)
	out := make([]float32, len(logits))
	for i, e := range exs {
		a := int(e.Aspect)
		if a < 0 || a >= len(c.Weights) || len(c.Weights[a]) != NumContextFeatures+1 || a >= len(c.Shifts) {
			return nil, fmt.Errorf("tracker: context rescoring: row %d has aspect %d, the rescorer has %d", i, a, len(c.Weights))
		}
		out[i] = float32(sigmoid(contextLogit(c.Weights[a], feats[i]) + c.Shifts[a]))
	}
	return out, nil
}

// contextFromOOF fits the rescorer on the inner out-of-fold lexical logits of the train split
// (lexicalOOF of tracker.lexical_calibration_folds inner folds by abstract), shifted by their
// per-aspect calibration as the calibrated warm start is, so that the rescorer sees logits placed
// as the model's (the calibration shifts bestShifts computes from the same logits). Only the train
// split is read. Train calls it when tracker.context_rescoring is on, sharing the inner folds
// with the calibration.
func contextFromOOF(logits []float64, train SplitData, aspects int, threshold float64) *ContextRescorer {
	shifts := bestShifts(logits, train.Examples, aspects, threshold)
	shifted := make([]float64, len(logits))
	for i, e := range train.Examples {
		shifted[i] = logits[i] + shifts[e.Aspect]
	}
	return fitContextRescorer(shifted, train.Examples, train.Keys, aspects, threshold)
}

// check reports a rescorer that cannot score `aspects` aspects (wrong sizes, non-finite values).
func (c *ContextRescorer) check(aspects int) error {
	if len(c.Weights) != aspects || len(c.Shifts) != aspects {
		return fmt.Errorf("context rescorer has %d weight rows and %d shifts for %d aspects", len(c.Weights), len(c.Shifts), aspects)
	}
	for a, w := range c.Weights {
		if len(w) != NumContextFeatures+1 {
			return fmt.Errorf("context rescorer: aspect %d has %d weights, want %d", a, len(w), NumContextFeatures+1)
		}
		for _, x := range append(slices.Clone(w), c.Shifts[a]) {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("context rescorer: aspect %d has a non-finite weight or shift", a)
			}
		}
	}
	return nil
}

// readContextRescorer reads the rescorer of the checkpoint dir (checkpoint.ContextFile) for a
// model of `aspects` aspects; it returns nil, nil when the checkpoint has none (trained without
// tracker.context_rescoring, or before it existed).
func readContextRescorer(dir string, aspects int) (*ContextRescorer, error) {
	return readContextRescorerFrom(dir, checkpoint.DirFiles(dir), aspects)
}

// readContextRescorerFrom is readContextRescorer of the checkpoint dir whose files r reads.
func readContextRescorerFrom(dir string, r checkpoint.Reader, aspects int) (*ContextRescorer, error) {
	path := filepath.Join(dir, checkpoint.ContextFile)
	var c ContextRescorer
	b, err := r.ReadFile(checkpoint.ContextFile)
	if err == nil {
		err = atomicio.DecodeJSON(path, b, &c, true)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if err := c.check(aspects); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// rescoreRequests applies the rescorer to ScoreBatch's probabilities: each request is one
// instance (all sentences of an abstract, one aspect), rescored on its own.
func (c *ContextRescorer) rescoreRequests(probs []float32, exs []Example, reqs []Request) error {
	k := 0
	for _, r := range reqs {
		n := len(r.Doc)
		keys := make([]RowKey, n)
		for i := range keys {
			keys[i] = RowKey{Aspect: r.Aspect, SentenceIndex: i}
		}
		p, err := c.Rescore(Logits(probs[k:k+n]), exs[k:k+n], keys)
		if err != nil {
			return err
		}
		copy(probs[k:k+n], p)
		k += n
	}
	return nil
}

// Logits returns the logit of each probability (clamped away from 0 and 1).
func Logits(probs []float32) []float64 {
	out := make([]float64, len(probs))
	for i, p := range probs {
		q := math.Min(math.Max(float64(p), 1e-7), 1-1e-7)
		out[i] = math.Log(q / (1 - q))
	}
	return out
}

func contextLogit(w []float64, f [NumContextFeatures]float64) float64 {
	s := w[NumContextFeatures]
	for j, x := range f {
		s += w[j] * x
	}
	return s
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
