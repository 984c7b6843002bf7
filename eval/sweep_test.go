package eval

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/dataset"
)

func scoredPair(ref []int, scores ...float32) Pair {
	return Pair{Ref: dataset.Record{Instance: dataset.Instance{Indexes: ref}}, Pred: dataset.Record{Scores: scores}}
}

// TestSweepTrackerHandComputed checks the histogram and the sweep on a fixture small enough to
// count by hand: cited scores 0.95 and 0.55, uncited 0.4, 0.1, 0.6 and 0.2 (a negative reference
// contributes uncited sentences only), one prediction without Scores.
func TestSweepTrackerHandComputed(t *testing.T) {
	pairs := []Pair{
		scoredPair([]int{0, 2}, 0.95, 0.4, 0.55, 0.1),
		scoredPair(nil, 0.6, 0.2),
		scoredPair([]int{0}), // no Scores: not counted
	}
	ts := SweepTracker(pairs, 10, 100)
	if ts.Instances != 3 || ts.Scored != 2 || ts.Cited != 2 || ts.Uncited != 4 {
		t.Fatalf("counts: %d instances, %d scored, %d cited, %d uncited; want 3, 2, 2, 4", ts.Instances, ts.Scored, ts.Cited, ts.Uncited)
	}
	if want := []int{0, 0, 0, 0, 0, 1, 0, 0, 0, 1}; !slices.Equal(ts.HistCited, want) {
		t.Errorf("cited histogram %v, want %v", ts.HistCited, want)
	}
	if want := []int{0, 1, 1, 0, 1, 0, 1, 0, 0, 0}; !slices.Equal(ts.HistUncited, want) {
		t.Errorf("uncited histogram %v, want %v", ts.HistUncited, want)
	}
	nan := math.NaN()
	cases := []struct {
		desc      string
		k         int
		p, r, f1  float64
		threshold float64
	}{
		{"threshold 0 selects every sentence", 0, 2.0 / 6, 1, 0.5, 0},
		{"the default 0.5 drops 0.4, 0.1, 0.2", 50, 2.0 / 3, 1, 0.8, 0.5},
		{"0.7 keeps 0.95 only", 70, 1, 0.5, 2.0 / 3, 0.7},
		{"1 selects nothing: precision undefined", 100, nan, 0, 0, 1},
	}
	for _, c := range cases {
		got := []float64{ts.Thresholds[c.k], ts.Precision[c.k], ts.Recall[c.k], ts.F1[c.k]}
		want := []float64{c.threshold, c.p, c.r, c.f1}
		for i := range got {
			if !(math.IsNaN(got[i]) && math.IsNaN(want[i])) && math.Abs(got[i]-want[i]) > 1e-12 {
				t.Errorf("%s: threshold, P, R, F1 = %v, want %v", c.desc, got, want)
				break
			}
		}
	}
	// F1 0.8 holds from just above 0.4 up to 0.55: the best is its lowest threshold, 0.41.
	if b := ts.Best(); b != 41 {
		t.Errorf("best threshold index %d (F1 %v), want 41", b, ts.F1[b])
	}
	if none := SweepTracker(pairs[2:], 10, 100); none.Scored != 0 || none.Best() != -1 || !math.IsNaN(none.Recall[50]) {
		t.Errorf("no scores: %+v", none)
	}
}

// TestSweepAtThresholdMatchesExactCitations ties the sweep to the metrics: when every prediction
// cites exactly the sentences its tracker scored >= 0.5 (infer without grounding), the sweep's
// figures at 0.5 are the micro exact-citation precision and recall over the positive predictions.
func TestSweepAtThresholdMatchesExactCitations(t *testing.T) {
	refs, err := dataset.ReadRecordsFile("testdata/ref.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var preds []dataset.Record
	for i, r := range refs {
		p := dataset.Record{Instance: dataset.Instance{PMID: r.PMID, Aspect: r.Aspect, Summary: dataset.UnknownSummary}}
		for j := range r.Document {
			// A deterministic mix of hits, misses and false alarms.
			s := float32((i*7+j*3)%10) / 10
			if slices.Contains(r.Indexes, j) && (i+j)%3 != 0 {
				s = 0.5 + s/2
			}
			p.Scores = append(p.Scores, s)
			if s >= 0.5 {
				p.Indexes = append(p.Indexes, j)
			}
		}
		if len(p.Indexes) > 0 {
			p.Summary = "x"
		}
		preds = append(preds, p)
	}
	pairs, err := Join(refs, preds, false)
	if err != nil {
		t.Fatal(err)
	}
	ts := SweepTracker(pairs, 20, 100)
	var tp, sel, cited int
	for _, pr := range pairs {
		cited += len(pr.Ref.Indexes)
		sel += len(pr.Pred.Indexes)
		for _, j := range pr.Pred.Indexes {
			if slices.Contains(pr.Ref.Indexes, j) {
				tp++
			}
		}
	}
	if sel == 0 || tp == 0 || tp == cited {
		t.Fatalf("fixture too easy: %d selected, %d correct, %d cited", sel, tp, cited)
	}
	if p, r := float64(tp)/float64(sel), float64(tp)/float64(cited); math.Abs(ts.Precision[50]-p) > 1e-12 || math.Abs(ts.Recall[50]-r) > 1e-12 {
		t.Errorf("sweep at 0.5: P %v R %v, want %v %v", ts.Precision[50], ts.Recall[50], p, r)
	}
}

// TestPageTablesChartsNotes checks what report.html is built from on the test fixtures: one table
// per metric group with intervals, the charts, and the notes (exact-match columns equal to the
// credited ones, predictions with and without tracker scores).
func TestPageTablesChartsNotes(t *testing.T) {
	cfg := testConfig()
	cases := []struct {
		desc, pred string
		tables     []string
		figures    []string
		note       string
		probCards  int
	}{
		{"one prediction with Scores", "testdata/pred.jsonl",
			[]string{"t-claims", "t-citations", "t-citations-exact", "t-rouge"},
			[]string{"fig-claims", "fig-citations", "fig-histogram", "fig-sweep"},
			"Only 1 of the 9 predictions carry per-sentence tracker scores", 1},
		{"references as predictions: exact equals credited, no Scores", "testdata/ref.jsonl",
			[]string{"t-claims", "t-citations", "t-rouge"},
			[]string{"fig-claims", "fig-citations"},
			"citation_exact_precision, citation_exact_recall and citation_exact_f1 on every one of the 9 instances", 0},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			out, err := Evaluation(context.Background(), c.pred, "testdata/ref.jsonl", cfg.Eval, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := Page(out)
			var ids []string
			for _, tb := range p.Tables {
				ids = append(ids, tb.ID)
				if len(tb.Rows) != 2+len(out.Report.ByAspect) {
					t.Errorf("%s: %d rows, want all, positive refs and %d aspects", tb.ID, len(tb.Rows), len(out.Report.ByAspect))
				}
				for _, r := range tb.Rows {
					for _, cell := range r.Cells {
						if !strings.HasPrefix(cell.CI, "[") {
							t.Errorf("%s %s: cell %+v has no interval", tb.ID, r.Name, cell)
						}
					}
				}
			}
			if !slices.Equal(ids, c.tables) {
				t.Errorf("tables %v, want %v", ids, c.tables)
			}
			ids = nil
			for _, f := range p.Figures {
				ids = append(ids, f.ID)
			}
			if !slices.Equal(ids, c.figures) {
				t.Errorf("figures %v, want %v", ids, c.figures)
			}
			if notes := strings.Join(p.Notes, "\n"); !strings.Contains(notes, c.note) {
				t.Errorf("notes lack %q:\n%s", c.note, notes)
			}
			probs := 0
			for _, a := range p.Abstracts {
				for _, card := range a.Cards {
					if card.Probs != nil {
						probs++
					}
				}
			}
			if probs != c.probCards {
				t.Errorf("%d cards with tracker probabilities, want %d", probs, c.probCards)
			}
		})
	}
	// The interval shown is report.json's, in percent.
	out, err := Evaluation(context.Background(), "testdata/pred.jsonl", "testdata/ref.jsonl", cfg.Eval, nil)
	if err != nil {
		t.Fatal(err)
	}
	ci := out.Report.Overall.CI[ClaimPrecision]
	if got, want := Page(out).Tables[0].Rows[0].Cells[0].CI, fmt.Sprintf("[%.1f, %.1f]", 100*ci[0], 100*ci[1]); got != want {
		t.Errorf("claims table, all, P: interval %q, want %q", got, want)
	}
}

// TestSweepFigureMarks: 0.5 is marked, and the best-F1 threshold beside it only when it does
// better (the demo's tracker separates perfectly from 0.32 to 0.5: one mark, not two saying the
// same).
func TestSweepFigureMarks(t *testing.T) {
	cases := []struct {
		desc  string
		pairs []Pair
		want  []string
		not   string
	}{
		{"0.5 ties the best F1", []Pair{scoredPair([]int{0}, 0.9, 0.1, 0.3)}, []string{"0.5 (default, best F1)", "No threshold gives a higher F1."}, "best F1 at"},
		{"a lower threshold does better", []Pair{scoredPair([]int{0, 1}, 0.9, 0.45, 0.1)}, []string{"0.5 (default)", "best F1 at 0.11", "Best F1 at 0.11: P 100.0, R 100.0, F1 100.0."}, "default, best"},
	}
	for _, c := range cases {
		ts := SweepTracker(c.pairs, 20, 100)
		f := sweepFigure(&ts)
		page := string(f.SVG) + f.Caption
		for _, w := range c.want {
			if !strings.Contains(page, w) {
				t.Errorf("%s: the sweep lacks %q:\n%s", c.desc, w, f.Caption)
			}
		}
		if strings.Contains(page, c.not) {
			t.Errorf("%s: the sweep says %q", c.desc, c.not)
		}
	}
}
