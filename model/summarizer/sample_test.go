package summarizer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/textmetrics/rouge"
)

func TestMain(m *testing.M) { os.Exit(preparetest.Main(m)) }

// TestTinyConfigLearnsSample trains the tiny profile's summarizer on the built-in synthetic sample
// and checks that its dev ROUGE-L is well above a constant guess (the most frequent training
// summary), then loads the checkpoint and summarizes a dev example through the inference path.
func TestTinyConfigLearnsSample(t *testing.T) {
	if testing.Short() {
		t.Skip("prepares the sample and trains for ~45 s; skipped with -short")
	}
	cfg, err := config.ReadFile(filepath.Join("..", "..", "configs", "tiny.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	prep, out := preparetest.Dir(t, cfg), filepath.Join(t.TempDir(), "summarizer")
	_, rep, err := Train(context.Background(), cfg, prep, out, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, checkpoint.BestDir, checkpoint.BestMetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var best map[string]float64
	if err := json.Unmarshal(b, &best); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	// The returned report, also in report.json, holds the best dev evaluation.
	var saved Report
	if err := atomicio.ReadJSON(filepath.Join(out, checkpoint.ReportFile), &saved, true); err != nil {
		t.Fatal(err)
	}
	if rep.Dev["rougeL"] != best["rougeL"] || saved.Dev["rougeL"] != best["rougeL"] || saved.BestStep != rep.BestStep {
		t.Errorf("report dev rougeL %v (saved %v, step %d/%d), best/metrics.json %v", rep.Dev["rougeL"], saved.Dev["rougeL"], saved.BestStep, rep.BestStep, best["rougeL"])
	}

	// Chance level: the most frequent training summary predicted for every dev example.
	counts := map[string]int{}
	for row, err := range dataset.ReadShards[dataset.SummarizerRow](prep, dataset.TaskSummarizer, dataset.SplitTrain) {
		if err != nil {
			t.Fatal(err)
		}
		counts[row.Summary]++
	}
	guess, n := "", 0
	for s, c := range counts {
		if c > n || (c == n && s < guess) {
			guess, n = s, c
		}
	}
	scorer := rouge.New(rouge.Options{Stem: true})
	var chance float64
	var dev []dataset.SummarizerRow
	for row, err := range dataset.ReadShards[dataset.SummarizerRow](prep, dataset.TaskSummarizer, dataset.SplitDev) {
		if err != nil {
			t.Fatal(err)
		}
		dev = append(dev, row)
		chance += scorer.Score(row.Summary, guess).RL.F
	}
	chance /= float64(len(dev))
	t.Logf("dev ROUGE-L F: model %.3f, constant guess %.3f", best["rougeL"], chance)
	if best["rougeL"] < 2*chance || best["rougeL"] < 0.25 {
		t.Errorf("dev ROUGE-L F = %.3f, want >= max(0.25, 2 x chance %.3f)", best["rougeL"], chance)
	}

	s, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Summarize([]Request{{Aspect: dev[0].Aspect, Cited: dev[0].CitedSentences, Document: dev[0].Document}}, s.DecodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reference: %s\nsummary:   %s", dev[0].Summary, got[0])
	if got[0] == "" {
		t.Errorf("empty summary for %s/%s", dev[0].PMID, dev[0].Aspect)
	}

	// The shapes of an XLA backend (powers of two: padded rows, sources and caches) write the same
	// summaries as the Go backend's, on every dev example, with the checkpoint's decoding options
	// (beam, bonuses, word rule).
	pow2, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	pow2.Net.graph.pow2 = true
	reqs := make([]Request, len(dev))
	for i, row := range dev {
		reqs[i] = Request{Aspect: row.Aspect, Cited: row.CitedSentences, Document: row.Document}
	}
	want, err := s.Summarize(reqs, s.DecodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	padded, err := pow2.Summarize(reqs, pow2.DecodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if padded[i] != want[i] {
			t.Errorf("%s/%s: with powers-of-two shapes %q, else %q", dev[i].PMID, dev[i].Aspect, padded[i], want[i])
		}
	}
	t.Logf("%d dev summaries, powers-of-two shapes or not: %d differ", len(want), countDiff(want, padded))
}

// countDiff counts the positions where a and b differ.
func countDiff(a, b []string) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}
