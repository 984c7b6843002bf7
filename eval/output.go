package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// paperColumns are the columns of the papers' Tables 3 and 5, in their order.
var paperColumns = []struct {
	head string
	m    Metric
}{
	{"CLR", ClaimRecall}, {"CIR", CitationRecall}, {"CLP", ClaimPrecision}, {"CIP", CitationPrecision},
	{"F1cl", ClaimF1}, {"F1ci", CitationF1},
	{"exP", CitationExactPrecision}, {"exR", CitationExactRecall}, {"exF1", CitationExactF1},
	{"R1", Rouge1F}, {"R2", Rouge2F}, {"RL", RougeLF},
	{"PR", PhraseRecall}, {"PP", PhrasePrecision}, {"PF1", PhraseF1},
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f", 100*v)
}

// WriteTables prints the report as text: a Table 3 style summary (per-instance means in percent
// with bootstrap intervals, overall and on positive references, plus micro totals), then a
// Table 5 style aspect-wise table.
func WriteTables(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	level := rep.Overall.Level
	fmt.Fprintf(w, "Evaluation (%%, per-instance mean; [%g%% bootstrap CI]; judge %s)\n%s; %s\n", 100*level, rep.Settings.Judge,
		F1Definition, MicroDefinition)
	fmt.Fprintf(tw, "metric\tall (n=%d)\t%g%% CI\tpositive refs (n=%d)\t%g%% CI\tmicro (all)\t\n",
		rep.Overall.N, 100*level, rep.Positive.N, 100*level)
	for _, m := range rep.Overall.Metrics() {
		ci := func(g *Group) string {
			if math.IsNaN(g.CI[m][0]) {
				return "-"
			}
			return "[" + pct(g.CI[m][0]) + ", " + pct(g.CI[m][1]) + "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", m, pct(rep.Overall.Mean[m]), ci(&rep.Overall),
			pct(rep.Positive.Mean[m]), ci(&rep.Positive), pct(rep.Overall.Micro[m]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nAspect-wise (%%, per-instance mean)\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"aspect", "n"}
	for _, c := range paperColumns {
		if c.m.isPhrase() && !rep.Overall.Phrases {
			continue
		}
		head = append(head, c.head)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	row := func(name string, g *Group) {
		cells := []string{name, fmt.Sprint(g.N)}
		for _, c := range paperColumns {
			if c.m.isPhrase() && !rep.Overall.Phrases {
				continue
			}
			cells = append(cells, pct(g.Mean[c.m]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	for _, a := range rep.Aspects() {
		g := rep.ByAspect[a]
		row(strings.ToUpper(a), &g)
	}
	row("Avg.", &rep.Overall)
	row("Pos.", &rep.Positive)
	return tw.Flush()
}

// ReportJSON renders report.json: indented, keys in a fixed order, byte-identical for the same
// inputs and seed.
func ReportJSON(rep *Report) ([]byte, error) {
	b, err := json.Marshal(rep)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// InstanceLine is one line of instances.jsonl: an instance's scores and what they came from.
type InstanceLine struct {
	PMID         string            `json:"PMID"`
	Aspect       string            `json:"Aspect"`
	RefNegative  bool              `json:"ref_negative"`
	PredNegative bool              `json:"pred_negative"`
	Scores       ScoreMap          `json:"scores"`
	RefIndexes   []int             `json:"ref_indexes"`
	PredIndexes  []int             `json:"pred_indexes"`
	Valid        []int             `json:"valid_indexes"`
	Uncredited   []int             `json:"uncredited_indexes"`
	RefClaims    []Claim           `json:"ref_claims"`
	PredClaims   []Claim           `json:"pred_claims"`
	Counts       map[string][2]int `json:"counts"`
}

// ScoreMap maps metric names to an instance's values (per-instance F1 included).
type ScoreMap map[string]float64

// Line converts a result to its instances.jsonl form.
func (r *Result) Line() InstanceLine {
	l := InstanceLine{
		PMID: r.PMID, Aspect: r.Aspect, RefNegative: r.RefNegative, PredNegative: r.PredNegative,
		Scores: ScoreMap{}, Counts: map[string][2]int{},
		RefIndexes: nonNil(r.RefIndexes), PredIndexes: nonNil(r.PredIndexes),
		Valid: nonNil(r.Valid), Uncredited: nonNil(r.Uncredited),
		RefClaims: r.RefClaims, PredClaims: r.PredClaims,
	}
	if l.RefClaims == nil {
		l.RefClaims = []Claim{}
	}
	if l.PredClaims == nil {
		l.PredClaims = []Claim{}
	}
	for m := range NumMetrics {
		if m.isPhrase() && !r.HasPhrases {
			continue
		}
		l.Scores[m.String()] = r.Values[m]
		if c := r.Counts[m]; c.Den > 0 || c.Num > 0 {
			l.Counts[m.String()] = [2]int{c.Num, c.Den}
		}
	}
	return l
}

func nonNil(x []int) []int {
	if x == nil {
		return []int{}
	}
	return x
}
