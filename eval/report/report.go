// Package report renders the evaluator's error-analysis page, report.html: one self-contained file
// (inline CSS, JavaScript and SVG, no network access). At the top, the metric tables (each value
// with its bootstrap interval; one small table per metric group, so that they wrap within the
// window) and charts drawn as inline SVG (per-aspect bars with intervals, the tracker's score
// histogram and threshold sweep). Then each abstract with its numbered sentences (and, when the
// predictions carry them, each sentence's tracker probability per aspect) and, per aspect, a card
// with the reference and predicted summaries, their subclaims, citations and per-instance scores.
// Hovering or selecting a card highlights the cited sentences: correct (cited by both and credited
// by the judge), cited by both but not credited, spurious (predicted only) and missed (reference
// only) are shown differently. Filters select an aspect and a score range of one metric. The
// output is deterministic: the same Page gives the same bytes.
//
// # Example
//
//	err := report.Write(w, report.Page{Title: "dev", Abstracts: abstracts, Metrics: names})
package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
)

// Page is everything report.html shows.
type Page struct {
	// Title heads the page (e.g. the prediction file's name).
	Title string
	// Subtitle is a line under the title (judge, files).
	Subtitle string
	// Note, when set, is a highlighted line under the subtitle (e.g. that the page shows a sample
	// of the instances).
	Note string
	// Notes are plain lines under the metric tables (e.g. that two metric groups are equal, or
	// that the predictions carry no tracker scores).
	Notes []string
	// Metrics lists the metric names offered by the score filter, in order.
	Metrics []string
	// Tables are the metric tables at the top. Each holds a few columns, so that they wrap side by
	// side within the window instead of one table wider than it.
	Tables []Table
	// Figures are the charts, shown after the tables.
	Figures []Figure
	// Abstracts are shown in order.
	Abstracts []Abstract
}

// Table is one group of metric columns (e.g. the claim metrics) over the same rows.
type Table struct {
	// ID is the table's element id (e.g. "t-claims").
	ID    string
	Title string
	// Columns head the value columns; Rows hold one Cell per column.
	Columns []Column
	Rows    []Row
}

// Column is a table column: a short head and the metric's full name, which the page keeps in a
// tooltip and a data attribute.
type Column struct {
	Head, Metric string
}

// Row is one line of a table: a name (e.g. "all (n=48)") and its cells.
type Row struct {
	Name  string
	Cells []Cell
}

// Cell is a value with its confidence interval (CI empty when there is none).
type Cell struct {
	Value, CI string
}

// Figure is a chart with its caption and optional tables (e.g. the numbers it plots).
type Figure struct {
	ID      string
	Title   string
	Caption string
	// SVG is the chart, inline (BarChart.SVG, LineChart.SVG).
	SVG     template.HTML
	Details []Detail
}

// Abstract is one document with its cards.
type Abstract struct {
	PMID      string
	Sentences []string
	Cards     []Card
}

// ProbCell is the tracker's probability of one sentence for one card's aspect.
type ProbCell struct {
	Aspect string
	// Text is the value with two decimals, "" when the card has no probabilities.
	Text string
	// Class buckets the value by tenths (tp0 ... tp9) for its colour, plus "sel" at 0.5 and above
	// (the default threshold) and "none" without a value.
	Class string
}

// ProbAspects lists the aspects of the abstract's cards, in card order, when any card carries
// tracker probabilities (else nil): the heads of the probability columns beside the sentences.
func (a Abstract) ProbAspects() []string {
	var out []string
	any := false
	for _, c := range a.Cards {
		out = append(out, c.Aspect)
		any = any || c.Probs != nil
	}
	if !any {
		return nil
	}
	return out
}

// ProbCells returns sentence i's probability under each card (see ProbAspects), nil when no card
// carries probabilities.
func (a Abstract) ProbCells(i int) []ProbCell {
	if a.ProbAspects() == nil {
		return nil
	}
	out := make([]ProbCell, len(a.Cards))
	for k, c := range a.Cards {
		out[k] = ProbCell{Aspect: c.Aspect, Class: "none"}
		if i < len(c.Probs) && !math.IsNaN(c.Probs[i]) {
			p := c.Probs[i]
			out[k].Text = strconv.FormatFloat(p, 'f', 2, 64)
			out[k].Class = "tp" + strconv.Itoa(min(max(int(p*10), 0), 9))
			if p >= 0.5 {
				out[k].Class += " sel"
			}
		}
	}
	return out
}

// Card is one (abstract, aspect) instance.
type Card struct {
	Aspect                  string
	RefSummary, PredSummary string
	RefNegative             bool
	PredNegative            bool
	Ref, Pred, Valid        []int
	RefClaims, PredClaims   []Claim
	Scores                  []Score
	// Probs are the tracker's probabilities of the abstract's sentences for this aspect (the
	// prediction's Scores), nil when the prediction carries none.
	Probs []float64
	// Details are extra tables shown under the scores (e.g. the facet segments and grades of the
	// facet-aware metric, the questions and answers of the QA metric).
	Details []Detail
}

// Detail is a titled table of a card, with a note under it (e.g. why a metric is undefined).
type Detail struct {
	Title string
	Head  []string
	Rows  [][]string
	Note  string
}

// Claim is a subclaim with the judge's verdict.
type Claim struct {
	Text     string
	Entailed bool
}

// Score is one named per-instance value in [0, 1].
type Score struct {
	Name  string
	Value float64
}

// Write renders the page.
func Write(w io.Writer, p Page) error {
	return pageTemplate.Execute(w, p)
}

func joinInts(x []int) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, " ")
}

func scoreAttr(sc []Score) string {
	s := make([]string, len(sc))
	for i, v := range sc {
		s[i] = v.Name + ":" + strconv.FormatFloat(v.Value, 'g', 6, 64)
	}
	return strings.Join(s, " ")
}

func pct(v float64) string { return fmt.Sprintf("%.1f", 100*v) }

func aspects(abs []Abstract) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range abs {
		for _, c := range a.Cards {
			if !seen[c.Aspect] {
				seen[c.Aspect] = true
				out = append(out, c.Aspect)
			}
		}
	}
	// Sorted so that the filter's order does not depend on which abstract comes first.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"ints":    joinInts,
	"scores":  scoreAttr,
	"pct":     pct,
	"aspects": aspects,
}).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1em 2em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0; }
h2.part { font-size: 1.15em; margin: 1em 0 .3em 0; }
.sub { color: #666; margin-top: .2em; overflow-wrap: anywhere; }
p.note { background: #fff3c4; padding: .3em .6em; border-radius: 4px; }
p.info { background: #eef3fb; padding: .3em .6em; border-radius: 4px; margin: .3em 0; }
.tables, .figures { display: flex; flex-wrap: wrap; gap: .8em 1.5em; align-items: flex-start; max-width: 100%; }
.tblwrap { max-width: 100%; overflow-x: auto; }
table.summary { border-collapse: collapse; margin: .3em 0; }
table.summary caption { text-align: left; font-weight: 600; padding-bottom: .2em; }
table.summary td, table.summary th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; white-space: nowrap; }
table.summary th:first-child, table.summary td:first-child { text-align: left; }
table.summary .ci { display: block; font-size: .75em; color: #777; }
figure { margin: 0; max-width: 100%; }
figure figcaption { font-size: .85em; color: #444; max-width: 640px; }
figure figcaption b { color: #222; }
svg.chart { max-width: 100%; height: auto; display: block; font-family: system-ui, sans-serif; }
#filters { position: sticky; top: 0; background: #fff; padding: .5em 0; border-bottom: 1px solid #ddd; z-index: 2; }
.legend span { padding: 0 .4em; margin-right: .4em; border-radius: 3px; }
.abstract { display: flex; flex-wrap: wrap; gap: 1.5em; border-bottom: 1px solid #ddd; padding: 1em 0; }
.doc { flex: 1 1 32em; min-width: 0; }
.doc ol { padding-left: 0; list-style: none; }
.sent { display: flex; align-items: baseline; padding: 1px 4px; border-left: 4px solid transparent; margin: 1px 0; }
.sent .idx { color: #888; font-size: .85em; margin-right: .4em; }
.sent .txt { flex: 1 1 auto; min-width: 0; }
.tps, .tphead { white-space: nowrap; margin-left: .6em; font-size: .75em; }
.tphead { text-align: right; color: #666; }
.tp { display: inline-block; width: 3em; text-align: center; border-radius: 2px; margin-left: 1px; }
.tphead .tp { font-weight: 600; }
.tp.sel { font-weight: 700; }
.tp.on { outline: 2px solid #225; }
.tp0 { background: #f7fbff; } .tp1 { background: #deebf7; } .tp2 { background: #c6dbef; } .tp3 { background: #9ecae1; }
.tp4 { background: #6baed6; } .tp5 { background: #4292c6; color: #fff; } .tp6 { background: #2171b5; color: #fff; }
.tp7 { background: #08519c; color: #fff; } .tp8 { background: #08306b; color: #fff; } .tp9 { background: #041c40; color: #fff; }
.cards { flex: 1 1 26em; min-width: 0; }
.card { border: 1px solid #bbb; border-radius: 6px; padding: .5em .7em; margin-bottom: .6em; cursor: pointer; overflow-wrap: anywhere; }
.card:hover, .card.selected { border-color: #225; box-shadow: 0 0 0 2px #99c; }
.card h3 { margin: 0 0 .3em 0; font-size: 1em; }
.card .neg { color: #888; font-style: italic; }
.claims { margin: .2em 0 .4em 1.2em; padding: 0; font-size: .9em; }
.claims .yes::before { content: "\2713 "; color: #2a7; }
.claims .no::before { content: "\2717 "; color: #c33; }
.scores { font-size: .85em; color: #444; }
.correct { background: #cfeecf; border-left-color: #2a7; }
.uncredited { background: #fff3c4; border-left-color: #d9a400; }
.spurious { background: #f9d0d0; border-left-color: #c33; }
.missed { background: #dde6ff; border-left-color: #36c; }
.hidden { display: none; }
.detail { font-size: .85em; margin-top: .3em; max-width: 100%; overflow-x: auto; }
.detail table { border-collapse: collapse; margin: .2em 0; }
.detail td, .detail th { border: 1px solid #ddd; padding: 1px 4px; vertical-align: top; text-align: left; }
.detail .note { color: #666; margin: .2em 0; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="sub">{{.Subtitle}}</p>
{{if .Note}}<p class="note" id="note">{{.Note}}</p>{{end}}
{{if .Tables}}<h2 class="part">Metrics</h2>
<div class="tables" id="summary">
{{range .Tables}}<div class="tblwrap"><table class="summary" id="{{.ID}}">
<caption>{{.Title}}</caption>
<tr><th></th>{{range .Columns}}<th data-metric="{{.Metric}}" title="{{.Metric}}">{{.Head}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{.Name}}</td>{{range .Cells}}<td><span class="v">{{.Value}}</span>{{if .CI}}<span class="ci">{{.CI}}</span>{{end}}</td>{{end}}</tr>
{{end}}</table></div>
{{end}}</div>{{end}}
{{range .Notes}}<p class="info">{{.}}</p>
{{end}}{{if .Figures}}<h2 class="part">Charts</h2>
<div class="figures" id="figures">
{{range .Figures}}<figure id="{{.ID}}">{{.SVG}}<figcaption><b>{{.Title}}.</b> {{.Caption}}</figcaption>
{{range .Details}}<details class="detail"><summary>{{.Title}}</summary>{{if .Rows}}<table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}{{if .Note}}<p class="note">{{.Note}}</p>{{end}}</details>
{{end}}</figure>
{{end}}</div>{{end}}
<div id="filters">
<label>Aspect <select id="f-aspect"><option value="">all</option>{{range aspects .Abstracts}}<option value="{{.}}">{{.}}</option>{{end}}</select></label>
<label>Score <select id="f-metric">{{range .Metrics}}<option value="{{.}}">{{.}}</option>{{end}}</select></label>
<label>from <input id="f-min" type="number" min="0" max="100" step="1" value="0" size="4"></label>
<label>to <input id="f-max" type="number" min="0" max="100" step="1" value="100" size="4"> %</label>
<span id="f-count"></span>
<span class="legend">Citations: <span class="correct">correct</span><span class="uncredited">cited by both, not credited by the judge</span><span class="spurious">spurious</span><span class="missed">missed</span></span>
</div>
{{range $a := .Abstracts}}<section class="abstract" id="pmid-{{.PMID}}" data-pmid="{{.PMID}}">
<div class="doc"><h2>PMID {{.PMID}}</h2>{{with .ProbAspects}}<div class="tphead" title="the tracker's probability of each sentence, per aspect (bold: 0.5 and above)">tracker p: {{range .}}<span class="tp">{{.}}</span>{{end}}</div>{{end}}<ol>
{{range $i, $s := .Sentences}}<li class="sent" data-i="{{$i}}"><span class="idx">{{$i}}</span><span class="txt">{{$s}}</span>{{with $a.ProbCells $i}}<span class="tps">{{range .}}<span class="tp {{.Class}}" data-aspect="{{.Aspect}}">{{if .Text}}{{.Text}}{{else}}-{{end}}</span>{{end}}</span>{{end}}</li>
{{end}}</ol></div>
<div class="cards">
{{range .Cards}}<div class="card" tabindex="0" data-aspect="{{.Aspect}}" data-ref="{{ints .Ref}}" data-pred="{{ints .Pred}}" data-valid="{{ints .Valid}}" data-scores="{{scores .Scores}}">
<h3>Aspect {{.Aspect}}</h3>
<div class="refsum"><b>Reference</b> [{{ints .Ref}}]: {{if .RefNegative}}<span class="neg">{{.RefSummary}}</span>{{else}}{{.RefSummary}}{{end}}</div>
{{if .RefClaims}}<ul class="claims">{{range .RefClaims}}<li class="{{if .Entailed}}yes{{else}}no{{end}}">{{.Text}}</li>{{end}}</ul>{{end}}
<div class="predsum"><b>Prediction</b> [{{ints .Pred}}]: {{if .PredNegative}}<span class="neg">{{.PredSummary}}</span>{{else}}{{.PredSummary}}{{end}}</div>
{{if .PredClaims}}<ul class="claims">{{range .PredClaims}}<li class="{{if .Entailed}}yes{{else}}no{{end}}">{{.Text}}</li>{{end}}</ul>{{end}}
<div class="scores">{{range $k, $s := .Scores}}{{if $k}} · {{end}}{{$s.Name}} {{pct $s.Value}}{{end}}</div>
{{range .Details}}<details class="detail"><summary>{{.Title}}</summary>{{if .Rows}}<table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}{{if .Note}}<p class="note">{{.Note}}</p>{{end}}</details>
{{end}}</div>
{{end}}</div>
</section>
{{end}}
<script>
(function () {
  "use strict";
  function ints(s) { return s ? s.split(" ").map(Number) : []; }
  function scores(card) {
    var out = {};
    (card.dataset.scores || "").split(" ").forEach(function (kv) {
      var i = kv.lastIndexOf(":");
      if (i > 0) { out[kv.slice(0, i)] = parseFloat(kv.slice(i + 1)); }
    });
    return out;
  }
  var classes = ["correct", "uncredited", "spurious", "missed"];
  function clear(section) {
    section.querySelectorAll(".sent").forEach(function (li) {
      classes.forEach(function (c) { li.classList.remove(c); });
    });
    section.querySelectorAll(".tp.on").forEach(function (el) { el.classList.remove("on"); });
  }
  function paint(card) {
    var section = card.closest(".abstract");
    clear(section);
    var ref = ints(card.dataset.ref), pred = ints(card.dataset.pred), valid = ints(card.dataset.valid);
    section.querySelectorAll(".sent").forEach(function (li) {
      var i = Number(li.dataset.i), r = ref.indexOf(i) >= 0, p = pred.indexOf(i) >= 0;
      if (r && p) { li.classList.add(valid.indexOf(i) >= 0 ? "correct" : "uncredited"); }
      else if (p) { li.classList.add("spurious"); }
      else if (r) { li.classList.add("missed"); }
    });
    section.querySelectorAll(".tps .tp").forEach(function (el) {
      if (el.dataset.aspect === card.dataset.aspect) { el.classList.add("on"); }
    });
  }
  function restore(section) {
    var sel = section.querySelector(".card.selected");
    if (sel) { paint(sel); } else { clear(section); }
  }
  document.querySelectorAll(".card").forEach(function (card) {
    card.addEventListener("mouseenter", function () { paint(card); });
    card.addEventListener("mouseleave", function () { restore(card.closest(".abstract")); });
    function select() {
      var section = card.closest(".abstract"), was = card.classList.contains("selected");
      section.querySelectorAll(".card.selected").forEach(function (c) { c.classList.remove("selected"); });
      if (!was) { card.classList.add("selected"); }
      restore(section);
    }
    card.addEventListener("click", select);
    card.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); select(); } });
  });
  var fa = document.getElementById("f-aspect"), fm = document.getElementById("f-metric"),
      lo = document.getElementById("f-min"), hi = document.getElementById("f-max"),
      count = document.getElementById("f-count");
  function filter() {
    var aspect = fa.value, metric = fm.value, min = Number(lo.value) / 100, max = Number(hi.value) / 100, shown = 0;
    document.querySelectorAll(".abstract").forEach(function (section) {
      var any = false;
      section.querySelectorAll(".card").forEach(function (card) {
        var s = scores(card)[metric], ok = (!aspect || card.dataset.aspect === aspect) &&
          (s === undefined || (s >= min - 1e-9 && s <= max + 1e-9));
        card.classList.toggle("hidden", !ok);
        if (ok) { any = true; shown++; }
      });
      section.classList.toggle("hidden", !any);
    });
    count.textContent = shown + " instance(s) shown";
  }
  [fa, fm, lo, hi].forEach(function (el) { el.addEventListener("input", filter); el.addEventListener("change", filter); });
  filter();
})();
</script>
</body>
</html>
`
