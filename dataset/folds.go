package dataset

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/internal/atomicio"
)

// foldStream is the PCG stream of the fold shuffle: a different stream from the train/dev/test
// shuffle (MakeSplits), so that the folds do not simply follow the split order.
const foldStream = 0xf01d5

// Folds assigns every abstract (PMID) of a prepared directory to one of K cross-validation
// folds. It is written into splits.json (SplitAssignment.Folds) by `prepare --folds K`. The shards
// are the same with or without folds: every row carries its PMID, and Fold maps it to its fold, so
// every model and baseline trained on the directory uses the same folds.
type Folds struct {
	// K is the number of folds.
	K int `json:"k"`
	// Seed is the seed of the shuffle that made the folds.
	Seed int64 `json:"seed"`
	// IDs lists the PMIDs of each fold, sorted.
	IDs    [][]string `json:"ids"`
	lookup map[string]int
}

// MakeFolds deals the PMIDs into k folds: the PMIDs are de-duplicated and sorted, shuffled with
// seed, and fold i gets the shuffled positions i, i+k, i+2k, ... . The result depends only on the
// set of PMIDs, k and the seed (not on input order), and the fold sizes differ by at most one.
func MakeFolds(pmids []string, k int, seed int64) (*Folds, error) {
	keys := slices.Clone(pmids)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if k < 2 {
		return nil, fmt.Errorf("folds: need at least 2 folds, got %d", k)
	}
	if len(keys) < k {
		return nil, fmt.Errorf("folds: %d folds need at least %d abstracts, got %d", k, k, len(keys))
	}
	r := rand.New(rand.NewPCG(uint64(seed), foldStream))
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	f := &Folds{K: k, Seed: seed, IDs: make([][]string, k)}
	for i, id := range keys {
		f.IDs[i%k] = append(f.IDs[i%k], id)
	}
	for _, ids := range f.IDs {
		slices.Sort(ids)
	}
	return f, f.index()
}

// index builds the PMID lookup and checks that no PMID is in two folds.
func (f *Folds) index() error {
	if f.K < 2 || len(f.IDs) != f.K {
		return fmt.Errorf("folds: k is %d but %d folds are listed", f.K, len(f.IDs))
	}
	f.lookup = map[string]int{}
	for i, ids := range f.IDs {
		if len(ids) == 0 {
			return fmt.Errorf("folds: fold %d is empty", i)
		}
		for _, id := range ids {
			if j, dup := f.lookup[id]; dup {
				return fmt.Errorf("folds: PMID %s is in folds %d and %d", id, j, i)
			}
			f.lookup[id] = i
		}
	}
	return nil
}

// Fold returns the fold of an abstract, or -1 when its PMID is in no fold.
func (f *Folds) Fold(pmid string) int {
	if i, ok := f.lookup[pmid]; ok {
		return i
	}
	return -1
}

// Sizes returns the number of abstracts per fold.
func (f *Folds) Sizes() []int {
	out := make([]int, len(f.IDs))
	for i, ids := range f.IDs {
		out[i] = len(ids)
	}
	return out
}

// ReadFolds reads the folds of a prepared directory from its splits.json. A directory prepared
// without --folds gives an error that says so; folds that are not a partition of the abstracts of
// the splits (a PMID the splits do not have, or one of theirs in no fold) are refused.
func ReadFolds(dir string) (*Folds, error) {
	path := filepath.Join(dir, SplitsFile)
	var s struct {
		By    string              `json:"by"`
		IDs   map[string][]string `json:"ids"`
		Folds *Folds              `json:"folds"`
	}
	err := atomicio.ReadJSON(path, &s, false)
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return nil, fmt.Errorf("%s is not a prepared directory (run tracksum-prepare --folds K): %w", dir, err)
	}
	if err != nil {
		return nil, err // names the file
	}
	if s.Folds == nil {
		return nil, fmt.Errorf("%s: no folds (prepare the directory with --folds K)", path)
	}
	if err := s.Folds.index(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// prepare deals the PMIDs of the three splits into the folds (MakeFolds): any other PMID is
	// an abstract the directory does not hold, and its fold would be silently smaller.
	known := map[string]bool{}
	for _, split := range slices.Sorted(maps.Keys(s.IDs)) {
		for _, pmid := range GroupPMIDs(s.By, s.IDs[split]) {
			known[pmid] = true
			if s.Folds.Fold(pmid) < 0 {
				return nil, fmt.Errorf("%s: PMID %s of the %s split is in no fold", path, pmid, split)
			}
		}
	}
	for i, ids := range s.Folds.IDs {
		for _, pmid := range ids {
			if !known[pmid] {
				return nil, fmt.Errorf("%s: fold %d lists PMID %s, which is in none of the splits (not an abstract of the directory)", path, i, pmid)
			}
		}
	}
	return s.Folds, nil
}

// GroupPMIDs returns the PMIDs behind split group keys (GroupKey): the keys themselves when
// grouping by PMID, the part before the last ':' when grouping by instance.
func GroupPMIDs(by string, keys []string) []string {
	if by != SplitByInstance {
		return keys
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		if j := strings.LastIndexByte(k, ':'); j >= 0 {
			k = k[:j]
		}
		out[i] = k
	}
	return out
}
