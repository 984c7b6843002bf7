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
}

// FitLexicalBaseline fits the baseline on data.Train with the settings of tc (imbalance,
// pos_weight, lexical_l2, ngram_buckets, lexical_calibration_folds, whose inner folds are dealt
// with seed); data.Dev and data.Test are not used.
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
	if tc.LexicalCalibrationFolds > 0 {
		if shifts, err = lexicalCalibration(hp, tc, data.Train, tc.LexicalCalibrationFolds, seed); err != nil {
			return nil, err
		}
	}
	b := &LexicalBaseline{hp: hp, idfTok: idfTok, idfBi: idfBi, Shifts: shifts}
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

// baselineHyperparams returns the hyperparameters Train would use for data with tc.
func baselineHyperparams(tc config.Tracker, data *Data) *Hyperparams {
	codes, names := make([]string, len(data.Aspects)), make([]string, len(data.Aspects))
	for i, a := range data.Aspects {
		codes[i], names[i] = a.Code, a.Name
	}
	return NewHyperparams(tc, data.Tokenizer.VocabSize(), data.Manifest.AspectSet, codes, names)
}
