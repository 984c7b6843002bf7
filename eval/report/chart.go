package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Charts are inline SVG written here rather than drawn by a JavaScript library: the page must open
// offline, fetch nothing and stay byte-identical for the same input (coordinates are printed with
// one decimal, so the bytes do not depend on floating-point noise). Inline SVG in HTML needs no
// xmlns attribute, which also keeps the page free of any URL.

// chartW and chartH are the SVG's user units; CSS scales the figure down on narrow windows.
const (
	chartW, chartH = 640, 300
	padL, padR     = 52, 16
	padT, padB     = 34, 46
)

// palette holds the series colours (Tableau 10, readable by most colour-blind readers).
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1"}

// BarChart is a grouped bar chart: one group of bars per category, one bar per series.
type BarChart struct {
	// Title is the SVG's accessible name.
	Title string
	// YLabel names the vertical axis.
	YLabel string
	// Categories label the groups along the horizontal axis.
	Categories []string
	Series     []BarSeries
	// YMax is the top of the axis; 0 picks a round value above the tallest bar (or whisker).
	YMax float64
	// Percent shows values in [0, 1] as percentages on the axis and in the tooltips.
	Percent bool
	// Edges, when set, makes the chart a histogram: Categories label the bins' lower edges and are
	// drawn at the left of each group, and Edges is the label of the last bin's upper edge.
	Edges string
}

// BarSeries is one bar per category. Low and High, when set, are whiskers (a confidence
// interval); NaN values draw no bar or whisker. Notes, when set, are added to a bar's tooltip
// (e.g. a count).
type BarSeries struct {
	Name      string
	Values    []float64
	Low, High []float64
	Notes     []string
}

// LineChart draws series of y values over shared x values; a NaN y breaks the line.
type LineChart struct {
	Title          string
	XLabel, YLabel string
	X              []float64
	Series         []LineSeries
	// Marks are vertical dashed lines with a label (e.g. the decision threshold).
	Marks []Mark
	// Percent shows y values in [0, 1] as percentages.
	Percent bool
}

// LineSeries is one line of a LineChart.
type LineSeries struct {
	Name string
	Y    []float64
}

// Mark is a labelled vertical line of a LineChart.
type Mark struct {
	X     float64
	Label string
}

// f prints a coordinate: one decimal is below a pixel and keeps the output stable.
func f(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func esc(s string) string { return template.HTMLEscapeString(s) }

// niceMax returns a round axis maximum >= v (1, 2, 2.5 or 5 times a power of ten) and its tick step.
func niceMax(v float64) (top, step float64) {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1, 0.25
	}
	raw := v / 4
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			step = m * p
			break
		}
	}
	return math.Ceil(v/step-1e-9) * step, step
}

func tickLabel(v float64, percent bool) string {
	if percent {
		v *= 100
	}
	// Rounded so that 3 steps of 0.1 print as 30, not 30.000000000000004.
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}

func valueLabel(v float64, percent bool) string {
	if percent {
		return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// svgOpen writes the root element, the accessible title and the legend.
func svgOpen(b *strings.Builder, class, title string, names []string) {
	fmt.Fprintf(b, `<svg class="chart %s" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		class, chartW, chartH, chartW, chartH, esc(title))
	fmt.Fprintf(b, "<title>%s</title>\n", esc(title))
	x := float64(padL)
	for i, n := range names {
		fmt.Fprintf(b, `<rect x="%s" y="8" width="12" height="12" fill="%s"/><text x="%s" y="18" font-size="12">%s</text>`,
			f(x), palette[i%len(palette)], f(x+16), esc(n))
		x += 16 + 7.2*float64(len([]rune(n))) + 18
	}
	b.WriteByte('\n')
}

// yAxis draws the horizontal grid lines with their labels and the axis title.
func yAxis(b *strings.Builder, top, step float64, percent bool, label string, y func(float64) float64) {
	for k := 0; float64(k)*step <= top+step/2; k++ {
		v := float64(k) * step
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#ddd"/><text x="%d" y="%s" font-size="11" text-anchor="end">%s</text>`,
			padL, chartW-padR, f(y(v)), f(y(v)), padL-6, f(y(v)+4), tickLabel(v, percent))
	}
	fmt.Fprintf(b, `<text transform="translate(14 %s) rotate(-90)" font-size="12" text-anchor="middle">%s</text>`+"\n",
		f(float64(padT+chartH-padB)/2), esc(label))
}

// SVG renders the chart.
func (c BarChart) SVG() template.HTML {
	var b strings.Builder
	names := make([]string, len(c.Series))
	hi := 0.0
	for i, s := range c.Series {
		names[i] = s.Name
		for k, v := range s.Values {
			if !math.IsNaN(v) {
				hi = math.Max(hi, v)
			}
			if k < len(s.High) && !math.IsNaN(s.High[k]) {
				hi = math.Max(hi, s.High[k])
			}
		}
	}
	top, step := c.YMax, 0.0
	if top > 0 {
		_, step = niceMax(top)
	} else {
		top, step = niceMax(hi)
	}
	svgOpen(&b, "bars", c.Title, names)
	plotH := float64(chartH - padT - padB)
	y := func(v float64) float64 { return float64(chartH-padB) - plotH*math.Min(v, top)/top }
	yAxis(&b, top, step, c.Percent, c.YLabel, y)
	groupW := float64(chartW-padL-padR) / float64(max(len(c.Categories), 1))
	barW := groupW * 0.8 / float64(max(len(c.Series), 1))
	for k, cat := range c.Categories {
		x0 := float64(padL) + groupW*float64(k) + groupW*0.1
		for i, s := range c.Series {
			if k >= len(s.Values) || math.IsNaN(s.Values[k]) {
				continue
			}
			v := s.Values[k]
			x := x0 + barW*float64(i)
			tip := fmt.Sprintf("%s, %s: %s", s.Name, cat, valueLabel(v, c.Percent))
			lo, up := math.NaN(), math.NaN()
			if k < len(s.Low) && k < len(s.High) {
				lo, up = s.Low[k], s.High[k]
			}
			if !math.IsNaN(lo) && !math.IsNaN(up) {
				tip += fmt.Sprintf(" [%s, %s]", valueLabel(lo, c.Percent), valueLabel(up, c.Percent))
			}
			if k < len(s.Notes) && s.Notes[k] != "" {
				tip += " " + s.Notes[k]
			}
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
				f(x), f(y(v)), f(barW*0.92), f(y(0)-y(v)), palette[i%len(palette)], esc(tip))
			if !math.IsNaN(lo) && !math.IsNaN(up) {
				cx := x + barW*0.46
				fmt.Fprintf(&b, `<path d="M%s %sV%sM%s %sH%sM%s %sH%s" stroke="#333" fill="none"/>`,
					f(cx), f(y(lo)), f(y(up)), f(cx-3), f(y(lo)), f(cx+3), f(cx-3), f(y(up)), f(cx+3))
			}
		}
		lx := x0 + groupW*0.4
		if c.Edges != "" {
			lx = x0 - groupW*0.1
		}
		fmt.Fprintf(&b, `<text x="%s" y="%d" font-size="11" text-anchor="middle">%s</text>`+"\n",
			f(lx), chartH-padB+14, esc(cat))
	}
	if c.Edges != "" {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="middle">%s</text>`+"\n",
			chartW-padR, chartH-padB+14, esc(c.Edges))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#555"/>`, padL, chartW-padR, f(y(0)), f(y(0)))
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// SVG renders the chart. The x axis spans the first to the last X value.
func (c LineChart) SVG() template.HTML {
	var b strings.Builder
	names := make([]string, len(c.Series))
	for i, s := range c.Series {
		names[i] = s.Name
	}
	svgOpen(&b, "lines", c.Title, names)
	x0, x1 := 0.0, 1.0
	if len(c.X) > 1 {
		x0, x1 = c.X[0], c.X[len(c.X)-1]
	}
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	x := func(v float64) float64 { return float64(padL) + plotW*(v-x0)/(x1-x0) }
	y := func(v float64) float64 { return float64(chartH-padB) - plotH*v }
	yAxis(&b, 1, 0.25, c.Percent, c.YLabel, y)
	for v := 0; v <= 10; v += 2 {
		xv := x0 + (x1-x0)*float64(v)/10
		fmt.Fprintf(&b, `<text x="%s" y="%d" font-size="11" text-anchor="middle">%s</text>`,
			f(x(xv)), chartH-padB+14, tickLabel(xv, false))
	}
	fmt.Fprintf(&b, `<text x="%s" y="%d" font-size="12" text-anchor="middle">%s</text>`+"\n",
		f(float64(padL)+plotW/2), chartH-8, esc(c.XLabel))
	for i, m := range c.Marks {
		// Labels are stacked at the foot of the plot, where P/R/F1 curves seldom run, so that two close
		// marks (the default and the best threshold) stay legible.
		fmt.Fprintf(&b, `<line class="mark" x1="%s" x2="%s" y1="%d" y2="%d" stroke="#555" stroke-dasharray="4 3"/><text x="%s" y="%d" font-size="11">%s</text>`+"\n",
			f(x(m.X)), f(x(m.X)), padT, chartH-padB, f(x(m.X)+4), chartH-padB-6-13*i, esc(m.Label))
	}
	for i, s := range c.Series {
		var d strings.Builder
		pen := false
		for k, v := range s.Y {
			if k >= len(c.X) || math.IsNaN(v) {
				pen = false
				continue
			}
			if pen {
				d.WriteString("L")
			} else {
				d.WriteString("M")
			}
			d.WriteString(f(x(c.X[k])) + " " + f(y(math.Max(0, math.Min(1, v)))))
			pen = true
		}
		fmt.Fprintf(&b, `<path d="%s" stroke="%s" stroke-width="2" fill="none"><title>%s</title></path>`+"\n",
			d.String(), palette[i%len(palette)], esc(s.Name))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#555"/>`, padL, chartW-padR, f(y(0)), f(y(0)))
	b.WriteString("</svg>")
	return template.HTML(b.String())
}
