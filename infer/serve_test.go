package infer_test

// The tests against a real tracksum-serve live in the external test package: serve loads its
// models through infer, so infer's own tests cannot import it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/tracker"

	. "github.com/tracksum/tracksum/infer" //nolint:revive // the tests read as infer's own
	"github.com/tracksum/tracksum/serve"
	"github.com/tracksum/tracksum/serve/servetest"
)

func TestMain(m *testing.M) { os.Exit(servetest.Main(m)) }

// TestLLMMethodsAgainstTrackSumServe runs every LLM inference method end to end against a real
// tracksum-serve (tiny checkpoints, 127.0.0.1, real HTTP): each run completes with one prediction
// per instance and its stats file, the requests reach the server, and a rerun is answered from the
// cache (the server sees no new request) with identical predictions. The tiny seq2seq model cannot
// follow every instruction, so malformed answers are allowed here: they must be counted, not fatal.
func TestLLMMethodsAgainstTrackSumServe(t *testing.T) {
	if testing.Short() {
		t.Skip("trains tiny checkpoints (-short)")
	}
	o := serve.DefaultOptions()
	o.ModelName = "tiny"
	url, srv := servetest.Start(t, o)
	for _, tc := range []struct {
		desc string
		opts Options
	}{
		{"prompt", Options{Method: "prompt"}},
		{"intrinsic", Options{Method: "intrinsic"}},
		{"prior", Options{Method: "prior"}},
		{"posthoc", Options{Method: "posthoc"}},
		{"tracker and summarizer llm", Options{Tracker: LLMComponent, Summarizer: LLMComponent}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg := RefineConfig(t, url, "tiny")
			cfg.Infer.LLM.Demos = "testdata/instances.jsonl"
			run := func(out string) []byte {
				opts := tc.opts
				opts.Input, opts.Out, opts.Log = "testdata/instances.jsonl", out, Discard{}
				if _, err := Run(context.Background(), cfg, opts); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			before := srv.Stats().Served
			out := filepath.Join(t.TempDir(), "pred.jsonl")
			first := run(out)
			sent := srv.Stats().Served - before
			if sent == 0 {
				t.Fatal("no request reached tracksum-serve")
			}
			if n := len(ReadRefined(t, out)); n != 3 {
				t.Fatalf("%d predictions, want 3", n)
			}
			var st LLMStats
			b, err := os.ReadFile(StatsPath(out))
			if err != nil || json.Unmarshal(b, &st) != nil {
				t.Fatalf("stats file: %v", err)
			}
			if st.Client.Requests != sent || st.Model != "tiny" {
				t.Errorf("stats say %d requests to %q; the server saw %d", st.Client.Requests, st.Model, sent)
			}
			again := run(filepath.Join(t.TempDir(), "again.jsonl"))
			if got := srv.Stats().Served - before; got != sent {
				t.Errorf("the rerun sent %d requests, want 0 (cache)", got-sent)
			}
			if !bytes.Equal(first, again) {
				t.Errorf("the rerun's predictions differ:\n%s\n%s", first, again)
			}
		})
	}
}

// TestRefineAgainstTrackSumServe refines through a real tracksum-serve on a tiny model: the run
// completes with every round recorded, and a rerun sends no request (all answers cached).
func TestRefineAgainstTrackSumServe(t *testing.T) {
	o := serve.DefaultOptions()
	o.ModelName = "tiny"
	url, srv := servetest.Start(t, o)
	cfg := RefineConfig(t, url, "tiny")
	run := func() []RefinedPrediction {
		out := filepath.Join(t.TempDir(), "pred.jsonl")
		if _, err := Run(context.Background(), cfg, Options{Tracker: GoldTracker, Summarizer: ExtractiveSummarizer,
			Input: "testdata/instances.jsonl", Out: out, Refine: 1, Log: Discard{}}); err != nil {
			t.Fatal(err)
		}
		return ReadRefined(t, out)
	}
	first := run()
	served := srv.Stats().Served
	if served == 0 {
		t.Fatalf("no request reached the server")
	}
	for _, p := range first {
		if p.Summary != "Unknown." && (p.Refinement == nil || p.Refinement.Stop == "") {
			t.Errorf("%s/%s: refinement record %+v", p.PMID, p.Aspect, p.Refinement)
		}
	}
	second := run()
	if got := srv.Stats().Served; got != served {
		t.Errorf("rerun sent %d requests, want 0 (cache)", got-served)
	}
	for i := range first {
		if first[i].Summary != second[i].Summary {
			t.Errorf("rerun changed %s/%s: %q -> %q", first[i].PMID, first[i].Aspect, first[i].Summary, second[i].Summary)
		}
	}
}

// TestInferAndServeCiteTheSameSentences is the regression test of issue 34's defect: tracksum-serve
// took the tracker checkpoint's own threshold, tracksum-infer infer.threshold (0.5), so one
// checkpoint cited different sentences through the two commands. A tracker trained at
// tracker.threshold 0.3 is run by both with the built-in config on the prepared test split (the
// extractive summarizer, grounding off): every served answer cites the sentences infer cites.
func TestInferAndServeCiteTheSameSentences(t *testing.T) {
	_, _, data := servetest.Checkpoints(t)
	const recorded = 0.3
	trk := servetest.TrackerWith(t, func(cfg *config.Config) { cfg.Tracker.Threshold = recorded })
	cfg := config.Default()
	cfg.Infer.Grounding = "off"
	dir := t.TempDir()
	out, refs := filepath.Join(dir, "pred.jsonl"), filepath.Join(dir, "refs.jsonl")
	models := Options{Tracker: trk, Summarizer: ExtractiveSummarizer}
	o := models
	o.Input, o.Split, o.Out, o.Refs, o.Log = data, dataset.SplitTest, out, refs, Discard{}
	if _, err := Run(context.Background(), &cfg, o); err != nil {
		t.Fatal(err)
	}
	insts, err := dataset.ReadInstances(refs)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[[2]string][]string{}
	for _, in := range insts {
		docs[[2]string{in.PMID, in.Aspect}] = in.Document
	}
	b, err := serve.LoadTrackSumWith(context.Background(), &cfg, serve.TrackSumOptions{Models: models, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	citations := regexp.MustCompile(`\nCitations: (?:\[([0-9, ]*)\]|Null\.)$`)
	between, n := 0, 0
	for p := range readLines(t, out) {
		doc, ok := docs[[2]string{p.PMID, p.Aspect}]
		if !ok {
			t.Fatalf("prediction of %s/%s, which the references lack", p.PMID, p.Aspect)
		}
		for _, s := range p.Scores {
			if s >= recorded && s < DefaultThreshold {
				between++
			}
		}
		var prompt strings.Builder
		fmt.Fprintf(&prompt, "Aspect: %s\nDocument:\n", p.Aspect)
		for j, s := range doc {
			fmt.Fprintf(&prompt, "[%d] %s\n", j, s)
		}
		c, err := b.Complete(context.Background(), []serve.Message{{Role: "user", Content: prompt.String()}}, serve.Params{})
		if err != nil {
			t.Fatal(err)
		}
		m := citations.FindStringSubmatch(c.Content)
		if m == nil {
			t.Fatalf("%s/%s: answer %q has no citations line", p.PMID, p.Aspect, c.Content)
		}
		var served []int
		for _, f := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ',' || r == ' ' }) {
			i, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			served = append(served, i)
		}
		if !slices.Equal(served, p.Indexes) && len(served)+len(p.Indexes) > 0 {
			t.Errorf("%s/%s: serve cites %v, infer %v (scores %v)", p.PMID, p.Aspect, served, p.Indexes, p.Scores)
		}
		n++
	}
	if n == 0 || between == 0 {
		t.Fatalf("%d predictions, %d scores in [%g, %g): the test cannot tell the thresholds apart", n, between, recorded, DefaultThreshold)
	}
}

// readLines yields the predictions of the JSONL file path.
func readLines(t *testing.T, path string) func(func(dataset.Prediction) bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return func(yield func(dataset.Prediction) bool) {
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var p dataset.Prediction
			if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if !yield(p) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeptCheckpointsLoad (issue 36's gap in item 5): each evaluation checkpoint
// train.keep_checkpoints keeps is a checkpoint of its own: it opens verified as a tracker with its
// own manifest, and tracksum-infer --tracker OUT/checkpoints/step-N runs on it, scoring as that
// checkpoint's model does.
func TestKeptCheckpointsLoad(t *testing.T) {
	trk := servetest.TrackerWith(t, func(cfg *config.Config) {
		cfg.Tracker.Train.MaxSteps, cfg.Tracker.Train.EvalEvery, cfg.Tracker.Train.KeepCheckpoints = 3, 1, 2
	})
	_, _, data := servetest.Checkpoints(t)
	kept, err := filepath.Glob(filepath.Join(trk, checkpoint.KeptDir, "step-*"))
	if err != nil || len(kept) != 2 {
		t.Fatalf("kept %v (%v), want 2 step directories", kept, err)
	}
	cfg := config.Default()
	for _, dir := range kept {
		m, err := checkpoint.Open(context.Background(), dir)
		if err != nil || m.Kind != checkpoint.KindTracker || m.Migrated {
			t.Fatalf("%s: %+v, %v; want a sealed tracker checkpoint", dir, m, err)
		}
		tmp := t.TempDir()
		out, refs := filepath.Join(tmp, "pred.jsonl"), filepath.Join(tmp, "refs.jsonl")
		if _, err := Run(context.Background(), &cfg, Options{Tracker: dir, Input: data, Split: dataset.SplitTest, Out: out, Refs: refs, Log: Discard{}}); err != nil {
			t.Fatalf("infer --tracker %s: %v", dir, err)
		}
		insts, err := dataset.ReadInstances(refs)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := tracker.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for p := range readLines(t, out) {
			in := insts[slices.IndexFunc(insts, func(in dataset.Instance) bool { return in.PMID == p.PMID && in.Aspect == p.Aspect })]
			want, err := tr.ScoreBatch([]tracker.Request{{Doc: in.Document, Aspect: p.Aspect}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Scores, want[0]) {
				t.Fatalf("%s/%s: infer scores %v, the kept checkpoint's model %v", p.PMID, p.Aspect, p.Scores, want[0])
			}
			n++
		}
		if n == 0 {
			t.Fatalf("infer --tracker %s wrote no prediction", dir)
		}
	}
}
