package infer

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/qaeval"
)

// refinedPrediction is a prediction with its Refinement read back as the record qaeval wrote.
type refinedPrediction struct {
	dataset.Prediction
	Refinement *qaeval.Refinement `json:"Refinement,omitempty"`
}

func readPredictions(t *testing.T, path string) []refinedPrediction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []refinedPrediction
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var p refinedPrediction
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func refineConfig(t *testing.T, url, model string) *config.Config {
	cfg := config.Default()
	cfg.Eval.LLM.BaseURL, cfg.Eval.LLM.Model, cfg.Eval.LLM.CacheDir, cfg.Eval.LLM.MaxRetries = url, model, t.TempDir(), 0
	cfg.Infer.Workers = 1
	return &cfg
}

// TestRefineScripted refines the extractive baseline against an endpoint that answers LongSumEval's
// prompts mechanically: the revision adds the missing dose, which raises coverage, so the revised
// summary is kept and both rounds are recorded.
func TestRefineScripted(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		p := req.Messages[0].Content
		var a string
		switch {
		case strings.Contains(p, "Missing information"):
			a = "Revised summary: Patients received drug X 20 mg daily for 8 weeks."
		case strings.Contains(p, "of the source text"):
			a = "Question [1]: What dose?\nAnswer: 20 mg daily"
		case strings.Contains(p, "of the summary text"):
			a = "Question [1]: How long?\nAnswer: 8 weeks"
		case strings.Contains(p, "what the summary states") && strings.Contains(p, "20 mg"):
			a = "Answer: 20 mg daily"
		case strings.Contains(p, "what the summary states"):
			a = "Answer: UNANSWERABLE"
		case strings.Contains(p, "what the document states"):
			a = "Answer: 8 weeks"
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": a}}}})
		w.Write(b)
	}))
	defer srv.Close()
	cfg := refineConfig(t, srv.URL, "m")
	cfg.Eval.QA.Source = "document"
	out := filepath.Join(t.TempDir(), "pred.jsonl")
	// The gold tracker and the extractive summarizer give the cited sentences as summaries.
	if _, err := Run(context.Background(), cfg, Options{Tracker: GoldTracker, Summarizer: ExtractiveSummarizer,
		Input: "testdata/instances.jsonl", Out: out, Refine: 2, Log: discard{}}); err != nil {
		t.Fatal(err)
	}
	preds := readPredictions(t, out)
	var refined int
	for _, p := range preds {
		if p.Summary == "Unknown." {
			if p.Refinement != nil {
				t.Errorf("%s/%s: a negative prediction was refined", p.PMID, p.Aspect)
			}
			continue
		}
		if p.Refinement == nil || len(p.Refinement.Rounds) < 1 {
			t.Fatalf("%s/%s: no refinement record", p.PMID, p.Aspect)
		}
		refined++
		r := p.Refinement
		if p.Summary != r.Final() {
			t.Errorf("%s/%s: Summary %q is not the kept round's %q", p.PMID, p.Aspect, p.Summary, r.Final())
		}
		if r.Rounds[0].Assessment.Coverage == nil {
			t.Errorf("%s/%s: round 0 has no coverage", p.PMID, p.Aspect)
		}
	}
	if refined != 2 {
		t.Errorf("%d predictions refined, want 2", refined)
	}
	// PMID 100/i copies "Patients received 20 mg daily for 8 weeks.": it answers the dose
	// question and meets both targets, so it is not revised. PMID 200/p ("Children with asthma
	// were enrolled.") does not: it is revised once, and the revision, which does, is kept.
	for _, p := range preds {
		if p.PMID == "100" && p.Aspect == "i" && (len(p.Refinement.Rounds) != 1 || p.Refinement.Stop != "targets met") {
			t.Errorf("PMID 100/i: %+v", p.Refinement)
		}
		if p.PMID == "200" {
			if len(p.Refinement.Rounds) != 2 || p.Refinement.Best != 1 || p.Summary != "Patients received drug X 20 mg daily for 8 weeks." {
				t.Errorf("PMID 200: %+v", p.Refinement)
			}
		}
	}
}
