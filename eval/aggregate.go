package eval

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/tracksum/tracksum/eval/stats"
)

// BootstrapOptions configures the confidence intervals.
type BootstrapOptions struct {
	Resamples int
	Seed      uint64
	Level     float64
}

// Group is the aggregate of a set of instances.
type Group struct {
	// N is the number of instances.
	N int
	// Phrases says whether the phrase metrics apply.
	Phrases bool
	// Mean holds the per-instance means (the papers' tables); each F1 is the harmonic mean of the
	// averaged recall and precision.
	Mean [NumMetrics]float64
	// Micro holds totals over instances (sum of numerators over sum of denominators) for the
	// count-based metrics; ROUGE has no micro figure (NaN).
	Micro [NumMetrics]float64
	// CI holds the percentile bootstrap interval of each Mean entry.
	CI [NumMetrics][2]float64
	// Level is the confidence level of CI.
	Level float64
}

// Aggregate averages results and bootstraps confidence intervals. Means and intervals of recall,
// precision and ROUGE use stats.BootstrapCI on the per-instance values; the interval of an F1 is
// computed by resampling instances jointly and taking the harmonic mean of the resampled mean
// recall and precision, with the same seed.
func Aggregate(results []Result, phrases bool, b BootstrapOptions) Group {
	g := Group{N: len(results), Phrases: phrases, Level: b.Level}
	if g.N == 0 {
		for m := range NumMetrics {
			g.Mean[m], g.Micro[m] = math.NaN(), math.NaN()
			g.CI[m] = [2]float64{math.NaN(), math.NaN()}
		}
		return g
	}
	cols := make([][]float64, NumMetrics)
	for m := range NumMetrics {
		cols[m] = make([]float64, len(results))
		for i := range results {
			cols[m][i] = results[i].Values[m]
		}
	}
	for m := range NumMetrics {
		if r, p := m.f1Parts(); r >= 0 {
			g.Mean[m] = F1(mean(cols[r]), mean(cols[p]))
			var num, den [2]int
			for i := range results {
				num[0] += results[i].Counts[r].Num
				den[0] += results[i].Counts[r].Den
				num[1] += results[i].Counts[p].Num
				den[1] += results[i].Counts[p].Den
			}
			g.Micro[m] = F1(ratio(num[0], den[0]), ratio(num[1], den[1]))
			g.CI[m] = f1CI(cols[r], cols[p], b)
			continue
		}
		g.Mean[m] = mean(cols[m])
		if m >= Rouge1F && m <= RougeLsumF {
			g.Micro[m] = math.NaN()
		} else {
			var num, den int
			for i := range results {
				num += results[i].Counts[m].Num
				den += results[i].Counts[m].Den
			}
			g.Micro[m] = ratio(num, den)
		}
		lo, hi := stats.BootstrapCI(cols[m], b.Resamples, b.Seed, b.Level)
		g.CI[m] = [2]float64{lo, hi}
	}
	return g
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func ratio(num, den int) float64 {
	if den == 0 {
		return 0
	}
	return float64(num) / float64(den)
}

// f1CI is the percentile bootstrap interval of F1(mean recall, mean precision).
func f1CI(rec, prec []float64, b BootstrapOptions) [2]float64 {
	// The stream constant of stats.BootstrapCI: with the same seed the F1 interval resamples the very
	// same instances as the intervals of its recall and precision.
	rng := rand.New(rand.NewPCG(b.Seed, 0x9e3779b97f4a7c15))
	n := len(rec)
	vals := make([]float64, b.Resamples)
	for k := range vals {
		var sr, sp float64
		for range n {
			i := rng.IntN(n)
			sr += rec[i]
			sp += prec[i]
		}
		vals[k] = F1(sr/float64(n), sp/float64(n))
	}
	slices.Sort(vals)
	alpha := (1 - b.Level) / 2
	return [2]float64{quantile(vals, alpha), quantile(vals, 1-alpha)}
}

// quantile of sorted x with linear interpolation (numpy's default).
func quantile(x []float64, q float64) float64 {
	if len(x) == 1 {
		return x[0]
	}
	pos := q * float64(len(x)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(x)-1)
	return x[lo] + (pos-float64(lo))*(x[hi]-x[lo])
}

// Metrics lists the metrics this group reports (phrase metrics only when they apply).
func (g *Group) Metrics() []Metric {
	var out []Metric
	for m := range NumMetrics {
		if m.isPhrase() && !g.Phrases {
			continue
		}
		out = append(out, m)
	}
	return out
}

// MarshalJSON writes the group with keys in a fixed order: n, the mean of each metric, then
// "micro" and "ci" objects. Undefined values (an empty group, ROUGE micro) are null.
func (g Group) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"n":`)
	b.WriteString(strconv.Itoa(g.N))
	for _, m := range g.Metrics() {
		b.WriteString(`,"` + m.String() + `":`)
		writeFloat(&b, g.Mean[m])
	}
	b.WriteString(`,"micro":{`)
	first := true
	for _, m := range g.Metrics() {
		if m >= Rouge1F && m <= RougeLsumF {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(`"` + m.String() + `":`)
		writeFloat(&b, g.Micro[m])
	}
	b.WriteString(`},"ci":{"level":`)
	writeFloat(&b, g.Level)
	for _, m := range g.Metrics() {
		b.WriteString(`,"` + m.String() + `":[`)
		writeFloat(&b, g.CI[m][0])
		b.WriteByte(',')
		writeFloat(&b, g.CI[m][1])
		b.WriteByte(']')
	}
	b.WriteString(`}}`)
	return b.Bytes(), nil
}

func writeFloat(b *bytes.Buffer, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		b.WriteString("null")
		return
	}
	b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
}

// Report is the content of report.json.
type Report struct {
	// Overall aggregates every instance.
	Overall Group `json:"overall"`
	// Positive aggregates the instances whose reference is positive.
	Positive Group `json:"positive"`
	// ByAspect aggregates each aspect code found in the references (keys sorted in the file).
	ByAspect map[string]Group `json:"by_aspect"`
	// Settings records how the figures were made.
	Settings Settings `json:"settings"`
}

// Settings records the inputs and options of a report.
type Settings struct {
	Pred      string           `json:"pred"`
	Ref       string           `json:"ref"`
	Judge     string           `json:"judge"`
	Stem      bool             `json:"rouge_stem"`
	Missing   string           `json:"missing"`
	Bootstrap BootstrapOptions `json:"bootstrap"`
	// Lexical holds the lexical judge's settings when it is the judge.
	Lexical map[string]float64 `json:"lexical,omitempty"`
}

// MarshalJSON keeps the bootstrap settings' keys in snake case.
func (b BootstrapOptions) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Resamples int     `json:"resamples"`
		Seed      uint64  `json:"seed"`
		Level     float64 `json:"level"`
	}{b.Resamples, b.Seed, b.Level})
}

// BuildReport aggregates results overall, on positive references and per aspect.
func BuildReport(results []Result, phrases bool, b BootstrapOptions, s Settings) *Report {
	rep := &Report{ByAspect: map[string]Group{}, Settings: s}
	rep.Overall = Aggregate(results, phrases, b)
	var pos []Result
	byAspect := map[string][]Result{}
	for _, r := range results {
		if !r.RefNegative {
			pos = append(pos, r)
		}
		byAspect[r.Aspect] = append(byAspect[r.Aspect], r)
	}
	rep.Positive = Aggregate(pos, phrases, b)
	for a, rs := range byAspect {
		rep.ByAspect[a] = Aggregate(rs, phrases, b)
	}
	return rep
}

// Aspects returns the report's aspect codes, sorted.
func (r *Report) Aspects() []string {
	var out []string
	for a := range r.ByAspect {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}
