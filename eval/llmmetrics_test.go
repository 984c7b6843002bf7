package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tracksum/tracksum/config"
)

// between returns the text of s between after and before.
func between(s, after, before string) string {
	i := strings.Index(s, after)
	if i < 0 {
		return ""
	}
	s = s[i+len(after):]
	if j := strings.Index(s, before); j >= 0 {
		s = s[:j]
	}
	return s
}

// scriptedLLM is a real HTTP endpoint that follows the FM and QA prompts mechanically: an
// extraction puts the whole text in the "result" facet, a grade is 4 for identical segments and 2
// otherwise, every text gets one question, and answers repeat the text.
func scriptedLLM(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		p := req.Messages[len(req.Messages)-1].Content
		var answer string
		switch {
		case strings.Contains(p, "Extract the segment of the input"):
			text := strings.TrimSuffix(p[strings.Index(p, "Input:\n")+len("Input:\n"):], "\n")
			b, _ := json.Marshal(map[string]string{"background": "", "method": "", "result": text, "conclusion": ""})
			answer = string(b)
		case strings.Contains(p, "ssess the alignment"):
			answer = "2"
			if between(p, "Input1: ", "\nInput2: ") == between(p, "\nInput2: ", "\nNumber:") {
				answer = "4"
			}
		case strings.Contains(p, "questions that test"):
			answer = "Question [1]: What does the text say?\nAnswer: " + between(p, "Text:\n", "\n\nQuestions:")
		case strings.Contains(p, "Answer each question"):
			answer = "Question: What does the text say?\nAnswer: what the text says"
		default:
			answer = "unexpected prompt"
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": answer}}}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func llmConfig(t *testing.T, url string) *config.Config {
	cfg := config.Default()
	cfg.Eval.Metrics = []string{"fm", "qa"}
	cfg.Eval.LLM.BaseURL, cfg.Eval.LLM.Model, cfg.Eval.LLM.CacheDir = url, "m", t.TempDir()
	cfg.Eval.LLM.MaxRetries, cfg.Eval.Bootstrap.Resamples = 0, 50
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

func readLines(t *testing.T, path string) []map[string]json.RawMessage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestLLMMetricsScripted checks the numbers FM and QA give through the whole eval path (real
// HTTP, instances.jsonl, llm_metrics.json, report.html, agreement).
func TestLLMMetricsScripted(t *testing.T) {
	srv, _ := scriptedLLM(t)
	cfg := llmConfig(t, srv.URL)
	out := filepath.Join(t.TempDir(), "eval")
	o, err := Run(context.Background(), Options{Pred: "testdata/pred.jsonl", Ref: "testdata/ref.jsonl", Out: out, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, filepath.Join(out, "instances.jsonl"))
	var human strings.Builder
	defined := 0
	for i, l := range lines {
		p := &o.Pairs[i]
		var scores map[string]float64
		json.Unmarshal(l["scores"], &scores)
		fm, ok := scores["fm"]
		// Only the result facet is extracted: grade 4 of 4 (1) for identical summaries, 2 of 4
		// ((2-1)/3) otherwise, and the lowest grade (0, no grading request) for a negative
		// prediction; a negative reference scores 1 against a negative prediction, 0 against a
		// positive one (issue 24: false positives lower FM).
		var want float64
		switch {
		case p.Ref.IsNegative() && p.Pred.IsNegative():
			want = 1
		case p.Ref.IsNegative(), p.Pred.IsNegative():
			want = 0
		case p.Ref.Summary == p.Pred.Summary:
			want = 1
		default:
			want = 1.0 / 3
		}
		if !ok || math.Abs(fm-want) > 1e-12 {
			t.Errorf("%s/%s: fm = %v (%v), want %v", p.Ref.PMID, p.Ref.Aspect, fm, ok, want)
		}
		if _, ok := l["fm_detail"]; !ok {
			t.Errorf("instances.jsonl line %d has no fm_detail object", i+1)
		}
		if _, ok := scores["qa_coverage"]; !ok && !p.Ref.IsNegative() {
			t.Errorf("%s/%s: no qa_coverage", p.Ref.PMID, p.Ref.Aspect)
		}
		defined++
		fmt.Fprintf(&human, `{"PMID":%q,"Aspect":%q,"fm":%g}`+"\n", p.Ref.PMID, p.Ref.Aspect, 2*fm+1)
	}
	if defined < 3 {
		t.Fatalf("only %d instances with FM", defined)
	}
	for _, f := range []string{"llm_metrics.json", "report.html"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "report.html" && (!strings.Contains(string(b), "Facet-aware metric (FM)") || !strings.Contains(string(b), "QA coverage") ||
			!strings.Contains(string(b), `<table class="summary" id="t-llm">`)) {
			t.Errorf("report.html shows no LLM metric details or table")
		}
	}
	// agreement correlates fm with human scores (here a linear function of it: r = 1).
	hp := filepath.Join(t.TempDir(), "human.jsonl")
	os.WriteFile(hp, []byte(human.String()), 0o644)
	cs, err := Agreement(filepath.Join(out, "instances.jsonl"), hp)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Metric != "fm" || cs[0].N != defined || math.Abs(cs[0].Pearson-1) > 1e-9 {
		t.Errorf("agreement = %+v, want fm with r = 1 over %d instances", cs, defined)
	}
}

// TestLLMMetricsFailingEndpoint: an endpoint that starts failing stops the run with an error naming
// it and the status, and the answers received before stay cached (a rerun after the endpoint
// recovers asks only for the rest).
func TestLLMMetricsFailingEndpoint(t *testing.T) {
	good, _ := scriptedLLM(t)
	var n, fail atomic.Int64
	fail.Store(1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 3 && fail.Load() == 1 {
			http.Error(w, "overloaded", http.StatusInternalServerError)
			return
		}
		// Forward to the scripted endpoint.
		resp, err := http.Post(good.URL+r.URL.Path, "application/json", r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, resp.Body)
	}))
	defer srv.Close()
	cfg := llmConfig(t, srv.URL)
	cfg.Eval.Metrics = []string{"fm"}
	cfg.Eval.LLM.Concurrency = 1
	_, err := Run(context.Background(), Options{Pred: "testdata/pred.jsonl", Ref: "testdata/ref.jsonl", Config: cfg})
	if err == nil || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "500") {
		t.Fatalf("error = %v, want one naming %s and the status 500", err, srv.URL)
	}
	cached, _ := filepath.Glob(filepath.Join(cfg.Eval.LLM.CacheDir, "*", "*.json"))
	if len(cached) != 3 {
		t.Errorf("%d cached answers, want the 3 received before the failure", len(cached))
	}
	fail.Store(0)
	before := n.Load()
	out, err := Run(context.Background(), Options{Pred: "testdata/pred.jsonl", Ref: "testdata/ref.jsonl", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if c := out.LLMReport.Client; c.CacheHits < 3 || c.Requests != n.Load()-before {
		t.Errorf("rerun: client %+v, want the 3 cached answers reused", c)
	}
}
