package dataset

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/tracksum/tracksum/internal/golden"
)

func keysN(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%08d", 30000000+i*37)
	}
	return out
}

func TestMakeSplitsSizes(t *testing.T) {
	for _, tc := range []struct {
		desc                  string
		n                     int
		train, dev, test      float64
		wantTrain, wantDev, w int
	}{
		{"8:1:1", 310, 0.8, 0.1, 0.1, 248, 31, 31},
		{"paper 8:2, no dev", 544, 0.8, 0, 0.2, 435, 0, 109},
		{"no test", 10, 0.7, 0.3, 0, 7, 3, 0},
		{"rounding leaves test the rest", 7, 0.5, 0.25, 0.25, 4, 2, 1},
		{"all train", 5, 1, 0, 0, 5, 0, 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			a, err := MakeSplits(keysN(tc.n), SplitByPMID, tc.train, tc.dev, tc.test, 1)
			if err != nil {
				t.Fatal(err)
			}
			s := a.Sizes()
			if s[SplitTrain] != tc.wantTrain || s[SplitDev] != tc.wantDev || s[SplitTest] != tc.w {
				t.Errorf("sizes %v, want %d/%d/%d", s, tc.wantTrain, tc.wantDev, tc.w)
			}
		})
	}
}

func TestMakeSplitsDeterministic(t *testing.T) {
	keys := keysN(200)
	a, _ := MakeSplits(keys, SplitByPMID, 0.8, 0.1, 0.1, 3407)
	// Input order and duplicates do not matter, the seed does.
	shuffled := slices.Clone(keys)
	slices.Reverse(shuffled)
	shuffled = append(shuffled, keys[:50]...)
	b, _ := MakeSplits(shuffled, SplitByPMID, 0.8, 0.1, 0.1, 3407)
	if !reflect.DeepEqual(a.IDs, b.IDs) {
		t.Error("same keys and seed gave different splits")
	}
	c, _ := MakeSplits(keys, SplitByPMID, 0.8, 0.1, 0.1, 3408)
	if reflect.DeepEqual(a.IDs, c.IDs) {
		t.Error("another seed gave the same splits")
	}
	seen := map[string]string{}
	for split, ids := range a.IDs {
		for _, id := range ids {
			if prev, ok := seen[id]; ok {
				t.Fatalf("%s in %s and %s", id, prev, split)
			}
			seen[id] = split
			if got := a.Split(id, "o"); got != split {
				t.Errorf("Split(%s) = %s, want %s", id, got, split)
			}
		}
	}
	if len(seen) != 200 {
		t.Errorf("%d keys assigned, want 200", len(seen))
	}
	if a.Split("unknown", "o") != "" {
		t.Error("unknown key assigned a split")
	}
}

func TestMakeSplitsByInstance(t *testing.T) {
	var keys []string
	for _, p := range keysN(50) {
		for _, a := range []string{"a", "o", "s"} {
			keys = append(keys, GroupKey(SplitByInstance, p, a))
		}
	}
	a, err := MakeSplits(keys, SplitByInstance, 0.8, 0, 0.2, 3407)
	if err != nil {
		t.Fatal(err)
	}
	if s := a.Sizes(); s[SplitTrain] != 120 || s[SplitTest] != 30 {
		t.Errorf("sizes %v", s)
	}
	// By instance, one abstract's aspects may land in different splits (the paper's protocol).
	mixed := false
	for _, p := range keysN(50) {
		if a.Split(p, "a") != a.Split(p, "o") || a.Split(p, "o") != a.Split(p, "s") {
			mixed = true
		}
	}
	if !mixed {
		t.Error("no abstract is spread over splits: grouping by instance looks like grouping by pmid")
	}
}

func TestMakeSplitsErrors(t *testing.T) {
	if _, err := MakeSplits(keysN(3), "abstract", 1, 0, 0, 1); err == nil {
		t.Error("unknown grouping accepted")
	}
	if _, err := MakeSplits(keysN(3), SplitByPMID, 0.5, 0.1, 0.1, 1); err == nil {
		t.Error("ratios not summing to 1 accepted")
	}
}

// TestMakeSplitsGolden pins the assignment of a fixed key set, so that a change of the shuffle
// (which would silently change every experiment's splits) is noticed. Regenerate with
// `go test ./dataset -run TestMakeSplitsGolden -update`.
func TestMakeSplitsGolden(t *testing.T) {
	a, err := MakeSplits(keysN(20), SplitByPMID, 0.6, 0.2, 0.2, 3407)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.MarshalIndent(a, "", "  ")
	golden.Check(t, filepath.Join("testdata", "golden", "splits.json"), append(got, '\n'))
}
