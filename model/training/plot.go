package training

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/tracksum/tracksum/internal/plot"
)

// WritePlot draws the curves of a metrics.jsonl file into a PNG: train and dev loss against the
// step, then the dev metrics that lie in [0, 1] (F1, precision, recall, accuracy, AUC, ...), the
// selection metric first.
func WritePlot(metricsPath, pngPath, selectMetric string) error {
	f, err := os.Open(metricsPath)
	if err != nil {
		return err
	}
	defer f.Close()
	type pts struct{ x, y []float64 }
	series := map[string]*pts{}
	add := func(name string, x, y float64) {
		s := series[name]
		if s == nil {
			s = &pts{}
			series[name] = s
		}
		s.x, s.y = append(s.x, x), append(s.y, y)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return fmt.Errorf("%s:%d: %w", metricsPath, line, err)
		}
		split, _ := row["split"].(string)
		step, _ := row["step"].(float64)
		for k, v := range row {
			y, ok := v.(float64)
			if !ok || k == "step" || k == "epoch" || math.IsNaN(y) {
				continue
			}
			add(split+" "+k, step, y)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", metricsPath, err)
	}
	toSeries := func(names []string) []plot.Series {
		var out []plot.Series
		for _, n := range names {
			if s := series[n]; s != nil {
				out = append(out, plot.Series{Name: n, X: s.x, Y: s.y})
			}
		}
		return out
	}
	var unit []string
	for n, s := range series {
		if len(n) < 4 || n[:4] != "dev " || n == "dev loss" {
			continue
		}
		if slices.IndexFunc(s.y, func(v float64) bool { return v < 0 || v > 1 }) < 0 {
			unit = append(unit, n)
		}
	}
	slices.Sort(unit)
	if i := slices.Index(unit, "dev "+selectMetric); i > 0 {
		first := unit[i]
		rest := slices.Delete(slices.Clone(unit), i, i+1)
		unit = append([]string{first}, rest...)
	}
	chart := plot.Chart{Panels: []plot.Panel{
		{Title: "loss", XLabel: "step", Series: toSeries([]string{"train loss", "dev loss"})},
		{Title: "dev metrics", XLabel: "step", Series: toSeries(unit)},
	}}
	return chart.WritePNG(pngPath)
}
