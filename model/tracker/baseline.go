package tracker

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// LexicalBaseline is the tracker's strong lexical baseline (Textbook, fitted on the train split
// only) and, as named ablations, the same with per-aspect calibration shifts or with the context
// rescorer stacked on it. It is the baseline of the cross-validation harness (tracksum-train
// --folds K --cv-model lexical; lexical-calibrated and lexical-context for the ablations) and of
// the pipeline cross-validation; at StageContext it is also the tracker of tracker.architecture
// lexical-context (the default), which Train fits and saves and Load reads back.
type LexicalBaseline struct {
	Textbook *Textbook
	// Shifts are per-aspect logit shifts (bestShifts of the inner out-of-fold logits; nil when not
	// asked for), added before the sigmoid.
	Shifts []float64
	// Context is the context rescorer (nil when not asked for), fitted on the textbook model's
	// inner out-of-fold logits of the train split and applied by ScoreSplit.
	Context *ContextRescorer
}

// LexicalStage is what FitLexicalBaseline stacks on the textbook model.
type LexicalStage int

// Stages of FitLexicalBaseline.
const (
	// StageNone is the textbook model alone.
	StageNone LexicalStage = iota
	// StageCalibration adds per-aspect logit shifts that maximise the F1 at 0.5 of the inner
	// out-of-fold logits (bestShifts).
	StageCalibration
	// StageContext adds the context rescorer (fitContextRescorer, which ends with its own shifts).
	StageContext
)

// FitLexicalBaseline fits the textbook baseline on data.Train and, unless stage is StageNone, the
// stage stacked on it from the textbook model's out-of-fold logits of innerFolds inner folds of
// the train split by abstract (dealt with seed). data.Dev and data.Test are not read.
func FitLexicalBaseline(data *Data, stage LexicalStage, innerFolds int, seed int64) (*LexicalBaseline, error) {
	return fitLexicalBaseline(data, stage, innerFolds, seed, 0.5)
}

// fitLexicalBaseline is FitLexicalBaseline with the decision threshold the calibration and the
// rescorer's shifts aim at (tracker.threshold for the lexical-context tracker of Train).
func fitLexicalBaseline(data *Data, stage LexicalStage, innerFolds int, seed int64, threshold float64) (*LexicalBaseline, error) {
	if len(data.Train.Examples) == 0 {
		return nil, fmt.Errorf("%w: no training rows for the lexical baseline", ErrPrepared)
	}
	for i, e := range data.Train.Examples {
		if e.Text == "" {
			return nil, fmt.Errorf("%w: train row %d (%s/%s) has no sentence text", ErrPrepared, i, data.Train.Keys[i].PMID, data.Train.Keys[i].Aspect)
		}
	}
	na := len(data.Aspects)
	tb, err := FitTextbook(data.Train.Examples, na)
	if err != nil {
		return nil, err
	}
	b := &LexicalBaseline{Textbook: tb}
	if stage == StageNone {
		return b, nil
	}
	oof, err := textbookOOF(data.Train, na, innerFolds, seed)
	if err != nil {
		return nil, err
	}
	if stage == StageCalibration {
		b.Shifts = bestShifts(oof, data.Train.Examples, na, threshold)
	} else {
		b.Context = fitContextRescorer(oof, data.Train.Examples, data.Train.Keys, na, threshold)
	}
	return b, nil
}

// ScoreSplit returns the probability of each row of s: the textbook model's, then the context
// rescorer (when the baseline has one) over the rows of each instance (s.Keys).
func (b *LexicalBaseline) ScoreSplit(s SplitData) ([]float32, error) {
	probs := b.scoreExamples(s.Examples)
	if b.Context == nil {
		return probs, nil
	}
	return b.Context.Rescore(Logits(probs), s.Examples, s.Keys)
}

// innerFolds deals the abstracts (PMIDs) of keys into `folds` inner folds: sorted, shuffled with
// seed on calibrationStream, dealt round-robin. Only the keys' own split is read.
func innerFolds(keys []RowKey, folds int, seed int64) (map[string]int, error) {
	var pmids []string
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[k.PMID] {
			seen[k.PMID] = true
			pmids = append(pmids, k.PMID)
		}
	}
	if folds < 2 || len(pmids) < folds {
		return nil, fmt.Errorf("%d inner folds need at least 2 folds and as many abstracts (have %d)", folds, len(pmids))
	}
	slices.Sort(pmids)
	rng := rand.New(rand.NewPCG(uint64(seed), calibrationStream))
	rng.Shuffle(len(pmids), func(i, j int) { pmids[i], pmids[j] = pmids[j], pmids[i] })
	fold := make(map[string]int, len(pmids))
	for i, id := range pmids {
		fold[id] = i % folds
	}
	return fold, nil
}

// textbookOOF returns the textbook model's out-of-fold logit of every row of train, from the inner
// folds of innerFolds (the same folds as lexicalOOF's for the same seed).
func textbookOOF(train SplitData, aspects, folds int, seed int64) ([]float64, error) {
	return outOfFold("out-of-fold", train, folds, seed, func(exs []Example) (func(*Example) float64, error) {
		tb, err := FitTextbook(exs, aspects)
		if err != nil {
			return nil, err
		}
		return tb.Logit, nil
	})
}
