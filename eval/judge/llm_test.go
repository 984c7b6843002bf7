package judge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeLLM speaks the OpenAI chat-completions protocol: it splits summaries at ". " for the
// decomposition prompt and answers "yes" to the entailment prompt when every word of the hypothesis
// occurs in the premise.
type fakeLLM struct {
	requests atomic.Int64
	fail     atomic.Int64 // answer 500 to this many requests first
	auth     atomic.Value // last Authorization header
	model    atomic.Value
}

func (f *fakeLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	f.auth.Store(r.Header.Get("Authorization"))
	if f.fail.Load() > 0 {
		f.fail.Add(-1)
		http.Error(w, "overloaded", http.StatusInternalServerError)
		return
	}
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 1 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.model.Store(req.Model)
	prompt := req.Messages[0].Content
	var answer string
	switch {
	case strings.Contains(prompt, "List of subclaims:"):
		i := strings.LastIndex(prompt, "Summary:\n")
		k := strings.LastIndex(prompt, "\nList of subclaims:")
		var claims []string
		for _, s := range strings.Split(prompt[i+len("Summary:\n"):k], ". ") {
			s = strings.TrimSuffix(strings.TrimSpace(s), ".")
			claims = append(claims, s+".")
		}
		b, _ := json.Marshal(claims)
		answer = "Here is the list:\n" + string(b)
	case strings.Contains(prompt, "Hypothesis:"):
		p := between(prompt, "Premise:\n", "\n\nHypothesis:")
		h := between(prompt, "Hypothesis:\n", "\n\nAnswer:")
		answer = "Yes."
		for _, w := range strings.Fields(strings.ToLower(strings.Trim(h, "."))) {
			if !strings.Contains(strings.ToLower(p), w) {
				answer = "No, it does not."
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "x", "object": "chat.completion",
		"choices": []map[string]any{{"index": 0, "message": map[string]string{"role": "assistant", "content": answer}, "finish_reason": "stop"}},
	})
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	k := strings.Index(s, b)
	if i < 0 || k < i {
		return ""
	}
	return s[i+len(a) : k]
}

func newTestLLM(t *testing.T, url, cache string) *LLM {
	t.Helper()
	j, err := NewLLM(LLMOptions{BaseURL: url + "/v1", Model: "test-model", APIKey: "sekrit-key", CacheDir: cache,
		Concurrency: 2, MaxRetries: 3, Backoff: time.Millisecond, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestLLMJudgeAndCache(t *testing.T) {
	f := &fakeLLM{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	cache := t.TempDir()
	ctx := context.Background()

	j := newTestLLM(t, srv.URL, cache)
	claims, err := j.Decompose(ctx, "The trial enrolled 120 adults. Rash occurred in 8 adults.")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"The trial enrolled 120 adults.", "Rash occurred in 8 adults."}; !slices.Equal(claims, want) {
		t.Errorf("Decompose = %q, want %q", claims, want)
	}
	yes, err := j.Entails(ctx, "The trial enrolled 120 adults with melanoma.", "The trial enrolled 120 adults.")
	if err != nil || !yes {
		t.Errorf("Entails = %v, %v; want true", yes, err)
	}
	no, err := j.Entails(ctx, "The trial enrolled 120 adults.", "Rash occurred.")
	if err != nil || no {
		t.Errorf("Entails = %v, %v; want false", no, err)
	}
	if got := f.auth.Load(); got != "Bearer sekrit-key" {
		t.Errorf("Authorization header = %v", got)
	}
	if got := f.model.Load(); got != "test-model" {
		t.Errorf("model = %v", got)
	}
	sent := f.requests.Load()
	if sent != 3 {
		t.Errorf("requests = %d, want 3", sent)
	}

	// A new judge on the same cache answers everything without a request.
	j2 := newTestLLM(t, srv.URL, cache)
	if _, err := j2.Decompose(ctx, "The trial enrolled 120 adults. Rash occurred in 8 adults."); err != nil {
		t.Fatal(err)
	}
	if ok, _ := j2.Entails(ctx, "The trial enrolled 120 adults with melanoma.", "The trial enrolled 120 adults."); !ok {
		t.Error("cached entailment changed")
	}
	if f.requests.Load() != sent {
		t.Errorf("rerun sent %d requests, want 0", f.requests.Load()-sent)
	}
	// Another model does not reuse the answers.
	j3, _ := NewLLM(LLMOptions{BaseURL: srv.URL + "/v1", Model: "other", CacheDir: cache, MaxRetries: 0})
	if _, err := j3.Entails(ctx, "a b", "a"); err != nil {
		t.Fatal(err)
	}
	if f.requests.Load() != sent+1 {
		t.Errorf("other model: requests = %d, want %d", f.requests.Load(), sent+1)
	}
}

func TestLLMRetries(t *testing.T) {
	f := &fakeLLM{}
	f.fail.Store(2)
	srv := httptest.NewServer(f)
	defer srv.Close()
	j := newTestLLM(t, srv.URL, "")
	ok, err := j.Entails(context.Background(), "a b c", "a b")
	if err != nil || !ok {
		t.Fatalf("Entails after 2 failures = %v, %v", ok, err)
	}
	if f.requests.Load() != 3 {
		t.Errorf("requests = %d, want 3 (2 failures + 1 success)", f.requests.Load())
	}

	f.fail.Store(100)
	_, err = j.Entails(context.Background(), "x y", "x")
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("persistent 500: err = %v", err)
	}
}

func TestLLMUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	j := newTestLLM(t, url, "")
	_, err := j.Entails(context.Background(), "a", "a")
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	if strings.Contains(err.Error(), "sekrit") {
		t.Errorf("error leaks the API key: %v", err)
	}
	if !strings.Contains(err.Error(), "eval.llm.base_url") {
		t.Errorf("error does not say what to check: %v", err)
	}
}

func TestLLMClientErrorNotRetried(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		// Some servers echo the request; the key must not come back in our error.
		http.Error(w, "invalid key "+r.Header.Get("Authorization"), http.StatusUnauthorized)
	}))
	defer srv.Close()
	j := newTestLLM(t, srv.URL, "")
	_, err := j.Entails(context.Background(), "a", "a")
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "sekrit-key") {
		t.Errorf("error leaks the API key: %v", err)
	}
	if n.Load() != 1 {
		t.Errorf("a 401 was retried: %d requests", n.Load())
	}
}

func TestParseClaimsAndVerdict(t *testing.T) {
	claims := []struct {
		desc   string
		answer string
		want   []string
	}{
		{"json list", `["A.", "B."]`, []string{"A.", "B."}},
		{"code block", "```json\n[\"A.\"]\n```", []string{"A."}},
		{"bulleted lines", "- A.\n- B.\n", []string{"A.", "B."}},
		{"numbered lines", "1. A.\n2) B.", []string{"A.", "B."}},
	}
	for _, c := range claims {
		if got := ParseClaims(c.answer); !slices.Equal(got, c.want) {
			t.Errorf("%s: ParseClaims = %q, want %q", c.desc, got, c.want)
		}
	}
	verdicts := []struct {
		desc    string
		answer  string
		yes, ok bool
	}{
		{"yes", "Yes.", true, true}, {"no", "no", false, true}, {"bold", "**Yes**", true, true},
		{"label", "Entailment", true, true}, {"neutral", "neutral", false, true}, {"other", "maybe", false, false},
	}
	for _, c := range verdicts {
		if yes, ok := ParseVerdict(c.answer); yes != c.yes || ok != c.ok {
			t.Errorf("%s: ParseVerdict(%q) = %v, %v", c.desc, c.answer, yes, ok)
		}
	}
}
