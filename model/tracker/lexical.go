package tracker

import (
	"math"

	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
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

// fitLexical fits, per aspect, a logistic regression on the lexical features plus the position
// features: the same objective as the model's loss (weighted BCE normalised by the total weight,
// plus l2/2 times the squared lexical weights) restricted to the lexical weights, the head's
// position weights and its bias, which it writes into store as the warm start.
func fitLexical(store *gomlxmodel.Store, hp *Hyperparams, exs []Example, idfTok, idfBi []float32, l2 float64) error {
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

func toFloat32(xs []float64) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = float32(x)
	}
	return out
}
