package training

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLogEvery: a train row (mean loss, learning rate, speed) every train.log_every steps and at
// each evaluation, in metrics.jsonl and metrics.csv; 0 logs at evaluations only.
func TestLogEvery(t *testing.T) {
	for _, tc := range []struct {
		every int
		want  []float64 // steps of the train rows
	}{
		{0, []float64{10, 20, 30, 32}},
		{4, []float64{4, 8, 10, 12, 16, 20, 24, 28, 30, 32}},
	} {
		dir := t.TempDir()
		loop := toyLoop()
		loop.EvalEvery, loop.LogEvery = 10, tc.every
		o, _ := toyOptions(t, dir, loop)
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		rows, err := readMetrics(filepath.Join(dir, MetricsFile))
		if err != nil {
			t.Fatal(err)
		}
		var steps []float64
		for _, r := range rows {
			if r["split"] == "train" {
				steps = append(steps, r["step"].(float64))
				if _, ok := r["loss"].(float64); !ok {
					t.Errorf("log_every %d: train row %v has no loss", tc.every, r)
				}
				if _, ok := r["lr"].(float64); !ok {
					t.Errorf("log_every %d: train row %v has no lr", tc.every, r)
				}
			}
		}
		if !slices.Equal(steps, tc.want) {
			t.Errorf("log_every %d: train rows at %v, want %v", tc.every, steps, tc.want)
		}
		f, err := os.Open(filepath.Join(dir, MetricsCSVFile))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(recs) != len(rows)+1 || !slices.Equal(recs[0][:3], []string{"split", "step", "epoch"}) ||
			!slices.Contains(recs[0], "loss") || !slices.Contains(recs[0], "lr") {
			t.Errorf("log_every %d: metrics.csv %d records (want %d), header %v, err %v", tc.every, len(recs), len(rows)+1, recs[0], err)
		}
	}
}
