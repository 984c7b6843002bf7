package eval

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"text/tabwriter"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/stats"
	"github.com/tracksum/tracksum/internal/atomicio"
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
	// F1 and Micro say how the F1 rows and the micro row are computed (F1Definition,
	// MicroDefinition), as the tables of tracksum-eval say it.
	F1, Micro string
	Metrics   []Difference
}

// F1Definition and MicroDefinition name the two F1s that tracksum-eval and compare print: a
// group's F1 is that of its mean recall and mean precision (the papers' Tables 3 and 5), which is
// not the mean of per-instance F1s; micro pools the counts of all instances.
const (
	F1Definition    = "F1 = harmonic mean of the per-instance mean recall and mean precision (the papers' tables)"
	MicroDefinition = "micro = recall, precision and F1 of the counts summed over instances"
)

// pairedBootstrapF1OfMeans is stats.PairedBootstrap for the F1 of mean recall and mean precision
// (system A's ra, pa; B's rb, pb): the same instances are drawn for both systems, with the draws of
// stats.PairedBootstrap, and each draw's F1s are recomputed from its means; p counts the draws
// whose difference lies at least |observed| from the observed one. Mismatched or empty input gives
// (NaN, NaN).
func pairedBootstrapF1OfMeans(ra, pa, rb, pb []float64, resamples int, seed uint64) (diff, p float64) {
	n := len(ra)
	if n == 0 || len(pa) != n || len(rb) != n || len(pb) != n || resamples < 1 {
		return math.NaN(), math.NaN()
	}
	diff = F1(stats.Mean(ra), stats.Mean(pa)) - F1(stats.Mean(rb), stats.Mean(pb))
	obs := math.Abs(diff)
	rng := rand.New(rand.NewPCG(seed, pcgStream))
	count := 0
	for range resamples {
		var sra, spa, srb, spb float64
		for range n {
			i := rng.IntN(n)
			sra, spa, srb, spb = sra+ra[i], spa+pa[i], srb+rb[i], spb+pb[i]
		}
		k := float64(n)
		if math.Abs(F1(sra/k, spa/k)-F1(srb/k, spb/k)-diff) >= obs {
			count++
		}
	}
	return diff, float64(count+1) / float64(resamples+1)
}

// Compare evaluates two prediction files against the same references and tests, for each metric,
// whether the difference of the per-instance means is significant (paired bootstrap over
// instances). An F1 row is tracksum-eval's F1 (F1Definition: the harmonic mean of the mean recall
// and mean precision), so that both commands print the same figure for the same predictions; its
// bootstrap recomputes that F1 from the resampled instances' recalls and precisions.
func Compare(ctx context.Context, a, b, ref string, cfg config.Eval) (*Comparison, error) {
	oa, err := Evaluation(ctx, a, ref, cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a, err)
	}
	ob, err := Evaluation(ctx, b, ref, cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b, err)
	}
	c := &Comparison{A: a, B: b, Ref: ref, N: len(oa.Results), Resamples: cfg.Bootstrap.Resamples, Seed: cfg.Bootstrap.Seed,
		F1: F1Definition, Micro: MicroDefinition}
	values := func(rs []Result, m Metric) []float64 {
		out := make([]float64, len(rs))
		for i := range rs {
			out[i] = rs[i].Values[m]
		}
		return out
	}
	for _, m := range oa.Report.Overall.Metrics() {
		if r, pr := m.f1Parts(); r >= 0 {
			ra, pa, rb, pb := values(oa.Results, r), values(oa.Results, pr), values(ob.Results, r), values(ob.Results, pr)
			d, p := pairedBootstrapF1OfMeans(ra, pa, rb, pb, cfg.Bootstrap.Resamples, cfg.Bootstrap.Seed)
			c.Metrics = append(c.Metrics, Difference{Metric: m.String(), A: F1(stats.Mean(ra), stats.Mean(pa)), B: F1(stats.Mean(rb), stats.Mean(pb)), Diff: d, P: p})
			continue
		}
		va, vb := values(oa.Results, m), values(ob.Results, m)
		d, p := stats.PairedBootstrap(va, vb, cfg.Bootstrap.Resamples, cfg.Bootstrap.Seed)
		c.Metrics = append(c.Metrics, Difference{Metric: m.String(), A: stats.Mean(va), B: stats.Mean(vb), Diff: d, P: p})
	}
	// The tracker's sentence-level F1 is a micro average over all sentences, not a mean of
	// per-instance values: its bootstrap resamples instances and recomputes micro F1 from the
	// resampled citation counts.
	ca, cb := sentenceCounts(oa.Results), sentenceCounts(ob.Results)
	d, p := pairedBootstrapMicroF1(ca, cb, cfg.Bootstrap.Resamples, cfg.Bootstrap.Seed)
	c.Metrics = append(c.Metrics, Difference{Metric: SentenceMicroF1, A: microF1(ca, nil), B: microF1(cb, nil), Diff: d, P: p})
	return c, nil
}

// SentenceMicroF1 is the comparison row of the sentence-level micro F1 of the citations: over all
// instances, 2·TP / (2·TP + FP + FN) with TP the cited sentences in both the prediction and the
// reference — the tracker's sentence F1 when the prediction's Indexes are its tracked sentences.
const SentenceMicroF1 = "sentence_micro_f1"

// sentenceCounts returns each instance's (TP, FP, FN) of cited sentences.
func sentenceCounts(rs []Result) [][3]float64 {
	out := make([][3]float64, len(rs))
	for i, r := range rs {
		tp := 0
		for _, c := range r.PredIndexes {
			if _, ok := slices.BinarySearch(r.RefIndexes, c); ok {
				tp++
			}
		}
		out[i] = [3]float64{float64(tp), float64(len(r.PredIndexes) - tp), float64(len(r.RefIndexes) - tp)}
	}
	return out
}

// microF1 is the micro F1 of the instances idx of counts (all of them when idx is nil); 0 when
// nothing is cited on either side.
func microF1(counts [][3]float64, idx []int) float64 {
	var tp, fp, fn float64
	add := func(c [3]float64) { tp, fp, fn = tp+c[0], fp+c[1], fn+c[2] }
	if idx == nil {
		for _, c := range counts {
			add(c)
		}
	} else {
		for _, i := range idx {
			add(counts[i])
		}
	}
	if 2*tp+fp+fn == 0 {
		return 0
	}
	return 2 * tp / (2*tp + fp + fn)
}

// pairedBootstrapMicroF1 is stats.PairedBootstrap for a micro F1: the same instances are drawn
// for both systems, the difference of their micro F1s is recomputed on each draw, and p counts
// the draws whose difference lies at least |observed| from the observed one (null imposed by
// centring), p = (count + 1) / (resamples + 1). Mismatched or empty input gives (NaN, NaN).
func pairedBootstrapMicroF1(a, b [][3]float64, resamples int, seed uint64) (diff, p float64) {
	n := len(a)
	if n == 0 || n != len(b) || resamples < 1 {
		return math.NaN(), math.NaN()
	}
	diff = microF1(a, nil) - microF1(b, nil)
	obs := math.Abs(diff)
	rng := rand.New(rand.NewPCG(seed, 0x5e47e2ce))
	idx := make([]int, n)
	count := 0
	for range resamples {
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		if math.Abs(microF1(a, idx)-microF1(b, idx)-diff) >= obs {
			count++
		}
	}
	return diff, float64(count+1) / float64(resamples+1)
}

// WriteComparison prints the comparison as a table (percent points; * marks p < 0.05).
func WriteComparison(w io.Writer, c *Comparison) error {
	fmt.Fprintf(w, "Paired bootstrap (%d resamples, seed %d) over %d instances\nA = %s\nB = %s\n%s, as tracksum-eval's table; %s: %s\n",
		c.Resamples, c.Seed, c.N, c.A, c.B, cmp.Or(c.F1, F1Definition), SentenceMicroF1, cmp.Or(c.Micro, MicroDefinition))
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
		var keys []dataset.Key
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
		slices.SortFunc(keys, func(a, b dataset.Key) int {
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
func readScores(path string) (map[dataset.Key]map[string]float64, error) {
	out := map[dataset.Key]map[string]float64{}
	for l, err := range atomicio.Lines(path, 0) {
		if err != nil {
			return nil, err
		}
		b, line := l.Data, l.Num
		// The line's own decoding: its errors carry ErrMalformed, which callers test for.
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("%s:%d: %w: %v", path, line, ErrMalformed, err)
		}
		var k dataset.Key
		if json.Unmarshal(raw["PMID"], &k.PMID) != nil || json.Unmarshal(raw["Aspect"], &k.Aspect) != nil || k.PMID == "" || k.Aspect == "" {
			return nil, fmt.Errorf("%s:%d: %w: PMID and Aspect must be non-empty strings", path, line, ErrMalformed)
		}
		k.Aspect = dataset.AspectKey(k.Aspect)
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
