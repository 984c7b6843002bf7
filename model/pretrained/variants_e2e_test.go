package pretrained_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/ete"
	"github.com/tracksum/tracksum/model/pretrained"
	"github.com/tracksum/tracksum/model/pretrained/pretrainedtest"
	"github.com/tracksum/tracksum/model/role"
	"github.com/tracksum/tracksum/model/stt"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/model/variant"
	"github.com/tracksum/tracksum/serve"
)

// The Table 6 variants on the tiny random Llama snapshot: tracksum-train's sum_then_track and
// end_to_end tasks with --pretrained (a few LoRA steps each), then tracksum-infer --method stt|ete
// on the checkpoints. A random model's answers are not summaries: what is checked is that the
// records are well formed, that each checkpoint records its variant and reloads, and that no
// checkpoint is run as another kind.

// variantConfig is the setup's config with a pretrained summarizer (and, for sum_then_track, pair
// tracker) trained for 3 steps, and short generations.
func variantConfig(t *testing.T) (cfg *config.Config, data string) {
	t.Helper()
	cfg, data, llm := setup(t)
	cfg.Summarizer.Pretrained = llm
	cfg.Summarizer.LoRA.Rank, cfg.Summarizer.LoRA.Alpha = 4, 8
	cfg.Summarizer.LoRA.TargetModules = []string{"q_proj", "v_proj"}
	cfg.Tracker.LoRA.Rank, cfg.Tracker.LoRA.Alpha = 4, 8
	cfg.Tracker.LoRA.TargetModules = []string{"q_proj", "v_proj"}
	cfg.Summarizer.MaxSummaryLen, cfg.Summarizer.MaxNewTokens, cfg.Variants.MaxOutputLen = 6, 6, 8
	cfg.Summarizer.DevDecodeLimit = 4
	loop(&cfg.Summarizer.Train)
	loop(&cfg.Tracker.Train)
	if pretrainedtest.ByteTokenizer() {
		// Three steps at 1e-2 teach randsnap's byte-level model to spell the most frequent target,
		// "Unknown.", for every aspect, and the checks below need text that is not "Unknown.": a
		// summarizer left near its random weights writes arbitrary bytes instead.
		cfg.Summarizer.Train.LearningRate = 1e-7
	}
	return cfg, data
}

// docLengths maps each abstract of a prepared split to its number of sentences.
func docLengths(t *testing.T, data, split string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for r, err := range dataset.ReadShards[dataset.EndToEndRow](data, dataset.TaskEndToEnd, split) {
		if err != nil {
			t.Fatal(err)
		}
		n[r.PMID] = len(r.Document)
	}
	if len(n) == 0 {
		t.Fatalf("%s: no %s abstracts", data, split)
	}
	return n
}

// checkIndexes fails unless p's indexes are sorted, unique sentences of its abstract, and a
// negative prediction is "Unknown." without citations.
func checkIndexes(t *testing.T, p dataset.Prediction, n int) {
	t.Helper()
	prev := -1
	for _, k := range p.Indexes {
		if k <= prev || k >= n {
			t.Errorf("%s/%s: indexes %v not sorted, unique and in [0, %d)", p.PMID, p.Aspect, p.Indexes, n)
			return
		}
		prev = k
	}
	if dataset.IsUnknownSummary(p.Summary) && (p.Summary != dataset.UnknownSummary || len(p.Indexes) > 0 || len(p.Scores) > 0) {
		t.Errorf("%s/%s: negative prediction %q with indexes %v, scores %v", p.PMID, p.Aspect, p.Summary, p.Indexes, p.Scores)
	}
}

// runInfer runs tracksum-infer on the test split of data and returns its predictions.
func runInfer(t *testing.T, cfg *config.Config, data string, o infer.Options) []dataset.Prediction {
	t.Helper()
	o.Input, o.Split, o.Out, o.Log = data, "test", filepath.Join(t.TempDir(), "pred.jsonl"), testLog()
	if _, err := infer.Run(context.Background(), cfg, o); err != nil {
		t.Fatal(err)
	}
	return readPredictions(t, o.Out)
}

// wantErr fails unless err is an error containing want.
func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: err %v, want one with %q", what, err, want)
	}
}

func TestSumThenTrackTrainInfer(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two models (~15 s)")
	}
	cfg, data := variantConfig(t)
	cfg.Tracker.Head = config.HeadLMCLS
	ck := filepath.Join(t.TempDir(), "stt")
	trainTask(t, variant.SumThenTrack, cfg, data, ck)
	sdir, tdir := filepath.Join(ck, checkpoint.VariantSummarizerDir), filepath.Join(ck, checkpoint.VariantTrackerDir)

	// Each directory records the variant, the part, and that its models are pretrained LMs.
	for _, tc := range []struct{ dir, part, task string }{{ck, "", ""}, {sdir, checkpoint.VariantSummarizerDir, dataset.TaskSummarizer},
		{tdir, checkpoint.VariantTrackerDir, dataset.TaskTracker}} {
		m, err := variant.ReadKind(tc.dir, variant.SumThenTrack, tc.part, true)
		if err != nil || m.AspectSet == "" {
			t.Fatalf("%s: variant.json %+v, err %v", tc.dir, m, err)
		}
		if tc.task == "" {
			continue
		}
		meta, err := pretrained.ReadMeta(tc.dir)
		if err != nil || meta.Task != tc.task || meta.Variant != variant.SumThenTrack {
			t.Fatalf("%s: pretrained.json %+v, err %v", tc.dir, meta, err)
		}
	}
	// 1 layer x {q, v} x {A, B}, plus the lm_cls head for the tracker.
	checkAdapter(t, sdir, 4)
	checkAdapter(t, tdir, 5)
	var rep pretrained.SumThenTrackReport
	if err := atomicio.ReadJSON(filepath.Join(ck, checkpoint.ReportFile), &rep, true); err != nil || rep.Summarizer == nil || rep.Tracker == nil ||
		rep.Summarizer.Steps != 3 || rep.Tracker.Steps != 3 {
		t.Fatalf("report %+v, err %v; want both parts at 3 steps", rep, err)
	}

	// Threshold 0 cites every sentence of each summary that is not "Unknown.", with its scores.
	docs := docLengths(t, data, "test")
	zero, above := 0.0, 1.01
	cfg.Infer.Threshold = &zero
	preds := runInfer(t, cfg, data, infer.Options{Method: infer.MethodSTT, Model: ck})
	tracked := 0
	for _, p := range preds {
		n, ok := docs[p.PMID]
		if !ok {
			t.Fatalf("prediction of unknown abstract %s", p.PMID)
		}
		checkIndexes(t, p, n)
		if strings.TrimSpace(p.Summary) == "" {
			t.Errorf("%s/%s: empty summary (want text or %q)", p.PMID, p.Aspect, dataset.UnknownSummary)
		}
		if dataset.IsUnknownSummary(p.Summary) {
			continue
		}
		tracked++
		if len(p.Scores) != n || len(p.Indexes) != n {
			t.Errorf("%s/%s: %d scores and %d indexes at threshold 0, want all %d sentences", p.PMID, p.Aspect, len(p.Scores), len(p.Indexes), n)
		}
		for _, s := range p.Scores {
			if s < 0 || s > 1 {
				t.Errorf("%s/%s: score %g outside [0, 1]", p.PMID, p.Aspect, s)
			}
		}
	}
	if tracked == 0 {
		t.Error("every summary is \"Unknown.\": the pair tracker never ran")
	}

	// The same through the parts (--summarizer and --tracker), above every score: no citation.
	cfg.Infer.Threshold = &above
	for _, p := range runInfer(t, cfg, data, infer.Options{Method: infer.MethodSTT, Summarizer: sdir, Tracker: tdir}) {
		checkIndexes(t, p, docs[p.PMID])
		if len(p.Indexes) > 0 {
			t.Errorf("%s/%s: indexes %v above threshold 1.01", p.PMID, p.Aspect, p.Indexes)
		}
	}

	// The loaded model predicts in aspect order; its threshold defaults to the paper's 0.5.
	m, err := pretrained.LoadSumThenTrack(context.Background(), ck)
	if err != nil {
		t.Fatal(err)
	}
	if m.Threshold != pretrained.DefaultPairThreshold {
		t.Errorf("threshold %g, want %g", m.Threshold, pretrained.DefaultPairThreshold)
	}
	ps, err := m.Predict("1", []string{"We gave drug X to 40 adults.", "Pain fell by half."}, []string{"a", "p"})
	if err != nil || len(ps) != 2 || ps[0].Aspect != "a" || ps[1].Aspect != "p" {
		t.Fatalf("Predict = %+v, %v", ps, err)
	}
	_, err = m.Predict("1", []string{"x"}, []string{"zz"})
	wantErr(t, "unknown aspect", err, `aspect "zz" is not in the`)

	// A resumed run of the finished directory keeps it.
	trainTask(t, variant.SumThenTrack, cfg, data, ck)

	// No part is run as another kind of model.
	_, err = pretrained.LoadSummarizer(context.Background(), sdir)
	wantErr(t, "LoadSummarizer(context.Background(), stt summarizer)", err, "sum_then_track summarizer, not a summarizer")
	_, err = pretrained.LoadTracker(context.Background(), tdir)
	wantErr(t, "LoadTracker(context.Background(), stt tracker)", err, "sum_then_track tracker, not a tracker")
	_, err = pretrained.LoadEndToEnd(context.Background(), ck)
	wantErr(t, "LoadEndToEnd(context.Background(), stt)", err, "is a pretrained sum_then_track checkpoint; pretrained.LoadEndToEnd wants an end_to_end")
	_, err = stt.Load(ck)
	wantErr(t, "stt.Load(pretrained stt)", err, "is a pretrained sum_then_track checkpoint; stt.Load wants a from-scratch SUM-THEN-TRACK checkpoint")
	_, err = infer.Run(context.Background(), cfg, infer.Options{Tracker: tdir, Input: data, Split: "test", Out: filepath.Join(t.TempDir(), "p.jsonl"), Log: testLog()})
	wantErr(t, "infer --tracker STT/tracker", err, "tracksum-infer --method stt")
	// An end_to_end run into the directory is refused before anything is written.
	task, _ := training.LookupTask(variant.EndToEnd)
	err = task.Train(context.Background(), cfg, training.Request{Data: data, Out: ck, Log: testLog()})
	wantErr(t, "end_to_end into an stt directory", err, `is a "sum_then_track" checkpoint, not "end_to_end"`)

	// tracker.pretrained alone does not make SUM-THEN-TRACK on a pretrained LM.
	only := *cfg
	only.Tracker.Pretrained, only.Summarizer.Pretrained = cfg.Summarizer.Pretrained, ""
	task, _ = training.LookupTask(variant.SumThenTrack)
	err = task.Train(context.Background(), &only, training.Request{Data: data, Out: filepath.Join(t.TempDir(), "x"), Log: testLog()})
	wantErr(t, "tracker.pretrained only", err, "needs summarizer.pretrained")
}

// TestSumThenTrackGenerativeTracker: the pair tracker with the generative head scores P(Yes).
func TestSumThenTrackGenerativeTracker(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two models (~15 s)")
	}
	cfg, data := variantConfig(t)
	cfg.Tracker.Head = config.HeadGenerative
	ck := filepath.Join(t.TempDir(), "stt")
	trainTask(t, variant.SumThenTrack, cfg, data, ck)
	m, err := pretrained.LoadSumThenTrack(context.Background(), ck)
	if err != nil {
		t.Fatal(err)
	}
	if m.Tracker.Meta.Head != config.HeadGenerative || m.Tracker.Meta.YesNo == nil {
		t.Fatalf("pair tracker meta %+v, want the generative head with its answer tokens", m.Tracker.Meta)
	}
	m.Threshold = 0
	doc := []string{"We gave drug X to 40 adults.", "Pain fell by half."}
	ps, err := m.Predict("1", doc, []string{"a", "o"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		checkIndexes(t, p, len(doc))
		if !dataset.IsUnknownSummary(p.Summary) && (len(p.Scores) != len(doc) || !slices.Equal(p.Indexes, []int{0, 1})) {
			t.Errorf("%s: scores %v, indexes %v at threshold 0", p.Aspect, p.Scores, p.Indexes)
		}
	}
}

func TestEndToEndTrainInfer(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model (~10 s)")
	}
	cfg, data := variantConfig(t)
	ck := filepath.Join(t.TempDir(), "ete")
	trainTask(t, variant.EndToEnd, cfg, data, ck)
	if m, err := variant.ReadKind(ck, variant.EndToEnd, "", true); err != nil || m.AspectSet == "" {
		t.Fatalf("variant.json %+v, err %v", m, err)
	}
	meta, err := pretrained.ReadMeta(ck)
	if err != nil || meta.Task != dataset.TaskSummarizer || meta.Variant != variant.EndToEnd || meta.Generation == nil ||
		meta.Generation.MaxNewTokens != cfg.Variants.MaxOutputLen {
		t.Fatalf("pretrained.json %+v, err %v; want an end_to_end summarizer generating up to variants.max_output_len", meta, err)
	}
	checkAdapter(t, ck, 4)
	var rep pretrained.Report
	if err := atomicio.ReadJSON(filepath.Join(ck, checkpoint.ReportFile), &rep, false); err != nil || rep.Steps != 3 {
		t.Fatalf("report %+v, err %v; want 3 steps", rep, err)
	}
	if _, ok := rep.Dev["citation_f1"]; !ok {
		t.Errorf("dev metrics %v lack citation_f1", rep.Dev)
	}

	docs := docLengths(t, data, "test")
	preds := runInfer(t, cfg, data, infer.Options{Method: infer.MethodETE, Model: ck})
	known := []string{role.ProblemNoCitations, role.ProblemNoSummary, role.ProblemBadCitations, role.ProblemIndexOutOfRange,
		role.ProblemDuplicateIndex, role.ProblemUnknownWithCitations}
	for _, p := range preds {
		n, ok := docs[p.PMID]
		if !ok {
			t.Fatalf("prediction of unknown abstract %s", p.PMID)
		}
		checkIndexes(t, p, n)
		for _, pr := range p.Problems {
			if !slices.Contains(known, pr) {
				t.Errorf("%s/%s: unknown problem %q", p.PMID, p.Aspect, pr)
			}
		}
		if p.Scores != nil {
			t.Errorf("%s/%s: END-TO-END has no scores, got %v", p.PMID, p.Aspect, p.Scores)
		}
	}

	// The loaded model counts every output it parsed.
	m, err := pretrained.LoadEndToEnd(context.Background(), ck)
	if err != nil {
		t.Fatal(err)
	}
	doc := []string{"We gave drug X to 40 adults.", "Pain fell by half."}
	ps, err := m.Predict("1", doc, []string{"a", "o", "p"})
	if err != nil || len(ps) != 3 {
		t.Fatalf("Predict = %+v, %v", ps, err)
	}
	for _, p := range ps {
		checkIndexes(t, p, len(doc))
	}
	if st := m.Stats(); st.Outputs != 3 {
		t.Errorf("stats %+v, want 3 outputs", st)
	}

	// tracksum-serve runs it through infer's pipeline: "Summary: ...\nCitations: ..." with the
	// prompt's own sentence numbers.
	b, err := serve.LoadTrackSumWith(context.Background(), cfg, serve.TrackSumOptions{
		Models: infer.Options{Method: infer.MethodETE, Model: ck}, Log: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Complete(context.Background(), []serve.Message{{Role: "user", Content: "Aspect: o\n[1] We gave drug X to 40 adults.\n[2] Pain fell by half."}}, serve.Params{})
	if err != nil || !regexp.MustCompile(`^Summary: .*\nCitations: (Null\.|\[[12](, [12])?\])$`).MatchString(c.Content) {
		t.Errorf("served END-TO-END answered %q, err %v", c.Content, err)
	}

	// A resumed run of the finished checkpoint keeps it.
	trainTask(t, variant.EndToEnd, cfg, data, ck)

	// The checkpoint is never run as another kind of model.
	_, err = pretrained.LoadSummarizer(context.Background(), ck)
	wantErr(t, "LoadSummarizer(context.Background(), ete)", err, "pretrained end_to_end, not a summarizer")
	_, err = pretrained.LoadSumThenTrack(context.Background(), ck)
	wantErr(t, "LoadSumThenTrack(context.Background(), ete)", err, "is a pretrained end_to_end checkpoint; pretrained.LoadSumThenTrack wants a sum_then_track")
	_, err = ete.Load(ck)
	wantErr(t, "ete.Load(pretrained ete)", err, "is a pretrained end_to_end checkpoint; ete.Load wants a from-scratch END-TO-END checkpoint")
	_, err = infer.Run(context.Background(), cfg, infer.Options{Tracker: infer.GoldTracker, Summarizer: ck, Input: data, Split: "test",
		Out: filepath.Join(t.TempDir(), "p.jsonl"), Log: testLog()})
	wantErr(t, "infer --summarizer ETE", err, "tracksum-infer --method ete")
	_, err = infer.Run(context.Background(), cfg, infer.Options{Method: infer.MethodSTT, Model: ck, Input: data, Split: "test",
		Out: filepath.Join(t.TempDir(), "p.jsonl"), Log: testLog()})
	wantErr(t, "infer --method stt on ETE", err, "is a pretrained end_to_end checkpoint; --model wants a sum_then_track")
	// A Track-then-Sum summarizer run into it is refused.
	task, _ := training.LookupTask(dataset.TaskSummarizer)
	err = task.Train(context.Background(), cfg, training.Request{Data: data, Out: ck, Log: testLog()})
	wantErr(t, "summarizer into an ete checkpoint", err, "holds a pretrained end_to_end checkpoint, not a summarizer one")
	if _, err := os.Stat(filepath.Join(ck, checkpoint.VariantFile)); err != nil {
		t.Errorf("the refused run removed variant.json: %v", err)
	}
}
