package tracker

import (
	"slices"
)

// SplitReport holds the tracker's scores on one split.
type SplitReport struct {
	// Sentences and Instances count the scored (sentence, aspect) rows and (PMID, aspect) instances.
	Sentences int `json:"sentences"`
	Instances int `json:"instances"`
	// Sentence holds sentence-level (micro-averaged) loss, accuracy, precision, recall, f1 and auc.
	Sentence map[string]float64 `json:"sentence"`
	// ExactMatch is the fraction of instances whose predicted sentence set equals the reference set.
	ExactMatch float64 `json:"exact_match"`
	// InstanceF1 is the mean over instances of the per-instance F1 (1 when both sets are empty).
	InstanceF1 float64 `json:"instance_f1"`
	// PerAspect holds, per aspect code, sentence-level precision/recall/f1, exact_match and instances.
	PerAspect map[string]map[string]float64 `json:"per_aspect"`
}

// Evaluate scores a split with the model at threshold (ScoreSplit: as infer scores it).
func (m *Model) Evaluate(s SplitData, threshold float64) (*SplitReport, error) {
	probs, err := m.ScoreSplit(s)
	if err != nil {
		return nil, err
	}
	return EvaluateScores(s, probs, threshold), nil
}

// EvaluateScores computes a SplitReport from given probabilities (one per example of s).
func EvaluateScores(s SplitData, probs []float32, threshold float64) *SplitReport {
	r := &SplitReport{Sentences: len(probs), Sentence: BinaryMetrics(probs, labelsOf(s.Examples), threshold),
		PerAspect: map[string]map[string]float64{}}
	type inst struct{ tp, fp, fn float64 }
	type counts struct{ tp, fp, fn, exact, n float64 }
	insts := map[[2]string]*inst{}
	var order [][2]string
	for i, k := range s.Keys {
		key := [2]string{k.PMID, k.Aspect}
		in := insts[key]
		if in == nil {
			in = &inst{}
			insts[key] = in
			order = append(order, key)
		}
		pred, gold := float64(probs[i]) >= threshold, s.Examples[i].Label > 0
		switch {
		case pred && gold:
			in.tp++
		case pred:
			in.fp++
		case gold:
			in.fn++
		}
	}
	perAspect := map[string]*counts{}
	var exact, f1sum float64
	for _, key := range order {
		in := insts[key]
		c := perAspect[key[1]]
		if c == nil {
			c = &counts{}
			perAspect[key[1]] = c
		}
		c.tp, c.fp, c.fn, c.n = c.tp+in.tp, c.fp+in.fp, c.fn+in.fn, c.n+1
		if in.fp == 0 && in.fn == 0 {
			exact++
			c.exact++
			f1sum++
		} else {
			f1sum += f1(in.tp, in.fp, in.fn)
		}
	}
	r.Instances = len(order)
	if r.Instances > 0 {
		r.ExactMatch = exact / float64(r.Instances)
		r.InstanceF1 = f1sum / float64(r.Instances)
	}
	aspects := make([]string, 0, len(perAspect))
	for a := range perAspect {
		aspects = append(aspects, a)
	}
	slices.Sort(aspects)
	for _, a := range aspects {
		c := perAspect[a]
		r.PerAspect[a] = map[string]float64{
			"precision":   safeDiv(c.tp, c.tp+c.fp),
			"recall":      safeDiv(c.tp, c.tp+c.fn),
			"f1":          f1(c.tp, c.fp, c.fn),
			"exact_match": c.exact / c.n,
			"instances":   c.n,
		}
	}
	return r
}
