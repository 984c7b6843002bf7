package dataset

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func pmids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(1000 + i)
	}
	return out
}

func TestMakeFolds(t *testing.T) {
	for _, tc := range []struct {
		desc string
		n, k int
	}{
		{"even", 30, 3},
		{"uneven", 31, 5},
		{"one per fold", 4, 4},
		{"two folds", 7, 2},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ids := pmids(tc.n)
			// Duplicates (one PMID per aspect) must not change anything.
			withDup := append(slices.Clone(ids), ids[:3]...)
			f, err := MakeFolds(withDup, tc.k, 7)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for i, fold := range f.IDs {
				if !slices.IsSorted(fold) {
					t.Errorf("fold %d not sorted", i)
				}
				for _, id := range fold {
					if j, dup := seen[id]; dup {
						t.Errorf("PMID %s in folds %d and %d", id, j, i)
					}
					seen[id] = i
					if f.Fold(id) != i {
						t.Errorf("Fold(%s) = %d, listed in %d", id, f.Fold(id), i)
					}
				}
			}
			if len(seen) != tc.n {
				t.Errorf("%d PMIDs in folds, want %d", len(seen), tc.n)
			}
			sizes := f.Sizes()
			if slices.Max(sizes)-slices.Min(sizes) > 1 {
				t.Errorf("unbalanced fold sizes %v", sizes)
			}
			if f.Fold("unknown") != -1 {
				t.Error("unknown PMID has a fold")
			}
			// Same set + seed in another order: same folds; another seed: other folds.
			rev := slices.Clone(ids)
			slices.Reverse(rev)
			g, err := MakeFolds(rev, tc.k, 7)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f.IDs, g.IDs) {
				t.Error("folds depend on input order")
			}
			if tc.n > 10 {
				h, _ := MakeFolds(ids, tc.k, 8)
				if reflect.DeepEqual(f.IDs, h.IDs) {
					t.Error("seed does not change the folds")
				}
			}
		})
	}
}

func TestMakeFoldsErrors(t *testing.T) {
	for _, tc := range []struct {
		desc string
		n, k int
		want string
	}{
		{"one fold", 10, 1, "folds: need at least 2 folds, got 1"},
		{"too few abstracts", 3, 5, "folds: 5 folds need at least 5 abstracts, got 3"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if _, err := MakeFolds(pmids(tc.n), tc.k, 1); err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReadFolds(t *testing.T) {
	dir := t.TempDir()
	write := func(v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, SplitsFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := MakeSplits(pmids(12), SplitByPMID, 0.8, 0.1, 0.1, 3)
	if err != nil {
		t.Fatal(err)
	}
	write(a)
	if _, err := ReadFolds(dir); err == nil || !strings.Contains(err.Error(), "no folds (prepare the directory with --folds K)") {
		t.Errorf("no folds: got %v", err)
	}
	if a.Folds, err = MakeFolds(pmids(12), 3, 3); err != nil {
		t.Fatal(err)
	}
	write(a)
	f, err := ReadFolds(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.IDs, a.Folds.IDs) || f.Fold(a.Folds.IDs[2][0]) != 2 {
		t.Errorf("read back %v, want %v", f.IDs, a.Folds.IDs)
	}
	a.Folds.IDs[1] = append(a.Folds.IDs[1], a.Folds.IDs[0][0])
	write(a)
	if _, err := ReadFolds(dir); err == nil || !strings.Contains(err.Error(), "is in folds 0 and 1") {
		t.Errorf("duplicate PMID: got %v", err)
	}
	// Issue 35 item 15: folds must hold exactly the abstracts of the splits.
	for _, tc := range []struct {
		desc string
		edit func(f *Folds)
		want string
	}{
		{"unknown PMID", func(f *Folds) { f.IDs[2] = append(f.IDs[2], "99999999") }, "fold 2 lists PMID 99999999, which is in none of the splits"},
		{"abstract in no fold", func(f *Folds) { f.IDs[0] = f.IDs[0][1:] }, "split is in no fold"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if a.Folds, err = MakeFolds(pmids(12), 3, 3); err != nil {
				t.Fatal(err)
			}
			tc.edit(a.Folds)
			write(a)
			if _, err := ReadFolds(dir); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), SplitsFile) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestGroupPMIDs(t *testing.T) {
	got := GroupPMIDs(SplitByInstance, []string{"12:aims", "12:outcomes", "7:x"})
	if want := []string{"12", "12", "7"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
