package training

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/tracksum/tracksum/internal/atomicio"
)

// The chart is 900 pixels wide and 300 per panel in the PNG, at 96 dots per inch; the SVG has the
// same size in inches (675 x 675 points for three panels), so that both lay out alike.
const (
	plotDPI         = 96
	plotWidthPx     = 900
	plotPanelHeight = 300
)

// plotPalette colours the series of a panel in order: matplotlib's tab10, the colours the earlier
// curves.png used, so that a curve keeps its colour in plots made before and after.
var plotPalette = []color.RGBA{
	{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {255, 127, 14, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
}

// curve is one named series of a metrics.jsonl file: its values against the step.
type curve struct {
	name string
	xy   plotter.XYs
}

// curvePanel is one panel of the chart: a title and the curves it draws, in legend order.
type curvePanel struct {
	title  string
	curves []curve
}

// WritePlot draws the curves of a metrics.jsonl file into pngPath and, the same chart, into
// svgPath (for papers and slides, where a bitmap blurs): train and dev loss against the step, the
// dev metrics that lie in [0, 1] (F1, precision, recall, accuracy, AUC, ...), the selection metric
// first, and the learning rate; a dashed line marks the best step (bestStep < 0: none).
func WritePlot(metricsPath, pngPath, svgPath, selectMetric string, bestStep int) error {
	rows, err := readMetrics(metricsPath)
	if err != nil {
		return err
	}
	panels := curvePanels(rows, selectMetric)
	png, svg, err := renderCurves(panels, bestStep)
	if err != nil {
		return fmt.Errorf("%s: %w", metricsPath, err)
	}
	if err := atomicio.WriteFile(pngPath, png, 0o644); err != nil {
		return err
	}
	return atomicio.WriteFile(svgPath, svg, 0o644)
}

// curvePanels sorts the numeric columns of the rows into the chart's three panels: loss, the dev
// metrics in [0, 1] (timings are not scores), the learning rate.
func curvePanels(rows []map[string]any, selectMetric string) []curvePanel {
	series := map[string]plotter.XYs{}
	for _, row := range rows {
		split, _ := row["split"].(string)
		step, _ := row["step"].(float64)
		for k, v := range row {
			y, ok := v.(float64)
			if !ok || k == "step" || k == "epoch" || math.IsNaN(y) || math.IsInf(y, 0) {
				continue
			}
			name := split + " " + k
			series[name] = append(series[name], plotter.XY{X: step, Y: y})
		}
	}
	pick := func(names []string) []curve {
		var out []curve
		for _, n := range names {
			if s := series[n]; s != nil {
				out = append(out, curve{name: n, xy: s})
			}
		}
		return out
	}
	var unit []string
	for n, s := range series {
		if !strings.HasPrefix(n, "dev ") || n == "dev loss" || strings.HasSuffix(n, "_seconds") || strings.HasSuffix(n, "_per_sec") {
			continue
		}
		if slices.IndexFunc(s, func(p plotter.XY) bool { return p.Y < 0 || p.Y > 1 }) < 0 {
			unit = append(unit, n)
		}
	}
	slices.Sort(unit)
	if i := slices.Index(unit, "dev "+selectMetric); i > 0 {
		first := unit[i]
		rest := slices.Delete(slices.Clone(unit), i, i+1)
		unit = append([]string{first}, rest...)
	}
	return []curvePanel{
		{"loss", pick([]string{"train loss", "dev loss"})},
		{"dev metrics", pick(unit)},
		{"learning rate", pick([]string{"train lr"})},
	}
}

// renderCurves draws the panels stacked, one above the other with their x axes aligned, each with
// its legend in a right-hand column shared by all (a legend inside the axes hides the curves it
// names), and returns the chart as PNG and as SVG.
func renderCurves(panels []curvePanel, bestStep int) (pngBytes, svgBytes []byte, err error) {
	plots := make([]*plot.Plot, len(panels))
	legends := make([]plot.Legend, len(panels))
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for i, pn := range panels {
		if plots[i], legends[i], err = curvePlot(pn, bestStep); err != nil {
			return nil, nil, err
		}
		xmin, xmax = min(xmin, plots[i].X.Min), max(xmax, plots[i].X.Max)
	}
	// One step range for every panel, so that a step sits at the same place in all three (the dev
	// rows start at the first evaluation, the train rows earlier).
	if xmin <= xmax {
		for _, p := range plots {
			p.X.Min, p.X.Max = xmin, xmax
		}
	}
	w := vg.Length(plotWidthPx) * vg.Inch / plotDPI
	h := vg.Length(plotPanelHeight*len(panels)) * vg.Inch / plotDPI
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(plotDPI))
	drawCurves(draw.New(img), plots, legends)
	var pb bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&pb); err != nil {
		return nil, nil, err
	}
	svg := vgsvg.NewWith(vgsvg.UseWH(w, h))
	drawCurves(draw.New(svg), plots, legends)
	var sb bytes.Buffer
	if _, err := svg.WriteTo(&sb); err != nil {
		return nil, nil, err
	}
	return pb.Bytes(), sb.Bytes(), nil
}

// drawCurves lays the plots and their legends out on dc.
func drawCurves(dc draw.Canvas, plots []*plot.Plot, legends []plot.Legend) {
	dc.SetColor(color.White) // the SVG has no background of its own
	dc.Fill(dc.Rectangle.Path())
	var legendW vg.Length
	for i := range legends {
		legendW = max(legendW, legends[i].Rectangle(dc).Size().X)
	}
	const gap = vg.Length(8)
	plotArea, legendArea := dc, dc
	plotArea.Max.X -= legendW + 2*gap
	legendArea.Min.X = plotArea.Max.X + gap
	rows := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		rows[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: 4, PadBottom: 4, PadLeft: 4, PadY: 8}
	for i, row := range plot.Align(rows, tiles, plotArea) {
		plots[i].Draw(row[0])
		lc := legendArea
		lc.Min.Y, lc.Max.Y = row[0].Min.Y, plots[i].DataCanvas(row[0]).Max.Y
		legends[i].Draw(lc)
	}
}

// curvePlot builds one panel: a line with a dot at each logged step per curve, a grid, the dashed
// best-step line, and the panel's legend (drawn apart, see renderCurves).
func curvePlot(pn curvePanel, bestStep int) (*plot.Plot, plot.Legend, error) {
	p := plot.New()
	p.Title.Text = pn.title
	p.X.Label.Text = "step"
	for _, s := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.X.Tick.Label, &p.Y.Label.TextStyle, &p.Y.Tick.Label} {
		s.Font.Variant = "Sans"
	}
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Tick.Marker, p.Y.Tick.Marker = roundTicks{6}, roundTicks{5}
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	legend.TextStyle.Font.Variant = "Sans"
	legend.TextStyle.Font.Size = vg.Points(10)
	legend.Top, legend.Left = true, true
	for i, c := range pn.curves {
		line, dots, err := plotter.NewLinePoints(c.xy)
		if err != nil {
			return nil, legend, fmt.Errorf("curve %q: %w", c.name, err)
		}
		col := plotPalette[i%len(plotPalette)]
		line.Color, dots.Color = col, col
		dots.Shape, dots.Radius = draw.CircleGlyph{}, vg.Points(1.5)
		p.Add(line, dots)
		legend.Add(c.name, line, dots)
	}
	if bestStep >= 0 && len(pn.curves) > 0 {
		m := bestMark{x: float64(bestStep), style: draw.LineStyle{
			Color: color.RGBA{110, 110, 110, 255}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)},
		}}
		p.Add(m)
		legend.Add(fmt.Sprintf("best %d", bestStep), m)
	}
	return p, legend, nil
}

// roundTicks places about n ticks at round values (1, 2 or 5 times a power of ten) across the
// axis: gonum's default aims at three, too few to read a step or a score off the chart.
type roundTicks struct{ n int }

// Ticks returns the labelled ticks in [lo, hi] (plot.Ticker).
func (r roundTicks) Ticks(lo, hi float64) []plot.Tick {
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/float64(r.n))))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(step*m) <= float64(r.n) {
			step *= m
			break
		}
	}
	// Labels with as many decimals as the step has, computed from integer multiples so that
	// 3 x 0.2 prints 0.6.
	decimals := max(0, -int(math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for k := math.Ceil(lo / step); k*step <= hi+step*1e-9; k++ {
		v := k * step
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
	}
	return ticks
}

// bestMark is the dashed vertical line at the best step. It spans the data area whatever the y
// range, which a plotter.Line could only do once the range is known; it widens the x range to
// include its step and leaves the y range to the curves.
type bestMark struct {
	x     float64
	style draw.LineStyle
}

// Plot draws the line across c (plot.Plotter).
func (m bestMark) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(m.x)
	c.StrokeLine2(m.style, x, c.Min.Y, x, c.Max.Y)
}

// DataRange returns the step as the x range and an empty y range (plot.DataRanger).
func (m bestMark) DataRange() (xmin, xmax, ymin, ymax float64) {
	return m.x, m.x, math.Inf(1), math.Inf(-1)
}

// Thumbnail draws the legend's sample of the line (plot.Thumbnailer).
func (m bestMark) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(m.style, c.Min.X, y, c.Max.X, y)
}

// readMetrics reads the rows of a metrics.jsonl file.
func readMetrics(path string) ([]map[string]any, error) {
	var rows []map[string]any
	err := atomicio.ReadJSONL(path, atomicio.JSONLOptions{}, func(_ int, row map[string]any) error {
		rows = append(rows, row)
		return nil
	})
	return rows, err
}

// WriteCSV writes the rows of a metrics.jsonl file as CSV (pandas, spreadsheets): columns split,
// step, epoch, then every other key in alphabetical order; a key a row lacks is an empty cell.
func WriteCSV(metricsPath, csvPath string) error {
	rows, err := readMetrics(metricsPath)
	if err != nil {
		return err
	}
	cols := []string{"split", "step", "epoch"}
	seen := map[string]bool{"split": true, "step": true, "epoch": true}
	var rest []string
	for _, row := range rows {
		for k := range row {
			if !seen[k] {
				seen[k] = true
				rest = append(rest, k)
			}
		}
	}
	slices.Sort(rest)
	cols = append(cols, rest...)
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(cols); err != nil {
		return err
	}
	for _, row := range rows {
		rec := make([]string, len(cols))
		for i, c := range cols {
			switch v := row[c].(type) {
			case nil:
			case float64:
				rec[i] = strconv.FormatFloat(v, 'g', -1, 64)
			default:
				rec[i] = fmt.Sprint(v)
			}
		}
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return atomicio.WriteFile(csvPath, buf.Bytes(), 0o644)
}
