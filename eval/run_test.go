package eval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/eval/judge"
	"github.com/tracksum/tracksum/eval/judge/llmtest"
	"github.com/tracksum/tracksum/eval/stats"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/textmetrics/rouge"
)

func testConfig() *config.Config {
	cfg := config.Default()
	cfg.Eval.Bootstrap.Resamples = 200
	return &cfg
}

func TestAggregateHandComputed(t *testing.T) {
	mk := func(cr, cp float64, num, den int, neg bool) Result {
		var r Result
		r.RefNegative = neg
		r.Values[ClaimRecall], r.Values[ClaimPrecision] = cr, cp
		r.Values[ClaimF1] = F1(cr, cp)
		r.Counts[ClaimRecall] = Ratio{num, den}
		r.Counts[ClaimPrecision] = Ratio{num, den}
		return r
	}
	res := []Result{mk(1, 0.5, 1, 2, false), mk(0, 1, 0, 1, false), mk(0.5, 0.5, 2, 4, true)}
	g := Aggregate(res, false, BootstrapOptions{Resamples: 500, Seed: 7, Level: 0.95})
	if g.N != 3 || !approx(g.Mean[ClaimRecall], 0.5) || !approx(g.Mean[ClaimPrecision], 2.0/3) {
		t.Fatalf("means %v %v", g.Mean[ClaimRecall], g.Mean[ClaimPrecision])
	}
	// F1 is the harmonic mean of the averaged recall and precision, not the mean of the F1s.
	if want := F1(0.5, 2.0/3); !approx(g.Mean[ClaimF1], want) {
		t.Errorf("claim_f1 = %v, want %v", g.Mean[ClaimF1], want)
	}
	// Micro: (1+0+2)/(2+1+4).
	if !approx(g.Micro[ClaimRecall], 3.0/7) {
		t.Errorf("micro claim recall = %v, want 3/7", g.Micro[ClaimRecall])
	}
	if !math.IsNaN(g.Micro[Rouge1F]) {
		t.Errorf("ROUGE has no micro figure, got %v", g.Micro[Rouge1F])
	}
	for _, m := range []Metric{ClaimRecall, ClaimPrecision, ClaimF1} {
		if lo, hi := g.CI[m][0], g.CI[m][1]; !(lo <= g.Mean[m] && g.Mean[m] <= hi) {
			t.Errorf("%s: CI [%v, %v] does not contain %v", m, lo, hi, g.Mean[m])
		}
	}
	empty := Aggregate(nil, false, BootstrapOptions{Resamples: 10, Seed: 1, Level: 0.95})
	b, err := json.Marshal(empty)
	if err != nil || !strings.Contains(string(b), `"claim_recall":null`) {
		t.Errorf("empty group JSON = %s, %v", b, err)
	}
}

func TestRunWritesDeterministicOutputs(t *testing.T) {
	ctx := context.Background()
	var outs [2][]byte
	var stdout bytes.Buffer
	dir := t.TempDir()
	for i := range outs {
		stdout.Reset()
		d := filepath.Join(dir, "run", string(rune('a'+i)))
		if _, err := Run(ctx, Options{Pred: "testdata/pred.jsonl", Ref: "testdata/ref.jsonl", Out: d, Config: testConfig(), Stdout: &stdout}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(d, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = b
		// The tables end by saying where the report went (issue 37 item 6).
		if want := "report: " + filepath.Join(d, "report.html"); !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout does not say %q", want)
		}
		for _, name := range []string{"instances.jsonl", "report.html", "config.yaml"} {
			if _, err := os.Stat(filepath.Join(d, name)); err != nil {
				t.Errorf("missing %s: %v", name, err)
			}
		}
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("report.json differs between two runs on the same inputs and seed")
	}
	var rep map[string]json.RawMessage
	if err := json.Unmarshal(outs[0], &rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"overall", "positive", "by_aspect", "settings"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("report.json has no %q", k)
		}
	}
	var overall map[string]any
	json.Unmarshal(rep["overall"], &overall)
	for _, k := range []string{"n", "claim_recall", "claim_precision", "claim_f1", "citation_recall", "citation_precision",
		"citation_f1", "citation_exact_precision", "citation_exact_recall", "citation_exact_f1", "rouge1_f", "rouge2_f",
		"rougeL_f", "micro", "ci"} {
		if _, ok := overall[k]; !ok {
			t.Errorf("overall has no %q", k)
		}
	}
	if _, ok := overall["phrase_recall"]; ok {
		t.Error("phrase metrics reported without phrases in the references")
	}
	if overall["n"].(float64) != 9 {
		t.Errorf("n = %v, want 9", overall["n"])
	}
	var byAspect map[string]map[string]any
	json.Unmarshal(rep["by_aspect"], &byAspect)
	if len(byAspect) != 6 {
		t.Errorf("by_aspect has %d aspects, want 6 (d i m o p s)", len(byAspect))
	}
	for _, want := range []string{"Evaluation (%", "claim_recall", "Aspect-wise", "Avg.", "Pos."} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, stdout.String())
		}
	}
	f, err := os.Open(filepath.Join(dir, "run", "a", "instances.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var l InstanceLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("instances.jsonl line %d: %v", n+1, err)
		}
		if _, ok := l.Scores["claim_f1"]; !ok {
			t.Errorf("instances.jsonl line %d has no claim_f1", n+1)
		}
	}
	if n != 9 {
		t.Errorf("instances.jsonl has %d lines, want 9", n)
	}
}

func TestRunPhrasesReported(t *testing.T) {
	out, err := Evaluation(context.Background(), "testdata/pred_phrases.jsonl", "testdata/ref_phrases.jsonl", testConfig().Eval, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReportJSON(out.Report)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"phrase_recall": 0.875`, `"phrase_precision"`, `"phrase_f1"`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("report.json lacks %s", k)
		}
	}
}

func TestCompare(t *testing.T) {
	cfg := testConfig().Eval
	c, err := Compare(context.Background(), "testdata/ref.jsonl", "testdata/pred.jsonl", "testdata/ref.jsonl", cfg)
	if err != nil {
		t.Fatal(err)
	}
	// One row per metric, then the sentence-level micro F1.
	if c.N != 9 || len(c.Metrics) != int(RougeLsumF)+2 || c.Metrics[len(c.Metrics)-1].Metric != SentenceMicroF1 {
		t.Fatalf("n %d, %d metrics", c.N, len(c.Metrics))
	}
	for _, d := range c.Metrics {
		if d.A != 1 {
			t.Errorf("%s: the references against themselves score %v, want 1", d.Metric, d.A)
		}
		if !(d.P > 0 && d.P <= 1) || !approx(d.Diff, d.A-d.B) {
			t.Errorf("%s: diff %v p %v", d.Metric, d.Diff, d.P)
		}
	}
	same, err := Compare(context.Background(), "testdata/pred.jsonl", "testdata/pred.jsonl", "testdata/ref.jsonl", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range same.Metrics {
		if d.Diff != 0 || d.P != 1 {
			t.Errorf("%s: a system against itself: diff %v p %v, want 0 and 1", d.Metric, d.Diff, d.P)
		}
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, c); err != nil || !strings.Contains(buf.String(), "citation_f1") {
		t.Errorf("comparison table: %v\n%s", err, buf.String())
	}
}

func TestAgreement(t *testing.T) {
	dir := t.TempDir()
	auto := filepath.Join(dir, "auto.jsonl")
	human := filepath.Join(dir, "human.jsonl")
	var a, h bytes.Buffer
	// Human scores are a monotone transform of the automatic ones for claim_recall (rank
	// correlations 1) and the reverse order for citation_recall (rank correlations -1).
	vals := []float64{0.1, 0.5, 0.2, 0.9, 0.7}
	for i, v := range vals {
		pmid := string(rune('A' + i))
		json.NewEncoder(&a).Encode(map[string]any{"PMID": pmid, "Aspect": "p", "scores": map[string]float64{"claim_recall": v, "citation_recall": v}})
		json.NewEncoder(&h).Encode(map[string]any{"PMID": pmid, "Aspect": "p", "claim_recall": v * v, "citation_recall": 1 - v})
	}
	os.WriteFile(auto, a.Bytes(), 0o644)
	os.WriteFile(human, h.Bytes(), 0o644)
	cs, err := Agreement(auto, human)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Fatalf("%d metrics, want 2", len(cs))
	}
	for _, c := range cs {
		want := 1.0
		if c.Metric == "citation_recall" {
			want = -1
		}
		if c.N != 5 || !approx(c.Spearman, want) || !approx(c.Kendall, want) {
			t.Errorf("%s: n %d spearman %v kendall %v, want %v", c.Metric, c.N, c.Spearman, c.Kendall, want)
		}
	}
	if _, err := Agreement(auto, "testdata/ref.jsonl"); err == nil {
		t.Error("no common instances: want an error")
	}
}

// TestReferencesAgainstThemselves checks, on the real TracSum dev data, that references scored
// against themselves get exactly 1 on claim, ROUGE and exact-citation metrics, and logs the
// entailment-gated citation figures of the lexical judge.
func TestReferencesAgainstThemselves(t *testing.T) {
	path := filepath.Join("..", "..", "shared", "data", "tracsum", "tracsum-dev.jsonl")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("TracSum dev data not found at %s (../shared relative to the repository root)", path)
	}
	out, err := Evaluation(context.Background(), path, path, testConfig().Eval, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Results {
		for _, m := range []Metric{ClaimRecall, ClaimPrecision, ClaimF1, CitationExactPrecision, CitationExactRecall,
			CitationExactF1, Rouge1F, Rouge2F, RougeLF, RougeLsumF} {
			if r.Values[m] != 1 {
				t.Errorf("PMID %s aspect %s: %s = %v, want exactly 1", r.PMID, r.Aspect, m, r.Values[m])
			}
		}
	}
	g := out.Report.Positive
	t.Logf("lexical judge, references vs themselves, positive references (n=%d): citation recall %.3f precision %.3f (micro %.3f)",
		g.N, g.Mean[CitationRecall], g.Mean[CitationPrecision], g.Micro[CitationRecall])
}

func TestIntervalsMatchStatsBootstrapCI(t *testing.T) {
	pairs := syntheticPairs(300)
	s := &Scorer{Judge: lexical(), Rouge: rouge.New(rouge.Options{Stem: true})}
	res, err := s.Evaluate(context.Background(), pairs, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := BootstrapOptions{Resamples: 400, Seed: 42, Level: 0.95}
	g := Aggregate(res, false, b)
	for m := range NumMetrics {
		if r, _ := m.f1Parts(); r >= 0 || m.isPhrase() {
			continue
		}
		vals := make([]float64, len(res))
		for i := range res {
			vals[i] = res[i].Values[m]
		}
		lo, hi := stats.BootstrapCI(vals, b.Resamples, b.Seed, b.Level)
		if g.CI[m] != [2]float64{lo, hi} {
			t.Errorf("%s: interval %v, stats.BootstrapCI gives [%v %v]", m, g.CI[m], lo, hi)
		}
	}
}

func TestEvaluationWithLLMJudge(t *testing.T) {
	srv := llmtest.NewServer()
	defer srv.Close()
	cfg := testConfig().Eval
	cfg.Judge = "llm"
	cfg.LLM.BaseURL = srv.URL + "/v1"
	cfg.LLM.Model = "fake"
	cfg.LLM.CacheDir = t.TempDir()
	cfg.LLM.Backoff = time.Millisecond
	t.Setenv(cfg.LLM.APIKeyEnv, "key-from-env")
	out, err := Evaluation(context.Background(), "testdata/ref.jsonl", "testdata/ref.jsonl", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Report.Overall.Mean[ClaimF1] != 1 || out.Report.Overall.Mean[CitationExactF1] != 1 {
		t.Errorf("references against themselves with the llm judge: claim F1 %v exact F1 %v, want 1",
			out.Report.Overall.Mean[ClaimF1], out.Report.Overall.Mean[CitationExactF1])
	}
	if out.Report.Settings.Judge != "llm:fake" {
		t.Errorf("judge name %q", out.Report.Settings.Judge)
	}
	if srv.LastAuthorization() != "Bearer key-from-env" {
		t.Errorf("API key not taken from %s", cfg.LLM.APIKeyEnv)
	}
	sent := srv.Requests()
	if sent == 0 {
		t.Fatal("no request reached the endpoint")
	}
	again, err := Evaluation(context.Background(), "testdata/ref.jsonl", "testdata/ref.jsonl", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Requests() != sent {
		t.Errorf("the rerun sent %d requests, want 0 (cache)", srv.Requests()-sent)
	}
	a, _ := ReportJSON(out.Report)
	b, _ := ReportJSON(again.Report)
	if !bytes.Equal(a, b) {
		t.Error("cached rerun gives a different report")
	}

	srv.Close()
	cfg.LLM.CacheDir = t.TempDir()
	cfg.LLM.MaxRetries = 1
	_, err = Evaluation(context.Background(), "testdata/pred.jsonl", "testdata/ref.jsonl", cfg, nil)
	if !errors.Is(err, judge.ErrUnreachable) || !strings.Contains(err.Error(), "PMID") {
		t.Errorf("unreachable endpoint: err = %v", err)
	}
}

func TestCommandFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	cmd := Command()
	if err := cmd.Flags.Parse([]string{"--pred", "testdata/partial.jsonl", "--ref", "testdata/ref.jsonl", "--missing", "empty", "--out", dir}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(context.Background(), cmd.Flags.Args()); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Eval.Missing != "empty" {
		t.Errorf("--missing=empty did not reach the config: %q", cfg.Eval.Missing)
	}
	cmd = Command()
	cmd.Flags.Parse([]string{"--pred", "testdata/partial.jsonl"})
	if err := cmd.Run(context.Background(), nil); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("missing --ref: err = %v, want a usage error", err)
	}
	cmd = Command()
	cmd.Flags.Parse([]string{"--pred", "testdata/partial.jsonl", "--ref", "testdata/ref.jsonl"})
	if err := cmd.Run(context.Background(), nil); !errors.Is(err, ErrMissing) {
		t.Errorf("missing predictions without --missing=empty: err = %v", err)
	}
}

// TestAgreementGolden compares `agreement` with scipy on files made by
// eval/testdata/agreement/gen.py (ties, a metric missing on some lines, an instance in one file
// only, lines in a different order).
func TestAgreementGolden(t *testing.T) {
	dir := filepath.Join("testdata", "agreement")
	got, err := Agreement(filepath.Join(dir, "auto.jsonl"), filepath.Join(dir, "human.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want []Correlation
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d metrics, want %d", len(got), len(want))
	}
	near := func(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }
	for i, w := range want {
		g := got[i]
		if g.Metric != w.Metric || g.N != w.N {
			t.Errorf("row %d: %s n=%d, want %s n=%d", i, g.Metric, g.N, w.Metric, w.N)
			continue
		}
		for _, c := range []struct {
			name      string
			got, want float64
			tol       float64
		}{
			{"pearson", g.Pearson, w.Pearson, 1e-9}, {"spearman", g.Spearman, w.Spearman, 1e-9},
			{"kendall", g.Kendall, w.Kendall, 1e-9}, {"pearson p", g.PearsonP, w.PearsonP, 1e-6},
			{"spearman p", g.SpearmanP, w.SpearmanP, 1e-6}, {"kendall p", g.KendallP, w.KendallP, 1e-6},
		} {
			if !near(c.got, c.want, c.tol) {
				t.Errorf("%s %s = %v, scipy %v", w.Metric, c.name, c.got, c.want)
			}
		}
	}
}
