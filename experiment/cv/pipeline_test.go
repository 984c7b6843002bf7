package cv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/tracksum/tracksum/internal/testlog"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// oracleFolds records what the test method was given, per fold.
var oracleFolds = map[int]MethodFold{}

// init registers a test method that answers the references (claim recall 1 by construction), so
// the table6 run exercises the hook a variant (STT, ETE) uses.
func init() {
	RegisterPipelineMethod(PipelineMethod{Name: "oracle", Label: "oracle (test)",
		Fold: func(_ context.Context, _ *config.Config, f MethodFold) ([]dataset.Prediction, error) {
			insts, err := readInstances(f.Data)
			if err != nil {
				return nil, err
			}
			oracleFolds[f.Fold] = f
			var out []dataset.Prediction
			for _, a := range f.Abstracts {
				for _, asp := range a.Aspects {
					in := insts[[2]string{a.PMID, asp}]
					out = append(out, dataset.Prediction{PMID: in.PMID, Aspect: in.Aspect, Summary: in.Summary, Indexes: in.Indexes})
				}
			}
			return out, nil
		}})
}

func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestPipelineSample runs the whole pipeline cross-validation (table6: tracker, summarizer,
// full-context summarizer, the test method) on the built-in sample with 2 folds and checks that
// its parts are what the stand-alone commands give: "tracker + copy" is the tracker
// cross-validation's oof.jsonl, TTS is tracksum-infer with the fold checkpoints, the summarizer
// cross-validation's files are scored by eval as cv.json says, reruns reuse every fold, and a
// changed decoding key re-decodes without retraining.
func TestPipelineSample(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 2 tiny trackers and 4 tiny summarizers (~30 s)")
	}
	ctx := context.Background()
	cfg := tinyConfig(t)
	cfg.Summarizer.Train.MaxSteps = 12
	cfg.Summarizer.Train.Epochs = 1
	cfg.Eval.Bootstrap.Resamples = 100
	data := preparedWithFolds(t, cfg, 2)
	out := filepath.Join(t.TempDir(), "pipe")
	rep, err := RunPipeline(ctx, cfg, Options{Data: data, Out: out, Folds: 2, Model: ModelTable6, Log: testlog.Writer(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The settings record holds the threshold the pipeline cites at, resolved, as earlier builds
	// recorded infer.threshold (then 0.5 by default, now unset): their records stay valid.
	if y, err := os.ReadFile(filepath.Join(out, "config.yaml")); err != nil || !regexp.MustCompile(`(?m)^infer:\n\s+threshold: 0.5\n`).Match(y) {
		t.Errorf("settings record (err %v) lacks infer.threshold 0.5:\n%s", err, y)
	}
	names := []string{}
	for _, s := range rep.Systems {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "copy,tts,tts-f,oracle" {
		t.Fatalf("systems %s", got)
	}
	refs := readJSONL[dataset.Instance](t, filepath.Join(out, ReferencesFile))
	for _, s := range rep.Systems {
		if s.N != len(refs) || len(s.Folds) != 2 || s.Folds[0].N+s.Folds[1].N != len(refs) {
			t.Errorf("%s: %d instances in folds %+v, want %d", s.Name, s.N, s.Folds, len(refs))
		}
		for _, key := range []string{"claim_recall", "claim_precision", "citation_recall", "citation_precision", "rougeL_f", "claim_recall/m"} {
			if _, ok := s.Summary[key]; !ok {
				t.Errorf("%s: summary lacks %s", s.Name, key)
			}
		}
	}
	if o := rep.Systems[3]; o.Pooled["claim_recall"] != 1 || o.Pooled["citation_exact_f1"] != 1 {
		t.Errorf("oracle: claim recall %v, exact citation F1 %v, want 1", o.Pooled["claim_recall"], o.Pooled["citation_exact_f1"])
	}
	if len(rep.Comparisons) != 4 || rep.Comparisons[3].A != "tts-f" || rep.Comparisons[3].B != "tts" {
		t.Errorf("comparisons %+v", rep.Comparisons)
	}
	// The method got both folds, the held-out abstracts as "" and a dev part.
	folds, err := dataset.ReadFolds(data)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 2 {
		f, ok := oracleFolds[k]
		if !ok || len(f.Abstracts) != len(folds.IDs[k]) || f.Dir != filepath.Join(out, "oracle", fmt.Sprintf("fold-%d", k)) {
			t.Fatalf("fold %d: method given %+v", k, f)
		}
		dev := 0
		for i, id := range folds.IDs[1-k] {
			if f.Assign(folds.IDs[k][min(i, len(folds.IDs[k])-1)]) != "" {
				t.Errorf("fold %d: a held-out abstract is assigned to %q", k, f.Assign(folds.IDs[k][0]))
			}
			if f.Assign(id) == dataset.SplitDev {
				dev++
			}
		}
		if dev == 0 {
			t.Errorf("fold %d: no dev abstract", k)
		}
	}

	// tracker + copy = the tracker cross-validation's out-of-fold predictions.
	copies := readJSONL[dataset.Prediction](t, filepath.Join(out, "copy.jsonl"))
	oof := readJSONL[dataset.Prediction](t, filepath.Join(out, TrackerDir, PredictionsFile))
	if len(copies) != len(oof) {
		t.Fatalf("%d tracker + copy predictions, tracker oof.jsonl has %d", len(copies), len(oof))
	}
	for i := range oof {
		a, b := copies[i], oof[i]
		if a.PMID != b.PMID || a.Aspect != b.Aspect || a.Summary != b.Summary || fmt.Sprint(a.Indexes) != fmt.Sprint(b.Indexes) {
			t.Fatalf("instance %d: tracker + copy %+v, oof.jsonl %+v", i, a, b)
		}
	}

	// TTS on fold 1 = tracksum-infer with fold 1's tracker and summarizer checkpoints.
	var fold1 []dataset.Instance
	for _, r := range refs {
		if folds.Fold(r.PMID) == 1 {
			fold1 = append(fold1, r)
		}
	}
	input := filepath.Join(t.TempDir(), "fold1.jsonl")
	if err := atomicio.WriteJSONL(input, fold1); err != nil {
		t.Fatal(err)
	}
	pred := filepath.Join(t.TempDir(), "pred.jsonl")
	if _, err := infer.Run(ctx, cfg, infer.Options{Tracker: filepath.Join(out, TrackerDir, "fold-1"),
		Summarizer: filepath.Join(out, SummarizerDir, "fold-1"), Input: input, Out: pred, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]dataset.Prediction{}
	for _, p := range readJSONL[dataset.Prediction](t, pred) {
		want[[2]string{p.PMID, p.Aspect}] = p
	}
	n := 0
	for _, p := range readJSONL[dataset.Prediction](t, filepath.Join(out, "tts.jsonl")) {
		if folds.Fold(p.PMID) != 1 {
			continue
		}
		n++
		w := want[[2]string{p.PMID, p.Aspect}]
		if p.Summary != w.Summary || fmt.Sprint(p.Indexes) != fmt.Sprint(w.Indexes) {
			t.Fatalf("%s/%s: pipeline TTS %q %v, infer %q %v", p.PMID, p.Aspect, p.Summary, p.Indexes, w.Summary, w.Indexes)
		}
	}
	if n != len(fold1) || n == 0 {
		t.Fatalf("%d TTS predictions in fold 1, want %d", n, len(fold1))
	}

	// The summarizer cross-validation's oof.jsonl is scored by eval directly, as cv.json says.
	var srep SummarizerReport
	if err := readJSONFile(filepath.Join(out, SummarizerDir, ReportFile), &srep); err != nil {
		t.Fatal(err)
	}
	sdir := filepath.Join(out, SummarizerDir)
	ev, err := eval.Evaluation(ctx, filepath.Join(sdir, PredictionsFile), filepath.Join(sdir, ReferencesFile), cfg.Eval, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ev.Report.Overall.Mean[eval.RougeLF], srep.Systems[0].Pooled["rougeL_f"]; math.Abs(got-want) > 1e-12 {
		t.Errorf("eval ROUGE-L %v, cv.json %v", got, want)
	}
	for _, r := range ev.Results {
		if r.RefNegative {
			t.Fatalf("summarizer references hold a negative instance %s/%s", r.PMID, r.Aspect)
		}
	}
	if len(srep.DevSystems) != 2 || srep.DevSystems[0].N == 0 || srep.Comparisons[0].A != "summarizer" {
		t.Errorf("summarizer report: dev systems %+v, comparisons %+v", srep.DevSystems, srep.Comparisons)
	}

	// A rerun trains nothing and gives the same figures.
	var log bytes.Buffer
	again, err := RunPipeline(ctx, cfg, Options{Data: data, Out: out, Folds: 2, Model: ModelTable6, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "train [") || again.Systems[1].Pooled["rougeL_f"] != rep.Systems[1].Pooled["rougeL_f"] {
		t.Errorf("rerun retrained or changed TTS ROUGE-L (%v vs %v):\n%s", again.Systems[1].Pooled["rougeL_f"], rep.Systems[1].Pooled["rougeL_f"], log.String())
	}

	// Another decoding key re-decodes the summarizer folds without retraining; another training
	// key is refused.
	c := *cfg
	c.Summarizer.NoRepeatNgram = 2
	log.Reset()
	re, err := RunSummarizer(ctx, &c, Options{Data: data, Out: sdir, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "train [") || re.Decoding.NoRepeatNgram != 2 || !strings.Contains(log.String(), "decoding with") {
		t.Errorf("decoding change: %+v\n%s", re.Decoding, log.String())
	}
	for k, f := range re.Folds {
		if f.Decoding.NoRepeatNgram != 2 || f.TrainSeconds != srep.Folds[k].TrainSeconds {
			t.Errorf("fold %d: decoding %+v, train seconds %v (was %v)", k, f.Decoding, f.TrainSeconds, srep.Folds[k].TrainSeconds)
		}
	}
	// infer.grounding is applied after decoding: a change re-decodes too, and "off" keeps the
	// summaries as the checkpoint wrote them.
	c.Infer.Grounding = "off"
	log.Reset()
	if re, err = RunSummarizer(ctx, &c, Options{Data: data, Out: sdir, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "train [") || re.Decoding.Grounding != "off" {
		t.Errorf("grounding change: %+v\n%s", re.Decoding, log.String())
	}
	c.Summarizer.Train.LearningRate *= 2
	if _, err := RunSummarizer(ctx, &c, Options{Data: data, Out: sdir, Log: io.Discard}); err == nil || !strings.Contains(err.Error(), "settings differ") {
		t.Errorf("changed learning rate: %v", err)
	}
	if _, err := RunPipeline(ctx, cfg, Options{Data: data, Out: out, Model: "nope", Log: io.Discard}); err == nil {
		t.Error("unknown pipeline model accepted")
	}
}

// TestMethodFoldCacheKey: a registered method's predictions are reused when only a decoding key
// its own configuration overrides changed, and decoded again when one it reads changed.
func TestMethodFoldCacheKey(t *testing.T) {
	calls := 0
	m := PipelineMethod{Name: "fake",
		Fold: func(context.Context, *config.Config, MethodFold) ([]dataset.Prediction, error) {
			calls++
			return []dataset.Prediction{{PMID: "1", Aspect: "a", Summary: "Unknown."}}, nil
		},
		Config: func(cfg *config.Config) (*config.Config, error) {
			c := *cfg
			c.Summarizer.MaxDecodeLen = 0 // the method's own limit, whatever the profile says
			return &c, nil
		}}
	f := MethodFold{Dir: filepath.Join(t.TempDir(), "fake", "fold-0")}
	base := config.Default()
	tests := []struct {
		desc      string
		change    func(*config.Config)
		wantCalls int
	}{
		{"first run", func(*config.Config) {}, 1},
		{"same keys", func(*config.Config) {}, 1},
		{"a key the method overrides", func(c *config.Config) { c.Summarizer.MaxDecodeLen = 200 }, 1},
		{"a key the method reads", func(c *config.Config) { c.Summarizer.BeamSize = 2 }, 2},
	}
	for _, tc := range tests {
		c := base
		tc.change(&c)
		if _, err := methodFold(context.Background(), &c, m, f); err != nil {
			t.Fatal(err)
		}
		if calls != tc.wantCalls {
			t.Errorf("%s: %d runs of the method, want %d", tc.desc, calls, tc.wantCalls)
		}
	}
}
