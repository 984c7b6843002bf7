package tracker

import (
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model"
)

// lexicalFitIterations of full-batch Adagrad converge the warm-start regression on TracSum-sized
// data (a few thousand rows) in about a second.
const lexicalFitIterations = 300

// lexicalFeatures returns an example's lexical features exactly as LexicalGraph computes them:
// indices into [tokens | bigrams] and tf-idf values divided by the L2 norm.
func lexicalFeatures(e Example, hp *Hyperparams, idfTok, idfBi []float32) ([]int, []float64) {
	var idx []int
	var val []float64
	var sq float64
	for j, id := range e.IDs {
		if id == 0 {
			continue
		}
		w := float64(idfTok[id])
		idx, val, sq = append(idx, int(id)), append(val, w), sq+w*w
		if j > 0 && e.IDs[j-1] != 0 {
			h := BigramHash(e.IDs[j-1], id, hp.NgramBuckets)
			w := float64(idfBi[h])
			idx, val, sq = append(idx, hp.VocabSize+int(h)), append(val, w), sq+w*w
		}
	}
	norm := math.Sqrt(math.Max(sq, 1e-6))
	for i := range val {
		val[i] /= norm
	}
	return idx, val
}

// lexicalWeights are the fitted parameters of the per-aspect logistic regression: W [aspect,
// vocab+buckets], P [aspect, NumPosFeatures] and B [aspect].
type lexicalWeights struct {
	W, P, B []float64
}

// logit returns the regression's logit of e, computed as fitLexical's objective computes it.
func (w *lexicalWeights) logit(e Example, hp *Hyperparams, idfTok, idfBi []float32) float64 {
	a, nf := int(e.Aspect), hp.VocabSize+hp.NgramBuckets
	s := w.B[a]
	idx, val := lexicalFeatures(e, hp, idfTok, idfBi)
	for j, k := range idx {
		s += w.W[a*nf+k] * val[j]
	}
	for j, f := range e.Pos {
		s += w.P[a*NumPosFeatures+j] * float64(f)
	}
	return s
}

// fitLexical fits, per aspect, a logistic regression on the lexical features plus the position
// features: the same objective as the model's loss (weighted BCE normalised by the total weight,
// plus l2/2 times the squared lexical weights) restricted to the lexical weights, the head's
// position weights and its bias, which it writes into store as the warm start. shifts, when not
// nil, is added to the fitted per-aspect bias (the calibration shifts, see lexicalOOF).
func fitLexical(store *gomlxmodel.Store, hp *Hyperparams, exs []Example, idfTok, idfBi []float32, l2 float64, shifts []float64) error {
	na, nf := len(hp.Aspects), hp.VocabSize+hp.NgramBuckets
	w := fitLexicalWeights(hp, exs, idfTok, idfBi, l2)
	W, P, B := w.W, w.P, w.B
	if shifts != nil {
		if len(shifts) != na {
			return fmt.Errorf("tracker: %d calibration shifts for %d aspects", len(shifts), na)
		}
		for a := range B {
			B[a] += shifts[a]
		}
	}
	tok := make([]float32, na*hp.VocabSize)
	bi := make([]float32, na*hp.NgramBuckets)
	for a := range na {
		for k := range hp.VocabSize {
			tok[a*hp.VocabSize+k] = float32(W[a*nf+k])
		}
		for k := range hp.NgramBuckets {
			bi[a*hp.NgramBuckets+k] = float32(W[a*nf+hp.VocabSize+k])
		}
	}
	head := model.ModelScope + "/head/"
	for path, t := range map[string]*tensors.Tensor{
		head + "lexical/tokens":          tensors.FromFlatDataAndDimensions(tok, na, hp.VocabSize),
		head + "lexical/bigrams":         tensors.FromFlatDataAndDimensions(bi, na, hp.NgramBuckets),
		head + "aspect_position_weights": tensors.FromFlatDataAndDimensions(toFloat32(P), na, NumPosFeatures),
		head + "aspect_bias":             tensors.FromFlatDataAndDimensions(toFloat32(B), na, 1),
	} {
		if err := setVariable(store, path, t, true); err != nil {
			return err
		}
	}
	return nil
}

// fitLexicalWeights solves fitLexical's regression (full-batch Adagrad, lexicalFitIterations).
func fitLexicalWeights(hp *Hyperparams, exs []Example, idfTok, idfBi []float32, l2 float64) *lexicalWeights {
	na, nf := len(hp.Aspects), hp.VocabSize+hp.NgramBuckets
	type row struct {
		idx []int
		val []float64
	}
	rows := make([]row, len(exs))
	var wsum float64
	for i, e := range exs {
		rows[i].idx, rows[i].val = lexicalFeatures(e, hp, idfTok, idfBi)
		wsum += float64(e.Weight)
	}
	W := make([]float64, na*nf)
	P := make([]float64, na*NumPosFeatures)
	B := make([]float64, na)
	gW, gP, gB := make([]float64, len(W)), make([]float64, len(P)), make([]float64, len(B))
	hW, hP, hB := make([]float64, len(W)), make([]float64, len(P)), make([]float64, len(B))
	const lr = 0.5
	adagrad := func(w, g, h []float64, l2 float64) {
		for k := range w {
			gk := g[k] + l2*w[k]
			if gk == 0 {
				continue
			}
			h[k] += gk * gk
			w[k] -= lr * gk / math.Sqrt(h[k]+1e-12)
			g[k] = 0
		}
	}
	for range lexicalFitIterations {
		for i, e := range exs {
			a := int(e.Aspect)
			s := B[a]
			for j, k := range rows[i].idx {
				s += W[a*nf+k] * rows[i].val[j]
			}
			for j, f := range e.Pos {
				s += P[a*NumPosFeatures+j] * float64(f)
			}
			g := float64(e.Weight) * (1/(1+math.Exp(-s)) - float64(e.Label)) / wsum
			for j, k := range rows[i].idx {
				gW[a*nf+k] += g * rows[i].val[j]
			}
			for j, f := range e.Pos {
				gP[a*NumPosFeatures+j] += g * float64(f)
			}
			gB[a] += g
		}
		adagrad(W, gW, hW, l2)
		adagrad(P, gP, hP, 0)
		adagrad(B, gB, hB, 0)
	}
	return &lexicalWeights{W: W, P: P, B: B}
}

func toFloat32(xs []float64) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = float32(x)
	}
	return out
}

// calibrationStream is the PCG stream of lexicalOOF's inner folds (seeded with the seed).
const calibrationStream = 0xca1

// The calibration of the lexical warm start (tracker.lexical_calibration_folds) is, per aspect, the
// logit shift that maximises the F1 at threshold of the lexical regression's out-of-fold scores on
// train (lexicalOOF, then bestShifts): train's abstracts (PMIDs of train.Keys) are shuffled with seed
// and dealt into `folds` inner folds, the regression (IDF, imbalance weighting of tc, fit) is redone
// on all but one inner fold and scores the held-out one. Only train is read, so a model calibrated
// this way has seen nothing of its dev or test data. The positive weight (tc.PosWeight) pulls the
// fitted probabilities up and the L2 penalty pulls them towards the prior, so the F1-optimal cut is
// rarely at 0.5 and differs per aspect; shifting the bias keeps 0.5 as the operating threshold.
// Train computes the shifts from one lexicalOOF that it shares with the context rescorer
// (contextFromOOF).

// lexicalOOF returns the lexical regression's out-of-fold logit of every row of train, from the
// inner K-fold by abstract described above.
func lexicalOOF(hp *Hyperparams, tc config.Tracker, train SplitData, folds int, seed int64) ([]float64, error) {
	return outOfFold("calibration", train, folds, seed, func(exs []Example) (func(*Example) float64, error) {
		idfTok, idfBi := idfTables(hp, exs)
		w := fitLexicalWeights(hp, weighTraining(exs, tc), idfTok, idfBi, tc.LexicalL2)
		return func(e *Example) float64 { return w.logit(*e, hp, idfTok, idfBi) }, nil
	})
}

// outOfFold returns the out-of-fold logit of every row of train: for each inner fold by abstract
// (innerFolds), a model is fitted on the other folds' rows and scores the fold's own. what names
// the caller in errors.
func outOfFold(what string, train SplitData, folds int, seed int64, fit func(exs []Example) (func(*Example) float64, error)) ([]float64, error) {
	if len(train.Keys) != len(train.Examples) {
		return nil, fmt.Errorf("tracker: %s: %d keys for %d rows", what, len(train.Keys), len(train.Examples))
	}
	fold, err := innerFolds(train.Keys, folds, seed)
	if err != nil {
		return nil, fmt.Errorf("tracker: %s: %w", what, err)
	}
	logits := make([]float64, len(train.Examples))
	for f := range folds {
		var fitRows, held []int
		for i, k := range train.Keys {
			if fold[k.PMID] == f {
				held = append(held, i)
			} else {
				fitRows = append(fitRows, i)
			}
		}
		exs := make([]Example, len(fitRows))
		for j, i := range fitRows {
			exs[j] = train.Examples[i]
		}
		logit, err := fit(exs)
		if err != nil {
			return nil, err
		}
		for _, i := range held {
			logits[i] = logit(&train.Examples[i])
		}
	}
	return logits, nil
}

// bestShifts returns, per aspect, the first shift of calibrationShifts with the highest F1 of
// (logit + shift >= logit(threshold)) against the labels of exs.
func bestShifts(logits []float64, exs []Example, aspects int, threshold float64) []float64 {
	out := make([]float64, aspects)
	for a := range aspects {
		out[a] = bestShift(logits, exs, threshold, func(e *Example) bool { return int(e.Aspect) == a })
	}
	return out
}

// bestShift returns the first shift of calibrationShifts with the highest F1 of (logit + shift >=
// logit(threshold)) against the labels of the rows of exs that keep accepts.
func bestShift(logits []float64, exs []Example, threshold float64, keep func(*Example) bool) float64 {
	cut := math.Log(threshold / (1 - threshold))
	best, bestF1 := 0.0, -1.0
	for _, s := range calibrationShifts {
		var tp, fp, fn float64
		for i, z := range logits {
			if !keep(&exs[i]) {
				continue
			}
			pred, gold := z+s >= cut, exs[i].Label > 0
			switch {
			case pred && gold:
				tp++
			case pred:
				fp++
			case gold:
				fn++
			}
		}
		if f := f1(tp, fp, fn); f > bestF1+1e-12 {
			best, bestF1 = s, f
		}
	}
	return best
}

// formatShifts renders per-aspect shifts as "code:+0.00 ..." for the training log.
func formatShifts(hp *Hyperparams, shifts []float64) string {
	parts := make([]string, len(shifts))
	for a, s := range shifts {
		parts[a] = fmt.Sprintf("%s:%+.2f", hp.Aspects[a], s)
	}
	return strings.Join(parts, " ")
}
