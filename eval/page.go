package eval

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"github.com/tracksum/tracksum/eval/report"
)

// ReportInstances is the most instances report.html shows. Past it, the page shows an evenly
// spaced sample of the abstracts (every k-th in reference order, with all their instances) and
// says so; instances.jsonl always holds every instance. Issue 22: 100k instances made a 310 MB
// page that took 1.56 GB to build and no browser could open.
var ReportInstances = 2000

// The report's tracker charts: histogram bins of width 0.05 and thresholds every 0.01.
const (
	histBins     = 20
	sweepSteps   = 100
	defaultThres = 0.5
)

// metricGroup is one of the report's metric tables: a few columns, so that the tables wrap side by
// side within a 1,400 px window (issue 23: one table of every metric was wider than that).
type metricGroup struct {
	id, title string
	heads     []string
	metrics   []Metric
}

var metricGroups = []metricGroup{
	{"t-claims", "Claims", []string{"P", "R", "F1"}, []Metric{ClaimPrecision, ClaimRecall, ClaimF1}},
	{"t-citations", "Citations (credited by the judge)", []string{"P", "R", "F1"}, []Metric{CitationPrecision, CitationRecall, CitationF1}},
	{"t-citations-exact", "Citations (exact match)", []string{"P", "R", "F1"}, []Metric{CitationExactPrecision, CitationExactRecall, CitationExactF1}},
	{"t-rouge", "ROUGE (F)", []string{"R-1", "R-2", "R-L", "R-Lsum"}, []Metric{Rouge1F, Rouge2F, RougeLF, RougeLsumF}},
	{"t-phrases", "Phrases", []string{"P", "R", "F1"}, []Metric{PhrasePrecision, PhraseRecall, PhraseF1}},
}

// exactEqualsCredited reports whether every instance has the same citation_* and citation_exact_*
// values: the judge credited every sentence cited by both sides (as on the demo's sample), and
// the two column groups would repeat each other.
func exactEqualsCredited(results []Result) bool {
	for i := range results {
		v := &results[i].Values
		if v[CitationPrecision] != v[CitationExactPrecision] || v[CitationRecall] != v[CitationExactRecall] ||
			v[CitationF1] != v[CitationExactF1] {
			return false
		}
	}
	return len(results) > 0
}

func ciText(ci [2]float64) string {
	if math.IsNaN(ci[0]) || math.IsNaN(ci[1]) {
		return ""
	}
	return "[" + pct(ci[0]) + ", " + pct(ci[1]) + "]"
}

// Page builds the error-analysis page: the metric tables with their intervals, the charts, then
// abstracts in order of first appearance in the references, each with its instances' cards; past
// ReportInstances, a sample of them (see ReportInstances). The tables and charts always cover
// every instance.
func Page(out *Outcome) report.Page {
	rep := out.Report
	p := report.Page{
		Title:    "tracksum evaluation: " + filepath.Base(rep.Settings.Pred),
		Subtitle: fmt.Sprintf("predictions %s · references %s · judge %s · %d instances", rep.Settings.Pred, rep.Settings.Ref, rep.Settings.Judge, rep.Overall.N),
	}
	sameExact := exactEqualsCredited(out.Results)
	var metrics []Metric
	for _, m := range rep.Overall.Metrics() {
		if sameExact && m >= CitationExactPrecision && m <= CitationExactF1 {
			continue
		}
		metrics = append(metrics, m)
		p.Metrics = append(p.Metrics, m.String())
	}
	if out.LLMReport != nil {
		for _, s := range out.LLMReport.Overall {
			p.Metrics = append(p.Metrics, s.Name)
		}
		p.Subtitle += fmt.Sprintf(" · LLM metrics %v (%s)", out.LLMReport.Metrics, out.LLMReport.Model)
	}
	p.Tables = metricTables(rep, sameExact)
	if out.LLMReport != nil {
		p.Tables = append(p.Tables, llmTable(rep, out.LLMReport))
		for _, a := range out.LLMReport.Answers {
			if a.NotMeaningful != "" {
				p.Notes = append(p.Notes, fmt.Sprintf("LLM metric %s is not meaningful and has no score: %s.", a.Metric, a.NotMeaningful))
			}
		}
	}
	p.Notes = append(p.Notes, fmt.Sprintf("Values are per-instance means in %%; under each, its %g%% percentile bootstrap interval (%d resamples, seed %d). Each F1 is the harmonic mean of the averaged recall and precision.",
		100*rep.Overall.Level, rep.Settings.Bootstrap.Resamples, rep.Settings.Bootstrap.Seed))
	if sameExact {
		p.Notes = append(p.Notes, fmt.Sprintf("citation_precision, citation_recall and citation_f1 equal citation_exact_precision, citation_exact_recall and citation_exact_f1 on every one of the %d instances (the judge credited every sentence cited by both the reference and the prediction), so the exact-match columns are not repeated; report.json and instances.jsonl hold both.", len(out.Results)))
	}
	p.Figures = aspectFigures(rep)
	ts := SweepTracker(out.Pairs, histBins, sweepSteps)
	switch {
	case ts.Scored == 0:
		p.Notes = append(p.Notes, "The predictions carry no per-sentence tracker scores (the optional Scores field that tracksum-infer writes; the end-to-end LLM methods and hand-made files have none), so there is no score histogram, no threshold sweep and no sentence probabilities.")
	default:
		if ts.Scored < ts.Instances {
			p.Notes = append(p.Notes, fmt.Sprintf("Only %d of the %d predictions carry per-sentence tracker scores: the score histogram and the threshold sweep count those.", ts.Scored, ts.Instances))
		}
		p.Figures = append(p.Figures, histogramFigure(&ts), sweepFigure(&ts))
	}
	p.Abstracts, p.Note = abstracts(out, metrics)
	return p
}

// metricTables returns one table per metric group: rows all, positive references and each aspect.
func metricTables(rep *Report, sameExact bool) []report.Table {
	type named struct {
		name string
		g    *Group
	}
	rows := []named{{fmt.Sprintf("all (n=%d)", rep.Overall.N), &rep.Overall}, {fmt.Sprintf("positive refs (n=%d)", rep.Positive.N), &rep.Positive}}
	for _, a := range rep.Aspects() {
		g := rep.ByAspect[a]
		rows = append(rows, named{fmt.Sprintf("aspect %s (n=%d)", a, g.N), &g})
	}
	var tables []report.Table
	for _, grp := range metricGroups {
		if grp.metrics[0].isPhrase() && !rep.Overall.Phrases {
			continue
		}
		if sameExact && grp.metrics[0] == CitationExactPrecision {
			continue
		}
		t := report.Table{ID: grp.id, Title: grp.title}
		for k, m := range grp.metrics {
			t.Columns = append(t.Columns, report.Column{Head: grp.heads[k], Metric: m.String()})
		}
		for _, r := range rows {
			row := report.Row{Name: r.name}
			for _, m := range grp.metrics {
				row.Cells = append(row.Cells, report.Cell{Value: pct(r.g.Mean[m]), CI: ciText(r.g.CI[m])})
			}
			t.Rows = append(t.Rows, row)
		}
		tables = append(tables, t)
	}
	return tables
}

// llmTable shows the LLM metrics (eval.metrics) transposed, a row per metric and a column per
// aspect: there can be more of them (fm and each facet's) than fit side by side.
func llmTable(rep *Report, llm *LLMReport) report.Table {
	t := report.Table{ID: "t-llm", Title: "LLM metrics (" + llm.Model + ")", Columns: []report.Column{{Head: "all"}}}
	aspects := rep.Aspects()
	for _, a := range aspects {
		t.Columns = append(t.Columns, report.Column{Head: a})
	}
	cell := func(sums []LLMMetricSummary, name string) report.Cell {
		for _, s := range sums {
			if s.Name == name && s.N > 0 {
				return report.Cell{Value: pct(s.Mean), CI: ciText(s.CI)}
			}
		}
		return report.Cell{Value: "-"}
	}
	for _, s := range llm.Overall {
		row := report.Row{Name: s.Name, Cells: []report.Cell{cell(llm.Overall, s.Name)}}
		for _, a := range aspects {
			row.Cells = append(row.Cells, cell(llm.ByAspect[a], s.Name))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// aspectFigures draws the claim and citation precision and recall of every aspect (and of all
// instances), each bar with its bootstrap interval.
func aspectFigures(rep *Report) []report.Figure {
	cats := []string{"all"}
	groups := []*Group{&rep.Overall}
	for _, a := range rep.Aspects() {
		g := rep.ByAspect[a]
		cats = append(cats, a)
		groups = append(groups, &g)
	}
	series := func(name string, m Metric) report.BarSeries {
		s := report.BarSeries{Name: name}
		for _, g := range groups {
			s.Values = append(s.Values, g.Mean[m])
			s.Low = append(s.Low, g.CI[m][0])
			s.High = append(s.High, g.CI[m][1])
			s.Notes = append(s.Notes, fmt.Sprintf("(n=%d)", g.N))
		}
		return s
	}
	level := fmt.Sprintf("%g%%", 100*rep.Overall.Level)
	claims := report.BarChart{
		Title: "Claim precision and recall by aspect", YLabel: "%", Categories: cats, YMax: 1, Percent: true,
		Series: []report.BarSeries{series("claim precision", ClaimPrecision), series("claim recall", ClaimRecall)},
	}
	cites := report.BarChart{
		Title: "Citation precision and recall by aspect", YLabel: "%", Categories: cats, YMax: 1, Percent: true,
		Series: []report.BarSeries{series("citation precision", CitationPrecision), series("citation recall", CitationRecall)},
	}
	return []report.Figure{
		{ID: "fig-claims", Title: claims.Title, SVG: claims.SVG(),
			Caption: "Per-instance means over all instances and per aspect; whiskers are the " + level + " bootstrap intervals (hover a bar for its value)."},
		{ID: "fig-citations", Title: cites.Title, SVG: cites.SVG(),
			Caption: "Citations credited by the judge (citation_precision, citation_recall); whiskers are the " + level + " bootstrap intervals."},
	}
}

// histogramFigure plots the tracker's scores of cited and uncited sentences, each as a share of its
// class: uncited sentences outnumber cited ones many times, and raw counts would hide the latter.
func histogramFigure(t *TrackerScores) report.Figure {
	n := len(t.HistCited)
	var cats []string
	cited := report.BarSeries{Name: "cited by the reference"}
	uncited := report.BarSeries{Name: "not cited"}
	for b := range n {
		lo := float64(b) / float64(n)
		label := ""
		if b%max(n/10, 1) == 0 {
			label = strconv.FormatFloat(lo, 'f', 1, 64)
		}
		cats = append(cats, label)
		cited.Values = append(cited.Values, share(t.HistCited[b], t.Cited))
		uncited.Values = append(uncited.Values, share(t.HistUncited[b], t.Uncited))
		hi := float64(b+1) / float64(n)
		cited.Notes = append(cited.Notes, fmt.Sprintf("(scores %.2f-%.2f: %d sentences)", lo, hi, t.HistCited[b]))
		uncited.Notes = append(uncited.Notes, fmt.Sprintf("(scores %.2f-%.2f: %d sentences)", lo, hi, t.HistUncited[b]))
	}
	c := report.BarChart{Title: "Tracker score histogram", YLabel: "% of the class", Categories: cats, Percent: true,
		Series: []report.BarSeries{cited, uncited}, Edges: "1.0"}
	rows := make([][]string, n)
	for b := range n {
		rows[b] = []string{fmt.Sprintf("%.2f-%.2f", float64(b)/float64(n), float64(b+1)/float64(n)), strconv.Itoa(t.HistCited[b]), strconv.Itoa(t.HistUncited[b])}
	}
	return report.Figure{ID: "fig-histogram", Title: c.Title, SVG: c.SVG(),
		Caption: fmt.Sprintf("The tracker's probability of every sentence of the %d scored predictions, by whether the reference cites the sentence (%d cited, %d not cited sentences), each bar a share of its class; bins of width %.2f.",
			t.Scored, t.Cited, t.Uncited, 1/float64(n)),
		Details: []report.Detail{{Title: "counts", Head: []string{"score", "cited", "not cited"}, Rows: rows}}}
}

func share(k, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return float64(k) / float64(n)
}

// sweepFigure plots the sentence selection's precision, recall and F1 against the threshold.
func sweepFigure(t *TrackerScores) report.Figure {
	c := report.LineChart{Title: "Threshold sweep of the tracker", XLabel: "threshold", YLabel: "%", X: t.Thresholds, Percent: true,
		Series: []report.LineSeries{{Name: "precision", Y: t.Precision}, {Name: "recall", Y: t.Recall}, {Name: "F1", Y: t.F1}},
		Marks:  []report.Mark{{X: defaultThres, Label: "0.5 (default)"}}}
	at := func(k int) string {
		return fmt.Sprintf("P %s, R %s, F1 %s", pct(t.Precision[k]), pct(t.Recall[k]), pct(t.F1[k]))
	}
	k05 := int(math.Round(defaultThres * float64(len(t.Thresholds)-1)))
	caption := fmt.Sprintf("Selecting the sentences scored at or above each threshold, against the reference citations, micro over every scored sentence. At 0.5: %s.", at(k05))
	switch b := t.Best(); {
	case b >= 0 && t.F1[k05] == t.F1[b]:
		c.Marks[0].Label = "0.5 (default, best F1)"
		caption += " No threshold gives a higher F1."
	case b >= 0:
		c.Marks = append(c.Marks, report.Mark{X: t.Thresholds[b], Label: fmt.Sprintf("best F1 at %.2f", t.Thresholds[b])})
		caption += fmt.Sprintf(" Best F1 at %.2f: %s.", t.Thresholds[b], at(b))
	}
	caption += " These are the tracker's own selections; the predictions' citations may differ where the summary's grounding changed them."
	var rows [][]string
	for k := 0; k < len(t.Thresholds); k += 5 {
		rows = append(rows, []string{fmt.Sprintf("%.2f", t.Thresholds[k]), pct(t.Precision[k]), pct(t.Recall[k]), pct(t.F1[k])})
	}
	return report.Figure{ID: "fig-sweep", Title: c.Title, SVG: c.SVG(), Caption: caption,
		Details: []report.Detail{{Title: "numbers (%)", Head: []string{"threshold", "precision", "recall", "F1"}, Rows: rows}}}
}

// abstracts returns the abstracts shown (all of them, or every step-th in order of first
// appearance while the instances shown stay within ReportInstances) with their cards, and the
// note that says so when it is a sample.
func abstracts(out *Outcome, metrics []Metric) ([]report.Abstract, string) {
	order, perAbstract := map[string]int{}, []int{}
	for i := range out.Pairs {
		pmid := out.Pairs[i].Ref.PMID
		if _, ok := order[pmid]; !ok {
			order[pmid] = len(perAbstract)
			perAbstract = append(perAbstract, 0)
		}
		perAbstract[order[pmid]]++
	}
	shown := make([]bool, len(perAbstract))
	step, nShown, nAbstracts := 1, 0, 0
	if len(out.Pairs) > ReportInstances {
		step = (len(out.Pairs) + ReportInstances - 1) / max(ReportInstances, 1)
	}
	for a := 0; a < len(perAbstract); a += step {
		if nShown+perAbstract[a] > ReportInstances && nShown > 0 {
			break
		}
		shown[a] = true
		nShown += perAbstract[a]
		nAbstracts++
	}
	note := ""
	if nShown < len(out.Pairs) {
		note = fmt.Sprintf("This page shows %d of the %d instances: every %s abstract in reference order (%d of %d abstracts) with all its aspects, to keep the page small. The tables and charts cover every instance, and instances.jsonl holds every instance's scores.",
			nShown, len(out.Pairs), ordinal(step), nAbstracts, len(perAbstract))
	}
	var abs []report.Abstract
	index := map[string]int{}
	for i := range out.Pairs {
		ref, pred, res := &out.Pairs[i].Ref, &out.Pairs[i].Pred, &out.Results[i]
		if !shown[order[ref.PMID]] {
			continue
		}
		k, ok := index[ref.PMID]
		if !ok {
			k = len(abs)
			index[ref.PMID] = k
			abs = append(abs, report.Abstract{PMID: ref.PMID, Sentences: ref.Document})
		}
		card := report.Card{
			Aspect: ref.Aspect, RefSummary: ref.Summary, PredSummary: pred.Summary,
			RefNegative: res.RefNegative, PredNegative: res.PredNegative,
			Ref: res.RefIndexes, Pred: res.PredIndexes, Valid: res.Valid,
		}
		for _, s := range pred.Scores {
			card.Probs = append(card.Probs, float64(s))
		}
		for _, c := range res.RefClaims {
			card.RefClaims = append(card.RefClaims, report.Claim{Text: c.Text, Entailed: c.Entailed})
		}
		for _, c := range res.PredClaims {
			card.PredClaims = append(card.PredClaims, report.Claim{Text: c.Text, Entailed: c.Entailed})
		}
		for _, m := range metrics {
			card.Scores = append(card.Scores, report.Score{Name: m.String(), Value: res.Values[m]})
		}
		if out.LLM != nil {
			addLLMCard(&card, &out.LLM[i])
		}
		abs[k].Cards = append(abs[k].Cards, card)
	}
	return abs, note
}

// ordinal writes 2 as "2nd", 3 as "3rd", 11 as "11th"... ("every 2nd abstract").
func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return fmt.Sprintf("%dth", n)
	case n%10 == 1:
		return fmt.Sprintf("%dst", n)
	case n%10 == 2:
		return fmt.Sprintf("%dnd", n)
	case n%10 == 3:
		return fmt.Sprintf("%drd", n)
	}
	return fmt.Sprintf("%dth", n)
}
