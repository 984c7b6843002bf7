package tracker

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model"
)

// LexicalBaseline is the TF-IDF + logistic-regression tracker alone: exactly the lexical warm
// start that Train fits before training (same IDF tables, same imbalance weighting, same
// objective and solver: fitLexical), scored on the host without the encoder. It is the baseline
// of the cross-validation harness (tracksum-train --folds K --cv-model lexical).
type LexicalBaseline struct {
	hp             *Hyperparams
	idfTok, idfBi  []float32
	tokens, bigram []float32 // [aspect, vocab] and [aspect, bucket] weights
	pos, bias      []float32 // [aspect, NumPosFeatures] and [aspect]
	// Shifts are the per-aspect logit shifts of lexical_calibration_folds (already in the bias;
	// nil when off), in the order of the aspect set.
	Shifts []float64
	// Context is the context rescorer of tracker.context_rescoring (nil when off), fitted on the
	// same inner folds as Shifts and applied by ScoreSplit.
	Context *ContextRescorer
}

// FitLexicalBaseline fits the baseline on data.Train with the settings of tc (imbalance,
// pos_weight, lexical_l2, ngram_buckets, lexical_calibration_folds, whose inner folds are dealt
// with seed, and context_rescoring, fitted on the same inner folds); data.Dev and data.Test are
// not used.
func FitLexicalBaseline(tc config.Tracker, data *Data, seed int64) (*LexicalBaseline, error) {
	if len(data.Train.Examples) == 0 {
		return nil, fmt.Errorf("%w: no training rows for the lexical baseline", ErrPrepared)
	}
	hp := baselineHyperparams(tc, data)
	store := gomlxmodel.NewStore()
	idfTok, idfBi, err := SetIDF(store, hp, data.Train.Examples)
	if err != nil {
		return nil, err
	}
	var shifts []float64
	var context *ContextRescorer
	if tc.LexicalCalibrationFolds > 0 || tc.ContextRescoring {
		// One inner K-fold for both, as in Train.
		oof, err := lexicalOOF(hp, tc, data.Train, tc.LexicalCalibrationFolds, seed)
		if err != nil {
			return nil, err
		}
		shifts = bestShifts(oof, data.Train.Examples, len(hp.Aspects), tc.Threshold)
		if tc.ContextRescoring {
			context = contextFromOOF(oof, data.Train, len(hp.Aspects), tc.Threshold)
		}
	}
	b := &LexicalBaseline{hp: hp, idfTok: idfTok, idfBi: idfBi, Shifts: shifts, Context: context}
	if err := fitLexical(store, hp, weighTraining(data.Train.Examples, tc), idfTok, idfBi, tc.LexicalL2, shifts); err != nil {
		return nil, err
	}
	head := model.ModelScope + "/head/"
	for _, v := range []struct {
		path string
		dst  *[]float32
	}{{head + "lexical/tokens", &b.tokens}, {head + "lexical/bigrams", &b.bigram},
		{head + "aspect_position_weights", &b.pos}, {head + "aspect_bias", &b.bias}} {
		if *v.dst, err = tensors.CopyFlatData[float32](store.GetVariable(v.path).MustValue()); err != nil {
			return nil, fmt.Errorf("tracker: lexical baseline: %s: %w", v.path, err)
		}
	}
	return b, nil
}

// Score returns the probability of each example: the sigmoid of the per-aspect bias plus the
// position and TF-IDF terms, computed in float64 as fitLexical computes them.
func (b *LexicalBaseline) Score(exs []Example) []float32 {
	out := make([]float32, len(exs))
	for i, e := range exs {
		a := int(e.Aspect)
		s := float64(b.bias[a])
		idx, val := lexicalFeatures(e, b.hp, b.idfTok, b.idfBi)
		for j, k := range idx {
			if k < b.hp.VocabSize {
				s += float64(b.tokens[a*b.hp.VocabSize+k]) * val[j]
			} else {
				s += float64(b.bigram[a*b.hp.NgramBuckets+k-b.hp.VocabSize]) * val[j]
			}
		}
		for j, f := range e.Pos {
			s += float64(b.pos[a*NumPosFeatures+j]) * float64(f)
		}
		out[i] = float32(1 / (1 + math.Exp(-s)))
	}
	return out
}

// ScoreSplit returns the probability of each row of s: Score, then the context rescorer (when
// the baseline has one) over the rows of each instance (s.Keys), as Model.ScoreSplit.
func (b *LexicalBaseline) ScoreSplit(s SplitData) ([]float32, error) {
	probs := b.Score(s.Examples)
	if b.Context == nil {
		return probs, nil
	}
	return b.Context.Rescore(Logits(probs), s.Examples, s.Keys)
}

// baselineHyperparams returns the hyperparameters Train would use for data with tc.
func baselineHyperparams(tc config.Tracker, data *Data) *Hyperparams {
	codes, names := make([]string, len(data.Aspects)), make([]string, len(data.Aspects))
	for i, a := range data.Aspects {
		codes[i], names[i] = a.Code, a.Name
	}
	return NewHyperparams(tc, data.Tokenizer.VocabSize(), data.Manifest.AspectSet, codes, names)
}
