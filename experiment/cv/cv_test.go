package cv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
	"github.com/tracksum/tracksum/eval"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/model/tracker"
)

// tinyConfig loads configs/tiny.yaml, the profile CI trains with.
func tinyConfig(t testing.TB) *config.Config {
	t.Helper()
	cfg, err := config.Load(viper.New(), "../../configs/tiny.yaml", pflag.NewFlagSet("t", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// preparedWithFolds is the built-in sample prepared with cfg's settings and k folds, shared by the
// tests that ask for the same (read-only).
func preparedWithFolds(t *testing.T, cfg *config.Config, k int) string {
	t.Helper()
	c := *cfg
	c.Prepare.Folds = k
	return preparetest.Dir(t, &c)
}

func readReport(t *testing.T, dir string) *Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func readPredictions(t *testing.T, path string) []dataset.Prediction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []dataset.Prediction
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var p dataset.Prediction
		if err := json.Unmarshal(line, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestCrossValidateSample runs the tracker and the lexical baseline (both with calibration and
// context rescoring, the default recipe) through 3-fold CV on the built-in sample and checks
// cv.json, the out-of-fold files (scored by eval, compared pairwise), that infer with a fold
// checkpoint reproduces its out-of-fold scores, and resuming.
func TestCrossValidateSample(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 3 tiny trackers (~15 s)")
	}
	ctx := context.Background()
	cfg := tinyConfig(t)
	// The default recipe (configs/default.yaml): calibration and context rescoring, here with 3
	// inner folds; the tiny profile leaves them off to keep other tests fast.
	cfg.Tracker.LexicalCalibrationFolds, cfg.Tracker.ContextRescoring = 3, true
	data := preparedWithFolds(t, cfg, 3)
	folds, err := dataset.ReadFolds(data)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	outTracker, outLexical := filepath.Join(root, "tracker"), filepath.Join(root, "lexical")
	var log bytes.Buffer
	rep, err := Run(ctx, cfg, Options{Data: data, Out: outTracker, Folds: 3, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	lex, err := Run(ctx, cfg, Options{Data: data, Out: outLexical, Model: ModelLexical, Log: &log})
	if err != nil {
		t.Fatal(err)
	}

	instances := cfg.Prepare.SampleSize * len(dataset.Aspects(dataset.AspectSetTracSum))
	for _, r := range []*Report{rep, lex} {
		onDisk := readReport(t, filepath.Join(root, r.Model))
		if onDisk.K != 3 || len(onDisk.Folds) != 3 || onDisk.Threshold != 0.5 || onDisk.Pooled.Instances != instances {
			t.Fatalf("%s: k %d, %d folds, threshold %v, %d pooled instances", r.Model, onDisk.K, len(onDisk.Folds), onDisk.Threshold, onDisk.Pooled.Instances)
		}
		var f1s []float64
		n := 0
		for k, f := range onDisk.Folds {
			if f.Fold != k || f.TestAbstracts != len(folds.IDs[k]) || f.TrainAbstracts+f.DevAbstracts+f.TestAbstracts != cfg.Prepare.SampleSize {
				t.Errorf("%s fold %d: %+v", r.Model, k, f)
			}
			if f.Keys != nil || f.Scores != nil {
				t.Errorf("%s fold %d: cv.json carries the scores", r.Model, k)
			}
			f1s = append(f1s, f.Test.Sentence["f1"])
			n += f.Test.Instances
		}
		if n != instances {
			t.Errorf("%s: %d test instances over the folds, want %d", r.Model, n, instances)
		}
		want := meanSD(f1s)
		if got := onDisk.Summary["sentence_f1"]; math.Abs(got.Mean-want.Mean) > 1e-12 || math.Abs(got.SD-want.SD) > 1e-12 || got.SD == 0 {
			t.Errorf("%s: sentence_f1 %+v, want %+v (non-zero sd)", r.Model, got, want)
		}
		for _, key := range []string{"sentence_precision", "sentence_recall", "sentence_auc", "exact_match", "instance_f1"} {
			if _, ok := onDisk.Summary[key]; !ok {
				t.Errorf("%s: summary lacks %s", r.Model, key)
			}
		}
		for _, a := range dataset.Aspects(dataset.AspectSetTracSum) {
			if _, ok := onDisk.Summary["f1/"+a.Code]; !ok {
				t.Errorf("%s: summary lacks f1/%s", r.Model, a.Code)
			}
		}
		if f1 := onDisk.Summary["sentence_f1"].Mean; f1 < 0.8 {
			t.Errorf("%s: mean F1 %.3f, want >= 0.8 on the learnable sample", r.Model, f1)
		}
	}

	// Out-of-fold predictions: one per instance, in the eval format, scored by eval, and paired
	// with the other model's through the same references.
	preds := readPredictions(t, filepath.Join(outTracker, PredictionsFile))
	if len(preds) != instances {
		t.Fatalf("%d predictions, want %d", len(preds), instances)
	}
	for _, p := range preds {
		if (len(p.Indexes) == 0) != (p.Summary == dataset.UnknownSummary) || len(p.Scores) == 0 {
			t.Fatalf("prediction %s/%s: summary %q, indexes %v, %d scores", p.PMID, p.Aspect, p.Summary, p.Indexes, len(p.Scores))
		}
	}
	refTracker, _ := os.ReadFile(filepath.Join(outTracker, ReferencesFile))
	refLexical, _ := os.ReadFile(filepath.Join(outLexical, ReferencesFile))
	if len(refTracker) == 0 || !bytes.Equal(refTracker, refLexical) {
		t.Fatal("the two runs' references differ or are empty")
	}
	ec := cfg.Eval
	ec.Bootstrap.Resamples = 200
	out, err := eval.Evaluation(ctx, filepath.Join(outTracker, PredictionsFile), filepath.Join(outTracker, ReferencesFile), ec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != instances {
		t.Errorf("eval scored %d instances, want %d", len(out.Results), instances)
	}
	cmp, err := eval.Compare(ctx, filepath.Join(outTracker, PredictionsFile), filepath.Join(outLexical, PredictionsFile),
		filepath.Join(outTracker, ReferencesFile), ec)
	if err != nil {
		t.Fatal(err)
	}
	last := cmp.Metrics[len(cmp.Metrics)-1]
	// eval's sentence-level micro F1 of the OOF files is the tracker's pooled sentence F1.
	if last.Metric != eval.SentenceMicroF1 || math.Abs(last.A-rep.Pooled.Sentence["f1"]) > 1e-9 || math.Abs(last.B-lex.Pooled.Sentence["f1"]) > 1e-9 {
		t.Errorf("compare %s: A %v B %v, want the pooled F1s %v and %v", last.Metric, last.A, last.B, rep.Pooled.Sentence["f1"], lex.Pooled.Sentence["f1"])
	}

	// The OOF scores are what infer gives with the fold's checkpoint: every instance of fold 1
	// through infer's pipeline (tracker.Load, ScoreBatch per abstract, the context rescorer
	// stored in the checkpoint), against oof.jsonl.
	m, err := tracker.Load(filepath.Join(outTracker, "fold-1"))
	if err != nil {
		t.Fatal(err)
	}
	var fold1 FoldResult
	if b, err := os.ReadFile(filepath.Join(outTracker, "fold-1.json")); err != nil || json.Unmarshal(b, &fold1) != nil {
		t.Fatalf("fold-1.json: %v", err)
	}
	if m.Context() == nil || !reflect.DeepEqual(m.Context(), fold1.Context) {
		t.Fatalf("fold checkpoint's rescorer %+v, fold-1.json's %+v", m.Context(), fold1.Context)
	}
	insts, err := readInstances(data)
	if err != nil {
		t.Fatal(err)
	}
	pipe := &infer.Pipeline{Tracker: m, Threshold: cfg.Tracker.Threshold}
	checked := 0
	for _, p := range preds {
		if folds.Fold(p.PMID) != 1 {
			continue
		}
		checked++
		got, err := pipe.Process(infer.Abstract{PMID: p.PMID, Document: insts[[2]string{p.PMID, p.Aspect}].Document, Aspects: []string{p.Aspect}})
		if err != nil {
			t.Fatal(err)
		}
		nearCut := false
		for i := range p.Scores {
			// Batches are composed differently (float rounding of the network's scores).
			if math.Abs(float64(got[0].Scores[i]-p.Scores[i])) > 1e-5 {
				t.Fatalf("%s/%s sentence %d: infer %v, OOF %v", p.PMID, p.Aspect, i, got[0].Scores[i], p.Scores[i])
			}
			nearCut = nearCut || math.Abs(float64(p.Scores[i])-cfg.Tracker.Threshold) < 1e-5
		}
		if !nearCut && !slices.Equal(got[0].Indexes, p.Indexes) {
			t.Fatalf("%s/%s: infer tracks %v, OOF %v", p.PMID, p.Aspect, got[0].Indexes, p.Indexes)
		}
	}
	if checked != len(folds.IDs[1])*len(dataset.Aspects(dataset.AspectSetTracSum)) {
		t.Errorf("checked %d instances of fold 1", checked)
	}

	// Resume: finished folds are not redone; a missing fold result is redone from its
	// checkpoint, and the report is the same.
	fold0, _ := os.Stat(filepath.Join(outTracker, "fold-0.json"))
	if err := os.Remove(filepath.Join(outTracker, "fold-2.json")); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	again, err := Run(ctx, cfg, Options{Data: data, Out: outTracker, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "already done"); n != 2 || strings.Contains(log.String(), "lexical warm start") {
		t.Errorf("rerun: %d folds skipped, want 2:\n%s", n, log.String())
	}
	if st, _ := os.Stat(filepath.Join(outTracker, "fold-0.json")); !st.ModTime().Equal(fold0.ModTime()) {
		t.Error("a finished fold was rewritten")
	}
	again.WallSeconds, rep.WallSeconds = 0, 0
	for i := range again.Folds {
		again.Folds[i].TrainSeconds, rep.Folds[i].TrainSeconds = 0, 0
	}
	a, _ := json.Marshal(again)
	b, _ := json.Marshal(rep)
	if !bytes.Equal(a, b) {
		t.Errorf("resumed report differs:\n%s\n%s", a, b)
	}

	// Another model or K into the same output is refused.
	if _, err := Run(ctx, cfg, Options{Data: data, Out: outTracker, Model: ModelLexical}); !errors.Is(err, ErrSettings) {
		t.Errorf("another model into the same output: %v", err)
	}
	if _, err := Run(ctx, cfg, Options{Data: data, Out: outTracker, Folds: 5}); err == nil || !strings.Contains(err.Error(), "prepared with 3 folds") {
		t.Errorf("wrong --folds: %v", err)
	}
}

// TestPartition checks the dev carving: seeded, by PMID, disjoint from the test fold and from
// the training part, and different per fold.
func TestPartition(t *testing.T) {
	cfg := tinyConfig(t)
	data := preparedWithFolds(t, cfg, 3)
	folds, err := dataset.ReadFolds(data)
	if err != nil {
		t.Fatal(err)
	}
	all, err := readRows(data, cfg.Tracker.MaxLen-1)
	if err != nil {
		t.Fatal(err)
	}
	pmids := func(s tracker.SplitData) []string {
		var out []string
		for _, k := range s.Keys {
			out = append(out, k.PMID)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	var devs [][]string
	for k := range folds.K {
		d, parts := all.partition(folds, k, 0.1, cfg.Seed)
		train, dev, test := pmids(d.Train), pmids(d.Dev), pmids(d.Test)
		if !slices.Equal(test, folds.IDs[k]) {
			t.Errorf("fold %d: test PMIDs are not the fold", k)
		}
		if parts != [3]int{len(train), len(dev), len(test)} || len(dev) == 0 {
			t.Errorf("fold %d: parts %v for %d/%d/%d PMIDs", k, parts, len(train), len(dev), len(test))
		}
		for _, id := range dev {
			if _, in := slices.BinarySearch(train, id); in || folds.Fold(id) == k {
				t.Errorf("fold %d: dev PMID %s also in train or test", k, id)
			}
		}
		if len(d.Train.Examples)+len(d.Dev.Examples)+len(d.Test.Examples) != len(all.examples) {
			t.Errorf("fold %d: rows lost", k)
		}
		again, _ := all.partition(folds, k, 0.1, cfg.Seed)
		if !slices.Equal(pmids(again.Dev), dev) {
			t.Errorf("fold %d: dev part not reproducible", k)
		}
		devs = append(devs, dev)
	}
	if slices.Equal(devs[0], devs[1]) {
		t.Error("folds 0 and 1 carve the same dev part")
	}
}

// TestRunErrors: the three cross-validations refuse bad options through their shared prologue
// (startRun), each naming itself and the models it takes.
func TestRunErrors(t *testing.T) {
	cfg := tinyConfig(t)
	plain := preparetest.Dir(t, cfg)
	ctx := context.Background()
	runTracker := func(o Options) error { _, err := Run(ctx, cfg, o); return err }
	runSummarizer := func(o Options) error { _, err := RunSummarizer(ctx, cfg, o); return err }
	runPipeline := func(o Options) error { _, err := RunPipeline(ctx, cfg, o); return err }
	for _, tc := range []struct {
		desc string
		run  func(Options) error
		opts Options
		want string
	}{
		{"no folds", runTracker, Options{Data: plain, Out: filepath.Join(t.TempDir(), "o")}, "no folds (prepare the directory with --folds K)"},
		{"unknown model", runTracker, Options{Data: plain, Out: "x", Model: "bert"},
			`cv: unknown model "bert" (want one of tracker, lexical, lexical-calibrated, lexical-context)`},
		{"unknown summarizer model", runSummarizer, Options{Data: plain, Out: "x", Model: "bert"},
			`cv: unknown summarizer model "bert" (want summarizer)`},
		{"unknown pipeline model", runPipeline, Options{Data: plain, Out: "x", Model: "bert"},
			`cv: unknown pipeline model "bert" (want tts or table6)`},
		{"bad dev share", runTracker, Options{Data: plain, Out: "x", DevShare: 1.5}, "cv: dev share must be in (0, 1), got 1.5"},
		{"bad dev share, summarizer", runSummarizer, Options{Data: plain, Out: "x", DevShare: 1.5}, "cv: dev share must be in (0, 1), got 1.5"},
		{"no folds, pipeline", runPipeline, Options{Data: plain, Out: filepath.Join(t.TempDir(), "o")}, "no folds (prepare the directory with --folds K)"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if err := tc.run(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMeanSD(t *testing.T) {
	for _, tc := range []struct {
		desc string
		v    []float64
		want Stat
	}{
		{"sample sd (n-1)", []float64{1, 2, 3, 4}, Stat{2.5, 1.2909944487358056}},
		{"one value", []float64{0.7}, Stat{0.7, 0}},
		{"constant", []float64{0.5, 0.5, 0.5}, Stat{0.5, 0}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := meanSD(tc.v); math.Abs(got.Mean-tc.want.Mean) > 1e-12 || math.Abs(got.SD-tc.want.SD) > 1e-12 {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestLexicalContext runs the lexical baseline and its calibrated and context-rescored ablations:
// every fold of an ablation records its shifts or rescorer and its out-of-fold scores differ from the plain run's, and
// the plain baseline ignores the tracker's calibration and rescoring keys (it is the same
// baseline whatever the tracker is).
func TestLexicalContext(t *testing.T) {
	cfg := tinyConfig(t)
	data := preparedWithFolds(t, cfg, 3)
	root := t.TempDir()
	var log bytes.Buffer
	plain, err := Run(context.Background(), cfg, Options{Data: data, Out: filepath.Join(root, "plain"), Model: ModelLexical, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	c := *cfg
	c.Tracker.LexicalCalibrationFolds, c.Tracker.ContextRescoring = 3, true
	if err := c.Tracker.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), &c, Options{Data: data, Out: filepath.Join(root, "keys"), Model: ModelLexical, Log: &log}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "context")
	rep, err := Run(context.Background(), cfg, Options{Data: data, Out: out, Model: ModelLexicalContext, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	calibrated := filepath.Join(root, "calibrated")
	if _, err := Run(context.Background(), cfg, Options{Data: data, Out: calibrated, Model: ModelLexicalCalibrated, Log: &log}); err != nil {
		t.Fatal(err)
	}
	aspects := len(dataset.Aspects(dataset.AspectSetTracSum))
	read := func(dir string, k int) FoldResult {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("fold-%d.json", k)))
		if err != nil {
			t.Fatal(err)
		}
		var f FoldResult
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	changed := 0
	for k := range 3 {
		f, p, keys := read(out, k), read(filepath.Join(root, "plain"), k), read(filepath.Join(root, "keys"), k)
		if f.Context == nil || len(f.Context.Weights) != aspects || len(f.Context.Shifts) != aspects {
			t.Fatalf("fold %d: rescorer %+v", k, f.Context)
		}
		if c := read(calibrated, k); len(c.CalibrationShifts) != aspects || c.Context != nil {
			t.Errorf("fold %d: calibrated baseline: shifts %v, rescorer %v", k, c.CalibrationShifts, c.Context)
		}
		if p.Context != nil || !slices.Equal(p.Scores, keys.Scores) {
			t.Errorf("fold %d: the plain baseline changed with the tracker's calibration and rescoring keys", k)
		}
		if !slices.Equal(p.Scores, f.Scores) {
			changed++
		}
	}
	if changed != 3 {
		t.Errorf("%d of 3 folds' scores changed by rescoring", changed)
	}
	t.Logf("sentence F1 plain %.3f, context %.3f", plain.Summary["sentence_f1"].Mean, rep.Summary["sentence_f1"].Mean)

	c.Tracker.LexicalCalibrationFolds = 0
	if err := c.Tracker.Validate(); err == nil || !strings.Contains(err.Error(), "tracker.context_rescoring") {
		t.Errorf("context rescoring without calibration folds: %v", err)
	}
	c.Tracker.LexicalCalibrationFolds = 1
	if err := c.Tracker.Validate(); err == nil || !strings.Contains(err.Error(), "tracker.lexical_calibration_folds") {
		t.Errorf("one calibration fold: %v", err)
	}
}

// TestTrackerSettingsIgnoreSummarizer: a tracker cross-validation run on its own records only the
// tracker's settings, so that it serves as a pipeline's OUT/tracker whatever the summarizer's
// settings (the documented "lexical tracker CV, then --task pipeline" commands once failed with
// "cross-validation settings differ" after a summarizer decoding default changed).
func TestTrackerSettingsIgnoreSummarizer(t *testing.T) {
	cfg := tinyConfig(t)
	data := preparedWithFolds(t, cfg, 3)
	opts := Options{Data: data, Out: filepath.Join(t.TempDir(), "tracker"), Model: ModelLexical, DevShare: DefaultDevShare, Log: io.Discard}
	if _, err := Run(context.Background(), cfg, opts); err != nil {
		t.Fatal(err)
	}
	changed := *cfg
	changed.Summarizer.MinLenRatio, changed.Summarizer.MaxDecodeLen = 0.3, 200
	changed.Infer.Grounding = "prune"
	if err := checkSettings(opts, onlySection(&changed, "tracker")); err != nil {
		t.Errorf("the pipeline's view of the finished tracker CV: %v", err)
	}
	if _, err := Run(context.Background(), &changed, opts); err != nil {
		t.Errorf("rerun with another summarizer setting: %v", err)
	}
	other := *cfg
	other.Tracker.Threshold = 0.4
	if err := checkSettings(opts, onlySection(&other, "tracker")); err == nil || !errors.Is(err, ErrSettings) {
		t.Errorf("a changed tracker setting: got %v, want ErrSettings", err)
	}
}
