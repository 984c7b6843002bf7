package tracker

import (
	"math"
	"slices"
)

// BinaryMetrics scores probabilities against 0/1 labels: mean BCE loss, and accuracy, precision,
// recall and F1 at threshold (precision/recall/F1 are 0 when undefined), plus ROC-AUC (0.5 when a
// class is absent).
func BinaryMetrics(probs, labels []float32, threshold float64) map[string]float64 {
	var tp, fp, fn, tn float64
	var loss float64
	for i, p := range probs {
		y := labels[i] >= 0.5
		pred := float64(p) >= threshold
		switch {
		case pred && y:
			tp++
		case pred && !y:
			fp++
		case !pred && y:
			fn++
		default:
			tn++
		}
		q := math.Min(math.Max(float64(p), 1e-7), 1-1e-7)
		if y {
			loss -= math.Log(q)
		} else {
			loss -= math.Log(1 - q)
		}
	}
	n := float64(len(probs))
	m := map[string]float64{
		"loss":      loss / math.Max(n, 1),
		"accuracy":  (tp + tn) / math.Max(n, 1),
		"precision": safeDiv(tp, tp+fp),
		"recall":    safeDiv(tp, tp+fn),
		"auc":       rocAUC(probs, labels),
	}
	m["f1"] = f1(tp, fp, fn)
	return m
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func f1(tp, fp, fn float64) float64 { return safeDiv(2*tp, 2*tp+fp+fn) }

// rocAUC is the Mann-Whitney statistic: the probability that a random positive scores above a
// random negative, ties counting one half (average ranks).
func rocAUC(probs, labels []float32) float64 {
	idx := make([]int, len(probs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case probs[a] < probs[b]:
			return -1
		case probs[a] > probs[b]:
			return 1
		}
		return 0
	})
	var rankSumPos, nPos, nNeg float64
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && probs[idx[j]] == probs[idx[i]] {
			j++
		}
		avgRank := float64(i+j+1) / 2 // ranks are 1-based: (i+1 + j) / 2
		for k := i; k < j; k++ {
			if labels[idx[k]] >= 0.5 {
				rankSumPos += avgRank
				nPos++
			} else {
				nNeg++
			}
		}
		i = j
	}
	if nPos == 0 || nNeg == 0 {
		return 0.5
	}
	return (rankSumPos - nPos*(nPos+1)/2) / (nPos * nNeg)
}
