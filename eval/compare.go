package eval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/eval/stats"
)

// Difference is the paired comparison of two systems on one metric.
type Difference struct {
	Metric string  `json:"metric"`
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	// Diff is mean(A) - mean(B) over the per-instance values; P is the two-sided paired-bootstrap
	// p-value of stats.PairedBootstrap.
	Diff float64 `json:"diff"`
	P    float64 `json:"p"`
}

// Comparison is the result of `tracksum-eval compare`.
type Comparison struct {
	A, B, Ref string
	N         int
	Resamples int
	Seed      uint64
	Metrics   []Difference
}

// Compare evaluates two prediction files against the same references and tests, for each metric,
// whether the difference of the per-instance means is significant (paired bootstrap over
// instances). F1 rows compare per-instance F1 values (the harmonic mean of each instance's recall
// and precision), since a paired test needs one value per instance.
func Compare(ctx context.Context, a, b, ref string, cfg config.Eval) (*Comparison, error) {
	oa, err := Evaluation(ctx, a, ref, cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a, err)
	}
	ob, err := Evaluation(ctx, b, ref, cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b, err)
	}
	c := &Comparison{A: a, B: b, Ref: ref, N: len(oa.Results), Resamples: cfg.Bootstrap.Resamples, Seed: cfg.Bootstrap.Seed}
	for _, m := range oa.Report.Overall.Metrics() {
		va := make([]float64, len(oa.Results))
		vb := make([]float64, len(ob.Results))
		for i := range oa.Results {
			va[i], vb[i] = oa.Results[i].Values[m], ob.Results[i].Values[m]
		}
		d, p := stats.PairedBootstrap(va, vb, cfg.Bootstrap.Resamples, cfg.Bootstrap.Seed)
		c.Metrics = append(c.Metrics, Difference{Metric: m.String(), A: stats.Mean(va), B: stats.Mean(vb), Diff: d, P: p})
	}
	return c, nil
}

// WriteComparison prints the comparison as a table (percent points; * marks p < 0.05).
func WriteComparison(w io.Writer, c *Comparison) error {
	fmt.Fprintf(w, "Paired bootstrap (%d resamples, seed %d) over %d instances\nA = %s\nB = %s\n",
		c.Resamples, c.Seed, c.N, c.A, c.B)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tA\tB\tA-B\tp\t\t")
	for _, d := range c.Metrics {
		sig := ""
		if d.P < 0.05 {
			sig = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%+.1f\t%.4f\t%s\t\n", d.Metric, pct(d.A), pct(d.B), 100*d.Diff, d.P, sig)
	}
	return tw.Flush()
}

// Correlation is the agreement of automatic and human scores on one metric.
type Correlation struct {
	Metric    string  `json:"metric"`
	N         int     `json:"n"`
	Pearson   float64 `json:"pearson"`
	PearsonP  float64 `json:"pearson_p"`
	Spearman  float64 `json:"spearman"`
	SpearmanP float64 `json:"spearman_p"`
	Kendall   float64 `json:"kendall_tau_b"`
	KendallP  float64 `json:"kendall_p"`
}

// Agreement joins automatic per-instance scores (instances.jsonl) with human scores on
// (PMID, Aspect) and correlates them per metric present in both (at least 3 instances).
// Human files hold one JSON object per line with PMID, Aspect and the metrics either at the top
// level or in a "scores" object, named as in report.json (e.g. "claim_recall": 0.75).
func Agreement(scoresPath, humanPath string) ([]Correlation, error) {
	auto, err := readScores(scoresPath)
	if err != nil {
		return nil, err
	}
	human, err := readScores(humanPath)
	if err != nil {
		return nil, err
	}
	var out []Correlation
	common := 0
	for k := range human {
		if _, ok := auto[k]; ok {
			common++
		}
	}
	if common == 0 {
		return nil, fmt.Errorf("agreement: no (PMID, Aspect) in common between %s and %s", scoresPath, humanPath)
	}
	for _, name := range agreementMetrics() {
		var x, y []float64
		var keys []Key
		for k, hs := range human {
			if _, ok := hs[name]; !ok {
				continue
			}
			if _, ok := auto[k][name]; ok {
				keys = append(keys, k)
			}
		}
		if len(keys) < 3 {
			continue
		}
		// Map order is random: sort the instances so that the figures are reproducible bit for bit.
		slices.SortFunc(keys, func(a, b Key) int {
			if a.PMID != b.PMID {
				if a.PMID < b.PMID {
					return -1
				}
				return 1
			}
			switch {
			case a.Aspect < b.Aspect:
				return -1
			case a.Aspect > b.Aspect:
				return 1
			}
			return 0
		})
		for _, k := range keys {
			x = append(x, auto[k][name])
			y = append(y, human[k][name])
		}
		c := Correlation{Metric: name, N: len(x)}
		var errs [3]error
		c.Pearson, c.PearsonP, errs[0] = stats.Pearson(x, y)
		c.Spearman, c.SpearmanP, errs[1] = stats.Spearman(x, y)
		c.Kendall, c.KendallP, errs[2] = stats.KendallTauB(x, y)
		for _, e := range errs {
			if e != nil {
				// A constant column has no correlation; report it as undefined, not as an error.
				c.Pearson, c.PearsonP, c.Spearman, c.SpearmanP, c.Kendall, c.KendallP = nan(), nan(), nan(), nan(), nan(), nan()
				break
			}
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("agreement: no metric with at least 3 instances in both %s and %s", scoresPath, humanPath)
	}
	return out, nil
}

func nan() float64 { return math.NaN() }

// readScores reads PMID, Aspect and metric values from JSONL (top-level or under "scores").
func readScores(path string) (map[Key]map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[Key]map[string]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("%s:%d: %w: %v", path, line, ErrMalformed, err)
		}
		var k Key
		if json.Unmarshal(raw["PMID"], &k.PMID) != nil || json.Unmarshal(raw["Aspect"], &k.Aspect) != nil || k.PMID == "" || k.Aspect == "" {
			return nil, fmt.Errorf("%s:%d: %w: PMID and Aspect must be non-empty strings", path, line, ErrMalformed)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s:%d: %w: PMID %s aspect %q", path, line, ErrDuplicate, k.PMID, k.Aspect)
		}
		vals := map[string]float64{}
		if s, ok := raw["scores"]; ok {
			if err := json.Unmarshal(s, &vals); err != nil {
				return nil, fmt.Errorf("%s:%d: %w: scores: %v", path, line, ErrMalformed, err)
			}
		}
		for name, v := range raw {
			if _, ok := ParseMetric(name); !ok && !slices.Contains(LLMMetricNames, name) {
				continue
			}
			var x float64
			if err := json.Unmarshal(v, &x); err != nil {
				return nil, fmt.Errorf("%s:%d: %w: %s: %v", path, line, ErrMalformed, name, err)
			}
			vals[name] = x
		}
		out[k] = vals
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// WriteAgreement prints the correlations and their mean over metrics.
func WriteAgreement(w io.Writer, cs []Correlation) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tn\tPearson r\tp\tSpearman rho\tp\tKendall tau-b\tp\t")
	var sr, ss, sk float64
	k := 0
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.4f\t%.3f\t%.4f\t%.3f\t%.4f\t\n", c.Metric, c.N, c.Pearson, c.PearsonP,
			c.Spearman, c.SpearmanP, c.Kendall, c.KendallP)
		if !math.IsNaN(c.Pearson) {
			sr, ss, sk = sr+c.Pearson, ss+c.Spearman, sk+c.Kendall
			k++
		}
	}
	if k > 0 {
		fmt.Fprintf(tw, "mean\t\t%.3f\t\t%.3f\t\t%.3f\t\t\n", sr/float64(k), ss/float64(k), sk/float64(k))
	}
	return tw.Flush()
}

// agreementMetrics lists the metrics `agreement` correlates: the built-in ones, then the LLM
// metrics (fm, its facets, qa_coverage, qa_consistency) where both files have them.
func agreementMetrics() []string {
	var out []string
	for m := range NumMetrics {
		out = append(out, m.String())
	}
	return append(out, LLMMetricNames...)
}
