package eval

import (
	"bytes"
	"context"
	"math"
	"regexp"
	"strings"
	"testing"
)

// firstFigure returns the first number after the row name metric at the start of a line of a
// table, or "".
func firstFigure(table, metric string) string {
	m := regexp.MustCompile(`(?m)^\s*` + metric + `\s+(-?[0-9.]+)`).FindStringSubmatch(table)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestEvalAndCompareSameF1: for the same predictions, tracksum-eval's table ("all" column) and
// compare's A column print the same F1s, and both name the definition. compare printed the mean
// of per-instance F1s (40.8/74.7 beside eval's 50.6/77.7 on the shared dev set) without saying so.
func TestEvalAndCompareSameF1(t *testing.T) {
	cfg := testConfig()
	var ev bytes.Buffer
	if _, err := Run(context.Background(), Options{Pred: "testdata/pred.jsonl", Ref: "testdata/ref.jsonl", Config: cfg, Stdout: &ev}); err != nil {
		t.Fatal(err)
	}
	c, err := Compare(context.Background(), "testdata/pred.jsonl", "testdata/ref.jsonl", "testdata/ref.jsonl", cfg.Eval)
	if err != nil {
		t.Fatal(err)
	}
	var cmp bytes.Buffer
	if err := WriteComparison(&cmp, c); err != nil {
		t.Fatal(err)
	}
	out, err := Evaluation(context.Background(), "testdata/pred.jsonl", "testdata/ref.jsonl", cfg.Eval, nil)
	if err != nil {
		t.Fatal(err)
	}
	differ := false
	for _, m := range []Metric{ClaimF1, CitationF1, CitationExactF1, ClaimRecall, CitationPrecision} {
		e, k := firstFigure(ev.String(), m.String()), firstFigure(cmp.String(), m.String())
		if e == "" || e != k {
			t.Errorf("%s: eval prints %q, compare %q", m, e, k)
		}
		// The fixture must tell the two F1s apart for the test to mean something.
		if r, _ := m.f1Parts(); r >= 0 {
			var sum float64
			for _, res := range out.Results {
				sum += res.Values[m]
			}
			differ = differ || pct(sum/float64(len(out.Results))) != pct(out.Report.Overall.Mean[m])
		}
	}
	if !differ {
		t.Error("the fixture's mean of per-instance F1s equals its F1 of means on every F1: the test cannot tell the definitions apart")
	}
	for name, out := range map[string]string{"eval": ev.String(), "compare": cmp.String()} {
		if !strings.Contains(out, F1Definition) {
			t.Errorf("%s does not name its F1:\n%s", name, out)
		}
	}
}

func TestPairedBootstrapF1OfMeans(t *testing.T) {
	one := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	half := []float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}
	if d, p := pairedBootstrapF1OfMeans(one, half, one, half, 100, 1); d != 0 || p != 1 {
		t.Errorf("same system: diff %v p %v, want 0 and 1", d, p)
	}
	if d, p := pairedBootstrapF1OfMeans(one, one, half, half, 500, 1); math.Abs(d-0.5) > 1e-12 || p > 0.01 {
		t.Errorf("clear difference: diff %v p %v, want 0.5 and p < 0.01", d, p)
	}
	if d, p := pairedBootstrapF1OfMeans(one, one, half[:3], half[:3], 10, 1); !math.IsNaN(d) || !math.IsNaN(p) {
		t.Errorf("mismatched lengths: %v %v", d, p)
	}
}
