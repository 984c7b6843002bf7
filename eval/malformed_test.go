package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/eval/facet"
	"github.com/tracksum/tracksum/eval/qaeval"
)

// rewritingLLM is scriptedLLM with each answer passed through rewrite(prompt, answer).
func rewritingLLM(t *testing.T, rewrite func(prompt, answer string) string) *httptest.Server {
	good, _ := scriptedLLM(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := readAll(r)
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		json.Unmarshal(body, &req)
		resp, err := http.Post(good.URL+r.URL.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		var ans struct {
			Choices []struct {
				Message struct{ Role, Content string } `json:"message"`
			} `json:"choices"`
		}
		json.NewDecoder(resp.Body).Decode(&ans)
		content := rewrite(req.Messages[len(req.Messages)-1].Content, ans.Choices[0].Message.Content)
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": content}}}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func readAll(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r.Body)
	return b.Bytes(), err
}

// TestMalformedAnswersNotMeaningful: an LLM metric whose answers are mostly malformed (a served
// summarizer answers every prompt with a summary) gets no score and fails the run, with one line
// per metric saying why, unless eval.llm.allow_malformed; it printed "fm 83.3 (n=12)" beside
// "122 malformed answers" (the 12 negative references, scored without asking).
func TestMalformedAnswersNotMeaningful(t *testing.T) {
	summary := func(string, string) string { return "Patients improved with the treatment." }
	for _, tc := range []struct {
		desc    string
		rewrite func(prompt, answer string) string
		allow   bool
		fail    bool     // the run fails with ErrMalformedAnswers
		refused []string // metrics without a score
	}{
		{desc: "every answer well-formed", rewrite: func(_, a string) string { return a }},
		{desc: "every answer a summary", rewrite: summary, fail: true, refused: []string{"fm", "qa"}},
		{desc: "every answer a summary, allowed", rewrite: summary, allow: true, refused: []string{"fm", "qa"}},
		// One grade in three answers per positive instance: a minority, still scored.
		{desc: "grades malformed", rewrite: func(p, a string) string {
			if strings.Contains(p, "ssess the alignment") {
				return "They align well."
			}
			return a
		}},
		{desc: "qa malformed only", rewrite: func(p, a string) string {
			if strings.Contains(p, "questions that test") || strings.Contains(p, "Answer each question") {
				return "Patients improved."
			}
			return a
		}, fail: true, refused: []string{"qa"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			srv := rewritingLLM(t, tc.rewrite)
			cfg := llmConfig(t, srv.URL)
			cfg.Eval.LLM.AllowMalformed = tc.allow
			out := filepath.Join(t.TempDir(), "eval")
			var tables bytes.Buffer
			o, err := Run(context.Background(), Options{Pred: "testdata/pred.jsonl", Ref: "testdata/ref.jsonl", Out: out, Config: cfg, Stdout: &tables})
			if tc.fail {
				if !errors.Is(err, ErrMalformedAnswers) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err %v, want one line with ErrMalformedAnswers", err)
				}
				for _, m := range tc.refused {
					if !strings.Contains(err.Error(), m+": ") {
						t.Errorf("err %q does not name %s", err, m)
					}
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("a refused run wrote %s", out)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			for _, m := range []string{"fm", "qa"} {
				line := m + ": not meaningful, no score: "
				refused := strings.Contains(strings.Join(tc.refused, ","), m)
				if strings.Contains(tables.String(), line) != refused {
					t.Errorf("tables say %q: %v, want %v:\n%s", line, !refused, refused, tables.String())
				}
			}
			if o == nil {
				return
			}
			for _, s := range o.LLMReport.Overall {
				refused := strings.Contains(strings.Join(tc.refused, ","), strings.SplitN(s.Name, "_", 2)[0])
				if refused != (s.Mean != s.Mean) && s.N > 0 {
					t.Errorf("%s: mean %v over %d instances; refused %v", s.Name, s.Mean, s.N, refused)
				}
			}
			b, err := os.ReadFile(filepath.Join(out, "llm_metrics.json"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "not_meaningful") != (len(tc.refused) > 0) {
				t.Errorf("llm_metrics.json: not_meaningful present %v, want %v", !(len(tc.refused) > 0), len(tc.refused) > 0)
			}
			page, err := os.ReadFile(filepath.Join(out, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(page), "is not meaningful and has no score") != (len(tc.refused) > 0) {
				t.Errorf("report.html: note on the refused metrics present %v, want %v", !(len(tc.refused) > 0), len(tc.refused) > 0)
			}
		})
	}
}

// TestCountAnswers: over half malformed is not meaningful; half or less is.
func TestCountAnswers(t *testing.T) {
	fm := func(answers, malformed int) LLMResult {
		return LLMResult{FM: &facet.Assessment{Answers: answers, Malformed: make([]string, malformed)}}
	}
	qa := func(answers, malformed int) LLMResult {
		return LLMResult{QA: &qaeval.Assessment{Answers: answers, Malformed: make([]string, malformed)}}
	}
	for _, tc := range []struct {
		desc    string
		res     []LLMResult
		metrics []string
		refused []bool
	}{
		{"no answers (negatives only)", []LLMResult{fm(0, 0)}, []string{"fm"}, []bool{false}},
		{"exactly half", []LLMResult{fm(3, 1), fm(1, 1)}, []string{"fm"}, []bool{false}},
		{"over half", []LLMResult{fm(3, 2), fm(1, 1)}, []string{"fm"}, []bool{true}},
		{"per metric", []LLMResult{fm(4, 0), qa(4, 3)}, []string{"fm", "qa"}, []bool{false, true}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := countAnswers(tc.res, tc.metrics, "m")
			if len(got) != len(tc.refused) {
				t.Fatalf("%d metrics, want %d", len(got), len(tc.refused))
			}
			for i, a := range got {
				if (a.NotMeaningful != "") != tc.refused[i] {
					t.Errorf("%s: %d of %d malformed: not meaningful %q, want %v", a.Metric, a.Malformed, a.Answers, a.NotMeaningful, tc.refused[i])
				}
			}
		})
	}
}
