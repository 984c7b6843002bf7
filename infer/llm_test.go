package infer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
	"github.com/tracksum/tracksum/llm"
	"github.com/tracksum/tracksum/llm/llmtest"
)

// fakeLLM answers the prompts of package llmmethods in their expected formats.
func fakeLLM(r llmtest.Received) string {
	p := r.Last()
	switch {
	case strings.Contains(p, "Demonstrations:"):
		return "Summary: Prompted summary.\nCitations: [0]"
	case strings.Contains(p, "Do three things"):
		return "Indices: [0]\nKey phrases: [\"drug X\"]\nSummary: Intrinsic summary."
	case strings.Contains(p, "Below are sentences about"):
		return "Summary: Prior summary."
	case strings.Contains(p, "and a summary of"), strings.Contains(p, "Do two things"):
		return "Indices: [0]\nKey phrases: [\"drug X\"]"
	case strings.Contains(p, "in one concise sentence. If the abstract"):
		return "Summary: Posthoc summary."
	case strings.Contains(p, "List the indices of the sentences that contain"):
		return "Indices: [0]"
	case strings.Contains(p, "Sentences:"):
		return "Summary: Prompted TTS summary."
	}
	return "?"
}

func llmConfig(t *testing.T, srv *llmtest.Server) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Eval.LLM.BaseURL = srv.URL + "/v1"
	cfg.Eval.LLM.CacheDir = t.TempDir()
	cfg.Eval.LLM.Backoff = time.Millisecond
	cfg.Eval.LLM.MaxRetries = 2
	cfg.Infer.LLM.Model = "fake-model"
	return &cfg
}

func readPreds(t *testing.T, path string) []dataset.Prediction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []dataset.Prediction
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var p dataset.Prediction
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, p)
	}
	return out
}

func TestRunLLMMethods(t *testing.T) {
	cases := []struct {
		desc                       string
		opts                       Options
		summary                    string
		phrases                    bool
		requestsPerPositive, total int64
	}{
		{"prompt", Options{Method: "prompt"}, "Prompted summary.", false, 1, 3},
		{"intrinsic", Options{Method: "intrinsic"}, "Intrinsic summary.", true, 1, 3},
		{"prior", Options{Method: "prior"}, "Prior summary.", true, 2, 6},
		{"posthoc", Options{Method: "posthoc"}, "Posthoc summary.", true, 2, 6},
		{"tracker and summarizer llm", Options{Tracker: LLMComponent, Summarizer: LLMComponent}, "Prompted TTS summary.", false, 2, 6},
		{"gold tracker, llm summarizer", Options{Tracker: GoldTracker, Summarizer: LLMComponent}, "Prompted TTS summary.", false, 1, 2},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			srv := llmtest.NewServer(fakeLLM)
			defer srv.Close()
			cfg := llmConfig(t, srv)
			cfg.Infer.LLM.Demos = "testdata/instances.jsonl"
			o := tc.opts
			o.Input = "testdata/instances.jsonl"
			o.Out = filepath.Join(t.TempDir(), "pred.jsonl")
			var log bytes.Buffer
			o.Log = &log
			if _, err := Run(context.Background(), cfg, o); err != nil {
				t.Fatal(err)
			}
			preds := readPreds(t, o.Out)
			if len(preds) != 3 {
				t.Fatalf("%d predictions, want 3", len(preds))
			}
			// The end-to-end methods summarize every instance, the gold tracker only the positive ones.
			for _, p := range preds {
				if tc.opts.Tracker == GoldTracker && p.Aspect == "s" {
					if p.Summary != "Unknown." {
						t.Errorf("negative instance: %+v", p)
					}
					continue
				}
				// The gold tracker cites the references' sentences, the fake model always sentence 0.
				if p.Summary != tc.summary || (tc.opts.Tracker != GoldTracker && !slices.Equal(p.Indexes, []int{0})) {
					t.Errorf("prediction %+v, want summary %q citing [0]", p, tc.summary)
				}
				if tc.phrases != (len(p.Phrases) > 0) {
					t.Errorf("phrases %q (want some: %v)", p.Phrases, tc.phrases)
				}
			}
			if srv.Requests() != tc.total {
				t.Errorf("%d requests, want %d", srv.Requests(), tc.total)
			}
			if got := srv.Received()[0].Model; got != "fake-model" {
				t.Errorf("model %q", got)
			}
			var st LLMStats
			b, err := os.ReadFile(StatsPath(o.Out))
			if err != nil || json.Unmarshal(b, &st) != nil {
				t.Fatalf("stats: %v", err)
			}
			if st.Client.Requests != tc.total || st.Answers.Answers != int(tc.total) || st.Answers.Malformed != 0 || st.Model != "fake-model" {
				t.Errorf("stats %s", b)
			}
			if !strings.Contains(log.String(), "infer: llm fake-model: ") || !strings.Contains(log.String(), "0 malformed") {
				t.Errorf("no summary line in the log:\n%s", log.String())
			}
			// The cache makes a rerun send no request and write the same predictions.
			first, _ := os.ReadFile(o.Out)
			o.Out = filepath.Join(t.TempDir(), "again.jsonl")
			if _, err := Run(context.Background(), cfg, o); err != nil {
				t.Fatal(err)
			}
			if srv.Requests() != tc.total {
				t.Errorf("the rerun sent %d requests, want 0", srv.Requests()-tc.total)
			}
			if again, _ := os.ReadFile(o.Out); !bytes.Equal(first, again) {
				t.Errorf("the rerun's predictions differ:\n%s\n%s", first, again)
			}
		})
	}
}

func TestRunLLMMalformedAnswersAreCounted(t *testing.T) {
	srv := llmtest.NewServer(func(llmtest.Received) string { return "Here is what I found: nothing in the right format" })
	defer srv.Close()
	cfg := llmConfig(t, srv)
	out := filepath.Join(t.TempDir(), "pred.jsonl")
	var log bytes.Buffer
	if _, err := Run(context.Background(), cfg, Options{Method: "intrinsic", Input: "testdata/instances.jsonl", Out: out, Log: &log}); err != nil {
		t.Fatal(err)
	}
	for _, p := range readPreds(t, out) {
		if p.Summary != "Unknown." || !slices.Equal(p.Problems, []string{"no_summary"}) {
			t.Errorf("malformed answer gave %+v", p)
		}
	}
	if !strings.Contains(log.String(), "3 answers, 3 malformed (3 no_summary)") {
		t.Errorf("log does not report the malformed answers:\n%s", log.String())
	}
}

func TestRunLLMOptionErrors(t *testing.T) {
	srv := llmtest.NewServer(fakeLLM)
	defer srv.Close()
	cases := []struct {
		desc string
		mod  func(*config.Config, *Options)
		want string
	}{
		{"method with tracker", func(_ *config.Config, o *Options) { o.Tracker = GoldTracker }, "leave out --tracker"},
		{"unknown method", func(_ *config.Config, o *Options) { o.Method = "magic" }, `unknown method "magic"`},
		{"no model", func(c *config.Config, _ *Options) { c.Infer.LLM.Model = "" }, "need a model"},
		{"prompt without demos", func(_ *config.Config, o *Options) { o.Method = "prompt" }, "--demos (infer.llm.demos) is required"},
		{"raw text demos", func(c *config.Config, o *Options) { o.Method = "prompt"; c.Infer.LLM.Demos = "testdata/abstracts.txt" }, "no reference summaries"},
	}
	for _, tc := range cases {
		cfg := llmConfig(t, srv)
		o := Options{Method: "intrinsic", Input: "testdata/instances.jsonl", Out: filepath.Join(t.TempDir(), "p.jsonl"), Log: discard{}}
		tc.mod(cfg, &o)
		_, err := Run(context.Background(), cfg, o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.desc, err, tc.want)
		}
		if _, err := os.Stat(o.Out); err == nil {
			t.Errorf("%s: an output was written", tc.desc)
		}
	}
}

// TestRunLLMEndpointFailures: a failing or slow endpoint ends the run with an error naming the
// endpoint and the status, within the configured timeouts, and writes no prediction file.
func TestRunLLMEndpointFailures(t *testing.T) {
	srv := llmtest.NewServer(fakeLLM)
	defer srv.Close()
	cases := []struct {
		desc  string
		reply llmtest.Reply
		want  []string
	}{
		{"503", llmtest.Reply{Status: 503, RetryAfter: "0"}, []string{"HTTP 503", "after 3 attempts"}},
		{"429", llmtest.Reply{Status: 429, RetryAfter: "0"}, []string{"HTTP 429"}},
		{"slow", llmtest.Reply{Delay: time.Minute}, []string{"no answer within the timeout 200ms"}},
	}
	for _, tc := range cases {
		cfg := llmConfig(t, srv)
		cfg.Eval.LLM.Timeout = 200 * time.Millisecond
		for range 50 {
			srv.Script(tc.reply)
		}
		out := filepath.Join(t.TempDir(), "p.jsonl")
		start := time.Now()
		_, err := Run(context.Background(), cfg, Options{Method: "posthoc", Input: "testdata/instances.jsonl", Out: out, Log: discard{}})
		if err == nil {
			t.Fatalf("%s: no error", tc.desc)
		}
		for _, w := range append(tc.want, srv.URL+"/v1/chat/completions") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.desc, err, w)
			}
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: the run took %v", tc.desc, d)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: predictions written despite the failure", tc.desc)
		}
		srv.ClearScript() // what the failed run left unused
	}
}

// TestRunLLMKeyNeverLeaks runs against an endpoint that echoes the request headers in its answers
// and in its errors: the API key must appear on no log line, in no error, output, stats or cache
// file.
func TestRunLLMKeyNeverLeaks(t *testing.T) {
	const key = "sk-never-leak-0123456789abcdef"
	srv := llmtest.NewServer(func(r llmtest.Received) string {
		var lines []string
		for name, v := range r.Header {
			lines = append(lines, name+": "+strings.Join(v, ","))
		}
		return "Indices: [0]\nKey phrases: [\"x\"]\nSummary: " + strings.Join(lines, "; ")
	})
	defer srv.Close()
	cfg := llmConfig(t, srv)
	t.Setenv(cfg.Eval.LLM.APIKeyEnv, key)
	dir := t.TempDir()
	out := filepath.Join(dir, "pred.jsonl")
	var log bytes.Buffer
	if _, err := Run(context.Background(), cfg, Options{Method: "intrinsic", Input: "testdata/instances.jsonl", Out: out, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Received()[0].Header.Get("Authorization"); got != "Bearer "+key {
		t.Fatalf("the key was not sent: %q", got)
	}
	for range 10 {
		srv.Script(llmtest.Reply{Status: 401, EchoHeaders: true})
	}
	cache1 := cfg.Eval.LLM.CacheDir
	cfg.Eval.LLM.CacheDir = filepath.Join(dir, "cache2")
	_, err := Run(context.Background(), cfg, Options{Method: "intrinsic", Input: "testdata/instances.jsonl", Out: filepath.Join(dir, "p2.jsonl"), Log: &log})
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("401: err = %v", err)
	}
	var all bytes.Buffer
	all.WriteString(log.String())
	all.WriteString(err.Error())
	for _, root := range []string{dir, cache1} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				all.Write(b)
			}
			return nil
		})
	}
	if strings.Contains(all.String(), key) {
		t.Errorf("the API key leaked")
	}
	if !strings.Contains(all.String(), "Bearer "+llm.Redacted) {
		t.Errorf("the echoed header is not in the outputs at all: the test checks nothing")
	}
	if errors.Is(err, llm.ErrUnreachable) {
		t.Errorf("a 401 is not an unreachable endpoint")
	}
}

// TestRunPromptDemosFromPreparedTrainSplit: with a prepared directory as input, the prompt method
// draws its demonstrations from the directory's train split, the same ones for every abstract.
func TestRunPromptDemosFromPreparedTrainSplit(t *testing.T) {
	cfg, err := config.ReadFile(filepath.Join("..", "configs", "tiny.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prepare.SampleSize = 40
	prep := preparetest.Dir(t, cfg)
	_, train, err := ReadInput(prep, dataset.SplitTrain, dataset.AspectSetTracSum, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	trainPMIDs := map[string]bool{}
	for _, in := range train {
		trainPMIDs[in.PMID] = true
	}
	srv := llmtest.NewServer(fakeLLM)
	defer srv.Close()
	lc := llmConfig(t, srv)
	cfg.Eval.LLM, cfg.Infer.LLM = lc.Eval.LLM, lc.Infer.LLM
	cfg.Infer.Aspects = []string{"a"}
	out := filepath.Join(t.TempDir(), "pred.jsonl")
	if _, err := Run(context.Background(), cfg, Options{Method: "prompt", Input: prep, Split: dataset.SplitTest, Out: out, Log: discard{}}); err != nil {
		t.Fatal(err)
	}
	var st LLMStats
	b, _ := os.ReadFile(StatsPath(out))
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	demos := st.Answers.Demos["a"]
	if len(demos) != 2 {
		t.Fatalf("demonstrations of aspect a: %v, want one positive and one negative", demos)
	}
	for _, pmid := range demos {
		if !trainPMIDs[pmid] {
			t.Errorf("demonstration %s is not from the train split", pmid)
		}
	}
	if srv.Requests() == 0 || int(srv.Requests()) != len(readPreds(t, out)) {
		t.Errorf("%d requests for %d predictions", srv.Requests(), len(readPreds(t, out)))
	}
}

func TestResolveAspect(t *testing.T) {
	cases := []struct {
		set, code, want string
		wantErr         bool
	}{
		{dataset.AspectSetTracSum, "a", "Aims", false},
		{dataset.AspectSetTracSum, "o", "Outcomes", false},
		// PCoA's upper-case codes resolve to PCoA's aspects even in a run that defaulted to TracSum.
		{dataset.AspectSetTracSum, "OB", "Objective", false},
		{dataset.AspectSetTracSum, "C", "Comparator", false},
		{dataset.AspectSetTracSum, "M", "Medicines", false},
		{dataset.AspectSetPCoA, "M", "Medicines", false},
		{dataset.AspectSetTracSum, "Side Effects", "Side Effects", false},
		{dataset.AspectSetTracSum, "zz", "", true},
	}
	for _, tc := range cases {
		a, err := resolveAspect(tc.set, tc.code)
		if (err != nil) != tc.wantErr || a.Name != tc.want {
			t.Errorf("resolveAspect(%s, %q) = %+v, %v; want %q", tc.set, tc.code, a, err, tc.want)
		}
	}
}

// TestRunPCoAAspects: PCoA instances run through a PCoA strategy with --aspects given in PCoA's
// codes when prepare.aspect_set says pcoa; the prompts name PCoA's aspect.
func TestRunPCoAAspects(t *testing.T) {
	in := filepath.Join(t.TempDir(), "pcoa.jsonl")
	rec := `{"PMID":"7","Document":["We compared drug X with placebo.","Drug X was given for 6 weeks."],"Aspect":"C","Summary":"Placebo.","Indexes":[0],"Phrases":["placebo"]}
{"PMID":"7","Document":["We compared drug X with placebo.","Drug X was given for 6 weeks."],"Aspect":"TD","Summary":"Six weeks.","Indexes":[1],"Phrases":["6 weeks"]}
`
	if err := os.WriteFile(in, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(fakeLLM)
	defer srv.Close()
	cfg := llmConfig(t, srv)
	cfg.Prepare.AspectSet = dataset.AspectSetPCoA
	cfg.Infer.Aspects = []string{"c"}
	out := filepath.Join(t.TempDir(), "pred.jsonl")
	if _, err := Run(context.Background(), cfg, Options{Method: "intrinsic", Input: in, Out: out, Log: discard{}}); err != nil {
		t.Fatal(err)
	}
	preds := readPreds(t, out)
	if len(preds) != 1 || preds[0].Aspect != "C" || len(preds[0].Phrases) == 0 {
		t.Fatalf("predictions %+v", preds)
	}
	if p := srv.Received()[0].Last(); !strings.Contains(p, "the Comparator of the study") {
		t.Errorf("the prompt does not name PCoA's aspect:\n%s", p)
	}
}
