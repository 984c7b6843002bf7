package llmmethods

import (
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/dataset"
)

// Demos holds the demonstration pool of TracSum's two-shot prompt: for each aspect, its positive
// and negative instances in a seeded order. The demonstrations of an abstract are the first
// positive and the first negative of its aspect that come from another abstract, so every
// abstract of an aspect sees the same pair unless it is itself in the pool.
type Demos struct {
	pos, neg map[string][]dataset.Instance
}

// NewDemos builds the pool from instances (typically the training split), shuffled per aspect by
// seed: the same instances and seed give the same demonstrations.
func NewDemos(instances []dataset.Instance, seed int64) *Demos {
	d := &Demos{pos: map[string][]dataset.Instance{}, neg: map[string][]dataset.Instance{}}
	for _, in := range instances {
		if len(in.Document) == 0 {
			continue
		}
		if in.IsNegative() {
			d.neg[in.Aspect] = append(d.neg[in.Aspect], in)
		} else {
			d.pos[in.Aspect] = append(d.pos[in.Aspect], in)
		}
	}
	for _, m := range []map[string][]dataset.Instance{d.pos, d.neg} {
		for asp, list := range m {
			// Sorting first makes the order independent of how the pool was read.
			slices.SortStableFunc(list, func(a, b dataset.Instance) int { return strings.Compare(a.PMID, b.PMID) })
			h := fnv.New64a()
			h.Write([]byte(asp))
			r := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
			r.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
		}
	}
	return d
}

// Pick returns the demonstrations for an abstract (pmid) and aspect: one positive then one
// negative, either left out when the pool has none of that kind from another abstract.
func (d *Demos) Pick(aspect, pmid string) []dataset.Instance {
	var out []dataset.Instance
	for _, list := range [][]dataset.Instance{d.pos[aspect], d.neg[aspect]} {
		for _, in := range list {
			if in.PMID != pmid {
				out = append(out, in)
				break
			}
		}
	}
	return out
}

// Has reports whether the pool has a positive and a negative demonstration for aspect.
func (d *Demos) Has(aspect string) (pos, neg bool) {
	return len(d.pos[aspect]) > 0, len(d.neg[aspect]) > 0
}
