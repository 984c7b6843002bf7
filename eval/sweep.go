package eval

import (
	"math"
	"slices"
	"sort"
)

// TrackerScores describes the tracker's per-sentence probabilities (the predictions' optional
// Scores) against the reference citations: a histogram of the scores of cited and uncited
// sentences, and the precision, recall and F1 of selecting the sentences scored at or above each
// threshold. It is what infer would cite with that threshold (infer keeps a sentence when its
// score >= the threshold), before any grounding of the summary changes the citations.
type TrackerScores struct {
	// Instances counts the pairs; Scored those whose prediction carries Scores (the only ones
	// counted below).
	Instances, Scored int
	// Cited and Uncited count the scored sentences the reference cites and those it does not.
	Cited, Uncited int
	// HistCited[b] and HistUncited[b] count the sentences scored in [b/B, (b+1)/B), B =
	// len(HistCited); the last bin includes 1.
	HistCited, HistUncited []int
	// Thresholds are 0, 1/S, ..., 1 (S steps); Precision, Recall and F1 are micro figures over
	// every scored sentence at each threshold. Precision is NaN where no sentence is selected,
	// Recall where no sentence is cited; F1 is 0 where nothing selected is cited.
	Thresholds, Precision, Recall, F1 []float64
}

// SweepTracker computes TrackerScores over pairs with bins histogram bins and steps threshold
// steps. Sorting the scores once makes each threshold a binary search, so 100k instances take
// well under a second.
func SweepTracker(pairs []Pair, bins, steps int) TrackerScores {
	t := TrackerScores{Instances: len(pairs), HistCited: make([]int, bins), HistUncited: make([]int, bins)}
	var cited, uncited []float64
	for i := range pairs {
		scores := pairs[i].Pred.Scores
		if scores == nil {
			continue
		}
		t.Scored++
		ref := pairs[i].Ref.Indexes
		for j, s := range scores {
			v := float64(s)
			b := min(max(int(v*float64(bins)), 0), bins-1)
			if slices.Contains(ref, j) {
				cited = append(cited, v)
				t.HistCited[b]++
			} else {
				uncited = append(uncited, v)
				t.HistUncited[b]++
			}
		}
	}
	t.Cited, t.Uncited = len(cited), len(uncited)
	slices.Sort(cited)
	slices.Sort(uncited)
	atLeast := func(x []float64, th float64) int { return len(x) - sort.SearchFloat64s(x, th) }
	for k := 0; k <= steps; k++ {
		th := float64(k) / float64(steps)
		tp, fp := atLeast(cited, th), atLeast(uncited, th)
		p, r := math.NaN(), math.NaN()
		if tp+fp > 0 {
			p = float64(tp) / float64(tp+fp)
		}
		if len(cited) > 0 {
			r = float64(tp) / float64(len(cited))
		}
		f1 := 0.0
		if tp > 0 {
			f1 = 2 * p * r / (p + r)
		}
		t.Thresholds = append(t.Thresholds, th)
		t.Precision = append(t.Precision, p)
		t.Recall = append(t.Recall, r)
		t.F1 = append(t.F1, f1)
	}
	return t
}

// Best returns the index of the threshold with the highest F1 (the lowest such threshold on ties),
// -1 when no threshold selects a cited sentence.
func (t *TrackerScores) Best() int {
	best := -1
	for k, f := range t.F1 {
		if f > 0 && (best < 0 || f > t.F1[best]) {
			best = k
		}
	}
	return best
}
