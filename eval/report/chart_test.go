package report

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/internal/golden"
)

// TestChartsGolden pins the SVG of each chart kind byte for byte: the page must be deterministic,
// and a change of layout should be a reviewed change of testdata/*.svg (go test ./eval/report
// -update rewrites them; open them in a browser to look).
func TestChartsGolden(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		desc, file string
		svg        string
	}{
		{"grouped bars with intervals and a missing value", "bars.svg", string(BarChart{
			Title: "Claims <by> aspect", YLabel: "%", Categories: []string{"all", "p", "i"}, YMax: 1, Percent: true,
			Series: []BarSeries{
				{Name: "precision", Values: []float64{0.5, 0.75, nan}, Low: []float64{0.4, 0.6, nan}, High: []float64{0.6, 0.9, nan}, Notes: []string{"(n=3)", "(n=2)", "(n=1)"}},
				{Name: "recall", Values: []float64{0.25, 1, 0}},
			},
		}.SVG())},
		{"bars with an automatic axis", "histogram.svg", string(BarChart{
			Title: "Histogram", YLabel: "% of the class", Categories: []string{"0.0", "", "0.5", ""}, Percent: true, Edges: "1.0",
			Series: []BarSeries{{Name: "cited", Values: []float64{0.1, 0.2, 0.3, 0.4}}, {Name: "not cited", Values: []float64{0.7, 0.2, 0.1, 0}}},
		}.SVG())},
		{"lines with gaps and marks", "lines.svg", string(LineChart{
			Title: "Sweep", XLabel: "threshold", YLabel: "%", Percent: true, X: []float64{0, 0.25, 0.5, 0.75, 1},
			Series: []LineSeries{{Name: "precision", Y: []float64{0.2, 0.4, 0.8, 1, nan}}, {Name: "recall", Y: []float64{1, 0.9, 0.5, 0.1, 0}}},
			Marks:  []Mark{{X: 0.5, Label: "0.5 (default)"}},
		}.SVG())},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			golden.Check(t, filepath.Join("testdata", tc.file), []byte(tc.svg+"\n"))
			if strings.Contains(tc.svg, "<by>") || strings.Contains(tc.svg, "http") {
				t.Error("chart text is not escaped, or the chart names a URL")
			}
			if n := strings.Count(tc.svg, "NaN"); n > 0 {
				t.Errorf("chart prints NaN %d times", n)
			}
		})
	}
}

func TestNiceMax(t *testing.T) {
	cases := []struct {
		v, top, step float64
	}{
		{0, 1, 0.25}, {1, 1, 0.25}, {0.37, 0.4, 0.1}, {0.61, 0.8, 0.2}, {0.9, 1, 0.25}, {7, 8, 2}, {130, 150, 50},
	}
	for _, c := range cases {
		if top, step := niceMax(c.v); math.Abs(top-c.top) > 1e-12 || math.Abs(step-c.step) > 1e-12 {
			t.Errorf("niceMax(%g) = %g, %g; want %g, %g", c.v, top, step, c.top, c.step)
		}
	}
}

// TestChartShapes checks what the goldens cannot say at a glance: one bar per defined value, a
// whisker per interval, a line broken at NaN.
func TestChartShapes(t *testing.T) {
	bars := string(BarChart{Categories: []string{"a", "b"}, Series: []BarSeries{
		{Name: "x", Values: []float64{0.5, math.NaN()}, Low: []float64{0.4, math.NaN()}, High: []float64{0.6, math.NaN()}},
		{Name: "y", Values: []float64{0.1, 0.2}},
	}}.SVG())
	if n := strings.Count(bars, "<rect x=") - 2; n != 3 { // minus the two legend swatches
		t.Errorf("%d bars, want 3", n)
	}
	if n := strings.Count(bars, "<path"); n != 1 {
		t.Errorf("%d whiskers, want 1", n)
	}
	lines := string(LineChart{X: []float64{0, 0.5, 1}, Series: []LineSeries{{Name: "p", Y: []float64{0.1, math.NaN(), 0.3}}}}.SVG())
	if !strings.Contains(lines, `d="M52.0 232.0M624.0 188.0"`) {
		t.Errorf("a NaN does not break the line:\n%s", lines)
	}
	if !bytes.Equal([]byte(bars), []byte(BarChart{Categories: []string{"a", "b"}, Series: []BarSeries{
		{Name: "x", Values: []float64{0.5, math.NaN()}, Low: []float64{0.4, math.NaN()}, High: []float64{0.6, math.NaN()}},
		{Name: "y", Values: []float64{0.1, 0.2}},
	}}.SVG())) {
		t.Error("the same chart renders to different bytes")
	}
}
