package cv

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval"
)

// SystemScores are eval's metrics (the TracSum claim and citation metrics with eval.judge, exact
// citation metrics, ROUGE) of one system's out-of-fold predictions, per fold and over the folds.
type SystemScores struct {
	// Name is the system's short name (its predictions file is Name.jsonl), Label its table name.
	Name        string `json:"name"`
	Label       string `json:"label"`
	Predictions string `json:"predictions"`
	// Folds holds, per fold, the mean of each metric over the fold's instances ("METRIC") and over
	// the fold's instances of each aspect ("METRIC/ASPECT"); N counts the fold's instances.
	Folds []FoldScores `json:"folds"`
	// Summary is mean ± sd (n-1) over the folds of each entry of Folds (an aspect absent from a
	// fold is left out of that aspect's figures).
	Summary map[string]Stat `json:"summary"`
	// Pooled is the mean of each metric over all instances (what tracksum-eval reports for the
	// predictions file).
	Pooled map[string]float64 `json:"pooled"`
	// N counts the instances scored.
	N int `json:"n"`
}

// FoldScores are one fold's metrics.
type FoldScores struct {
	Fold    int                `json:"fold"`
	N       int                `json:"n"`
	Metrics map[string]float64 `json:"metrics"`
}

// Comparison is `tracksum-eval compare A B --ref REF` of two systems on the same instances.
type Comparison struct {
	A         string            `json:"a"`
	B         string            `json:"b"`
	N         int               `json:"n"`
	Resamples int               `json:"resamples"`
	Metrics   []eval.Difference `json:"metrics"`
}

// scoreSystem evaluates the predictions file pred against ref with the eval settings and splits
// the per-instance values by fold (folds.Fold of the PMID).
func scoreSystem(ctx context.Context, name, label, pred, ref string, folds *dataset.Folds, cfg config.Eval) (*SystemScores, error) {
	out, err := eval.Evaluation(ctx, pred, ref, cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pred, err)
	}
	byFold := make([][]eval.Result, folds.K)
	for _, r := range out.Results {
		k := folds.Fold(r.PMID)
		if k < 0 {
			return nil, fmt.Errorf("%s: PMID %s is in no fold", pred, r.PMID)
		}
		byFold[k] = append(byFold[k], r)
	}
	return aggregateFolds(name, label, pred, byFold, out.Report.Overall.Metrics()), nil
}

// scoreFoldFiles evaluates one predictions file per fold against that fold's references (the
// dev parts, which overlap between folds, cannot be pooled into one file).
func scoreFoldFiles(ctx context.Context, name, label string, preds, refs []string, cfg config.Eval) (*SystemScores, error) {
	byFold := make([][]eval.Result, len(preds))
	var metrics []eval.Metric
	for k := range preds {
		out, err := eval.Evaluation(ctx, preds[k], refs[k], cfg, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", preds[k], err)
		}
		byFold[k], metrics = out.Results, out.Report.Overall.Metrics()
	}
	pattern := ""
	if len(preds) > 0 {
		pattern = preds[0]
	}
	return aggregateFolds(name, label, pattern, byFold, metrics), nil
}

// aggregateFolds computes the per-fold means (overall and per aspect), their mean ± sd over the
// folds and the pooled means of per-instance results grouped by fold.
func aggregateFolds(name, label, pred string, byFold [][]eval.Result, metrics []eval.Metric) *SystemScores {
	s := &SystemScores{Name: name, Label: label, Predictions: pred, Pooled: map[string]float64{}, Summary: map[string]Stat{}}
	vals := map[string][]float64{}
	for k, rs := range byFold {
		n := map[string]int{}
		sum := map[string]float64{}
		for _, r := range rs {
			n[""]++
			n[r.Aspect]++
			for _, m := range metrics {
				v := r.Values[m]
				sum[m.String()] += v
				sum[m.String()+"/"+r.Aspect] += v
				s.Pooled[m.String()] += v
			}
		}
		s.N += len(rs)
		f := FoldScores{Fold: k, N: len(rs), Metrics: map[string]float64{}}
		for key, v := range sum {
			cnt := n[""]
			if _, asp, ok := strings.Cut(key, "/"); ok {
				cnt = n[asp]
			}
			f.Metrics[key] = v / float64(cnt)
			vals[key] = append(vals[key], f.Metrics[key])
		}
		s.Folds = append(s.Folds, f)
	}
	for key, v := range vals {
		s.Summary[key] = meanSD(v)
	}
	for key, v := range s.Pooled {
		s.Pooled[key] = v / float64(max(s.N, 1))
	}
	return s
}

// compareSystems runs eval.Compare (paired bootstrap over instances) of a against b.
func compareSystems(ctx context.Context, a, b *SystemScores, ref string, cfg config.Eval) (*Comparison, error) {
	c, err := eval.Compare(ctx, a.Predictions, b.Predictions, ref, cfg)
	if err != nil {
		return nil, err
	}
	return &Comparison{A: a.Name, B: b.Name, N: c.N, Resamples: c.Resamples, Metrics: c.Metrics}, nil
}

// tableMetrics are the columns of the printed tables.
var tableMetrics = []struct{ key, head string }{
	{"claim_recall", "CLR"}, {"claim_precision", "CLP"}, {"citation_recall", "CIR"}, {"citation_precision", "CIP"},
	{"citation_exact_f1", "exact cit. F1"}, {"rouge1_f", "R-1"}, {"rouge2_f", "R-2"}, {"rougeL_f", "R-L"},
}

// writeTable prints mean ± sd over the folds (in %) of each system, then each comparison's
// differences and p-values for the same metrics.
func writeTable(w io.Writer, title string, systems []*SystemScores, comps []*Comparison) error {
	fmt.Fprintf(w, "%s (mean ± sd over folds, %%)\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "system\tn"
	for _, m := range tableMetrics {
		head += "\t" + m.head
	}
	fmt.Fprintln(tw, head)
	for _, s := range systems {
		line := fmt.Sprintf("%s\t%d", s.Label, s.N)
		for _, m := range tableMetrics {
			st := s.Summary[m.key]
			line += fmt.Sprintf("\t%.1f ± %.1f", 100*st.Mean, 100*st.SD)
		}
		fmt.Fprintln(tw, line)
	}
	for _, c := range comps {
		line := fmt.Sprintf("%s - %s\t%d", c.A, c.B, c.N)
		for _, m := range tableMetrics {
			i := slices.IndexFunc(c.Metrics, func(d eval.Difference) bool { return d.Metric == m.key })
			if i < 0 {
				line += "\t-"
				continue
			}
			d := c.Metrics[i]
			line += fmt.Sprintf("\t%+.1f (p %s)", 100*d.Diff, pValue(d.P))
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

func pValue(p float64) string {
	if math.IsNaN(p) {
		return "-"
	}
	return fmt.Sprintf("%.3f", p)
}
