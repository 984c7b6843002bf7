// Package plot draws simple line charts to PNG with the standard library only (image, image/png):
// axes with numeric ticks, one or more panels, a legend, and a built-in 5x7 bitmap font. It is
// used for training curves (model/training), where a dependency on a plotting library would be
// out of proportion.
//
// # Example
//
//	chart := plot.Chart{Panels: []plot.Panel{{
//		Title:  "loss",
//		Series: []plot.Series{{Name: "train", X: steps, Y: losses}},
//	}}}
//	err := chart.WritePNG("curves.png")
package plot

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strings"
	"unicode"

	"github.com/tracksum/tracksum/internal/atomicio"
)

// Series is one line: points (X[i], Y[i]); NaN values are skipped.
type Series struct {
	Name string
	X, Y []float64
}

// Panel is one chart with its own axes.
type Panel struct {
	Title  string
	XLabel string
	Series []Series
	// Marks are vertical lines across the plot at an x value, labelled (e.g. the best step).
	Marks []Mark
}

// Mark is a labelled vertical line.
type Mark struct {
	X     float64
	Label string
}

// Chart stacks panels vertically.
type Chart struct {
	// Width and PanelHeight in pixels; 720 and 300 when zero.
	Width, PanelHeight int
	Panels             []Panel
}

// palette colours the series of a panel in order.
var palette = []color.RGBA{
	{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {255, 127, 14, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
}

// WritePNG renders the chart and writes it to path atomically.
func (c Chart) WritePNG(path string) error {
	var buf bytes.Buffer
	if err := c.Encode(&buf); err != nil {
		return err
	}
	return atomicio.WriteFile(path, buf.Bytes(), 0o644)
}

// Encode renders the chart as PNG to w.
func (c Chart) Encode(w io.Writer) error {
	if len(c.Panels) == 0 {
		return fmt.Errorf("plot: no panels")
	}
	width, ph := c.Width, c.PanelHeight
	if width == 0 {
		width = 720
	}
	if ph == 0 {
		ph = 300
	}
	img := image.NewRGBA(image.Rect(0, 0, width, ph*len(c.Panels)))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	// One right margin for every panel, wide enough for the longest legend, so that the panels'
	// x axes line up.
	right := 20
	for _, p := range c.Panels {
		for _, s := range p.Series {
			right = max(right, 6*len(s.Name)+36)
		}
	}
	for i, p := range c.Panels {
		drawPanel(img, image.Rect(0, i*ph, width, (i+1)*ph), p, right)
	}
	return png.Encode(w, img)
}

// drawPanel draws p in r; the legend sits in the right margin, never over the lines.
func drawPanel(img *image.RGBA, r image.Rectangle, p Panel, right int) {
	const left, top, bottom = 70, 28, 40
	area := image.Rect(r.Min.X+left, r.Min.Y+top, r.Max.X-right, r.Max.Y-bottom)
	black := color.RGBA{0, 0, 0, 255}
	grey := color.RGBA{225, 225, 225, 255}
	drawText(img, r.Min.X+left, r.Min.Y+8, p.Title, black)
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range p.Series {
		for i := range min(len(s.X), len(s.Y)) {
			if math.IsNaN(s.X[i]) || math.IsNaN(s.Y[i]) {
				continue
			}
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
		}
	}
	for _, m := range p.Marks {
		if !math.IsNaN(m.X) && !math.IsInf(xmin, 0) {
			xmin, xmax = math.Min(xmin, m.X), math.Max(xmax, m.X)
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax, ymin, ymax = 0, 1, 0, 1
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	if ymax == ymin {
		ymax, ymin = ymax+0.5, ymin-0.5
	}
	pad := (ymax - ymin) * 0.05
	ymin, ymax = ymin-pad, ymax+pad
	px := func(x float64) int {
		return area.Min.X + int(math.Round((x-xmin)/(xmax-xmin)*float64(area.Dx()-1)))
	}
	py := func(y float64) int {
		return area.Max.Y - 1 - int(math.Round((y-ymin)/(ymax-ymin)*float64(area.Dy()-1)))
	}
	for _, t := range ticks(ymin, ymax, 5) {
		y := py(t)
		drawLine(img, area.Min.X, y, area.Max.X-1, y, grey)
		label := formatTick(t)
		drawText(img, area.Min.X-6-6*len(label), y-3, label, black)
	}
	for _, t := range ticks(xmin, xmax, 6) {
		x := px(t)
		drawLine(img, x, area.Min.Y, x, area.Max.Y-1, grey)
		label := formatTick(t)
		drawText(img, x-3*len(label), area.Max.Y+6, label, black)
	}
	if p.XLabel != "" {
		drawText(img, area.Max.X-6*len(p.XLabel), area.Max.Y+20, p.XLabel, black)
	}
	drawLine(img, area.Min.X, area.Max.Y-1, area.Max.X-1, area.Max.Y-1, black)
	drawLine(img, area.Min.X, area.Min.Y, area.Min.X, area.Max.Y-1, black)
	markCol := color.RGBA{110, 110, 110, 255}
	for _, m := range p.Marks {
		if math.IsNaN(m.X) {
			continue
		}
		x := px(m.X)
		for y := area.Min.Y; y < area.Max.Y; y += 6 { // dashed
			drawLine(img, x, y, x, min(y+3, area.Max.Y-1), markCol)
		}
		drawText(img, min(x+3, area.Max.X-6*len(m.Label)), area.Min.Y+2, m.Label, markCol)
	}
	lx := area.Max.X + 10
	for i, s := range p.Series {
		col := palette[i%len(palette)]
		prevOK := false
		var x0, y0 int
		for j := range min(len(s.X), len(s.Y)) {
			if math.IsNaN(s.X[j]) || math.IsNaN(s.Y[j]) {
				prevOK = false
				continue
			}
			x, y := px(s.X[j]), py(s.Y[j])
			if prevOK {
				drawLine(img, x0, y0, x, y, col)
			}
			fillRect(img, x-1, y-1, 3, 3, col)
			x0, y0, prevOK = x, y, true
		}
		// Legend, right of the plot area.
		fillRect(img, lx, area.Min.Y+6+12*i, 10, 3, col)
		drawText(img, lx+14, area.Min.Y+3+12*i, s.Name, black)
	}
}

// ticks returns about n round values covering [lo, hi].
func ticks(lo, hi float64, n int) []float64 {
	span := hi - lo
	step := math.Pow(10, math.Floor(math.Log10(span/float64(n))))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(step*m) <= float64(n) {
			step *= m
			break
		}
	}
	var out []float64
	for t := math.Ceil(lo/step) * step; t <= hi+step*1e-9; t += step {
		out = append(out, t)
	}
	return out
}

func formatTick(v float64) string {
	if v == 0 {
		return "0"
	}
	a := math.Abs(v)
	switch {
	case a >= 1e5 || a < 1e-3:
		return strings.Replace(fmt.Sprintf("%.0e", v), "e-0", "e-", 1)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		s := fmt.Sprintf("%.3f", v)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		return s
	}
}

func set(img *image.RGBA, x, y int, c color.RGBA) {
	if image.Pt(x, y).In(img.Rect) {
		img.SetRGBA(x, y, c)
	}
}

func fillRect(img *image.RGBA, x, y, w, h int, c color.RGBA) {
	for i := range w {
		for j := range h {
			set(img, x+i, y+j, c)
		}
	}
}

// drawLine draws with Bresenham's algorithm.
func drawLine(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		set(img, x0, y0, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func drawText(img *image.RGBA, x, y int, s string, c color.RGBA) {
	for _, r := range s {
		g, ok := glyphs[unicode.ToUpper(r)]
		if !ok {
			g = glyphs['?']
		}
		for row, line := range g {
			for col, ch := range line {
				if ch == '#' {
					set(img, x+col, y+row, c)
				}
			}
		}
		x += 6
	}
}

func abs(a int) int {
	if a < 0 {
		return -a
	}
	return a
}

func sign(a int) int {
	switch {
	case a < 0:
		return -1
	case a > 0:
		return 1
	}
	return 0
}
