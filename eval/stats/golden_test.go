package stats

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// TestCorrelationGolden compares with scipy 1.10 on testdata/golden.json
// (regenerate: /usr/bin/python3 tools/golden/stats_golden.py eval/stats/testdata/golden.json).
// Tolerances: 1e-9 on the coefficient, 1e-6 on the p-value (absolute).
func TestCorrelationGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Desc     string      `json:"desc"`
			X        []float64   `json:"x"`
			Y        []float64   `json:"y"`
			Pearson  [2]float64  `json:"pearson"`
			Spearman *[2]float64 `json:"spearman"`
			Kendall  [2]float64  `json:"kendall"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("testdata/golden.json: %v", err)
	}
	if len(g.Cases) < 30 {
		t.Fatalf("golden file has %d cases, want >= 30", len(g.Cases))
	}
	const tolR, tolP = 1e-9, 1e-6
	var maxR, maxP, maxRelP float64
	check := func(desc, name string, want [2]float64, r, p float64, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %s: %v", desc, name, err)
			return
		}
		dr, dp := math.Abs(r-want[0]), math.Abs(p-want[1])
		maxR, maxP = max(maxR, dr), max(maxP, dp)
		// Relative p error only where p is not a rounding artefact: a
		// perfect rank correlation gives p = 0 here and ~1e-24 in scipy.
		if want[1] > 1e-12 {
			maxRelP = max(maxRelP, dp/want[1])
		}
		if dr > tolR || dp > tolP {
			t.Errorf("%s: %s = (%.17g, %.17g), scipy (%.17g, %.17g)", desc, name, r, p, want[0], want[1])
		}
	}
	for _, c := range g.Cases {
		r, p, err := Pearson(c.X, c.Y)
		check(c.Desc, "Pearson", c.Pearson, r, p, err)
		if c.Spearman != nil {
			r, p, err = Spearman(c.X, c.Y)
			check(c.Desc, "Spearman", *c.Spearman, r, p, err)
		}
		r, p, err = KendallTauB(c.X, c.Y)
		check(c.Desc, "KendallTauB", c.Kendall, r, p, err)
	}
	t.Logf("%d cases: max |dr| %.3g, max |dp| %.3g, max relative dp (p > 1e-12) %.3g", len(g.Cases), maxR, maxP, maxRelP)
}
