package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Grouping of instances before splitting (config prepare.split_by).
const (
	SplitByPMID     = "pmid"
	SplitByInstance = "instance"
)

// GroupKey returns the key an instance is split by: its PMID, or "PMID:aspect" by instance.
func GroupKey(by, pmid, aspect string) string {
	if by == SplitByInstance {
		return pmid + ":" + aspect
	}
	return pmid
}

// SplitAssignment maps group keys to splits. It is written as splits.json.
type SplitAssignment struct {
	By     string             `json:"by"`
	Seed   int64              `json:"seed"`
	Ratios map[string]float64 `json:"ratios"`
	// IDs lists the group keys of each split, sorted.
	IDs map[string][]string `json:"ids"`
	// Folds are the cross-validation folds by PMID (prepare --folds K); nil without folds, so
	// that splits.json is unchanged then.
	Folds  *Folds `json:"folds,omitempty"`
	lookup map[string]uint8
}

// MakeSplits assigns groups to train/dev/test. The keys are de-duplicated and sorted before a
// seeded shuffle, so the result depends only on the set of keys, the ratios and the seed (not on
// input order); the split sizes are round(n*ratio) for train and dev and the rest for test.
func MakeSplits(keys []string, by string, train, dev, test float64, seed int64) (*SplitAssignment, error) {
	if by != SplitByPMID && by != SplitByInstance {
		return nil, fmt.Errorf("splits: unknown grouping %q", by)
	}
	if s := train + dev + test; math.Abs(s-1) > 1e-6 || train < 0 || dev < 0 || test < 0 {
		return nil, fmt.Errorf("splits: ratios %g/%g/%g must be >= 0 and sum to 1", train, dev, test)
	}
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed5))
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	n := len(keys)
	nTrain := int(math.Round(float64(n) * train))
	nDev := min(int(math.Round(float64(n)*dev)), n-nTrain)
	if test == 0 {
		nDev = n - nTrain
	}
	parts := [][]string{keys[:nTrain], keys[nTrain : nTrain+nDev], keys[nTrain+nDev:]}
	a := &SplitAssignment{By: by, Seed: seed, Ratios: map[string]float64{SplitTrain: train, SplitDev: dev, SplitTest: test},
		IDs: map[string][]string{}, lookup: make(map[string]uint8, n)}
	for si, name := range Splits {
		ids := slices.Clone(parts[si])
		slices.Sort(ids)
		a.IDs[name] = ids
		for _, k := range ids {
			a.lookup[k] = uint8(si)
		}
	}
	return a, nil
}

// Split returns the split of an instance, or "" when its group was not part of the assignment.
func (a *SplitAssignment) Split(pmid, aspect string) string {
	si, ok := a.lookup[GroupKey(a.By, pmid, aspect)]
	if !ok {
		return ""
	}
	return Splits[si]
}

// Sizes returns the number of groups per split.
func (a *SplitAssignment) Sizes() map[string]int {
	out := map[string]int{}
	for _, s := range Splits {
		out[s] = len(a.IDs[s])
	}
	return out
}
