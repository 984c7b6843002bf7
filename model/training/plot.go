package training

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/plot"
)

// WritePlot draws the curves of a metrics.jsonl file into a PNG: train and dev loss against the
// step, the dev metrics that lie in [0, 1] (F1, precision, recall, accuracy, AUC, ...), the
// selection metric first, and the learning rate; a dashed line marks the best step (bestStep < 0:
// none).
func WritePlot(metricsPath, pngPath, selectMetric string, bestStep int) error {
	rows, err := readMetrics(metricsPath)
	if err != nil {
		return err
	}
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
	for _, row := range rows {
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
		if len(n) < 4 || n[:4] != "dev " || n == "dev loss" || strings.HasSuffix(n, "_seconds") || strings.HasSuffix(n, "_per_sec") {
			continue // timings are not scores
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
	var marks []plot.Mark
	if bestStep >= 0 {
		marks = []plot.Mark{{X: float64(bestStep), Label: fmt.Sprintf("best %d", bestStep)}}
	}
	chart := plot.Chart{Width: 900, Panels: []plot.Panel{
		{Title: "loss", XLabel: "step", Series: toSeries([]string{"train loss", "dev loss"}), Marks: marks},
		{Title: "dev metrics", XLabel: "step", Series: toSeries(unit), Marks: marks},
		{Title: "learning rate", XLabel: "step", Series: toSeries([]string{"train lr"}), Marks: marks},
	}}
	return chart.WritePNG(pngPath)
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
