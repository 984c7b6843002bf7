package judge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tracksum/tracksum/eval/judge/llmtest"
)

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
	srv := llmtest.NewServer()
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
	if got := srv.LastAuthorization(); got != "Bearer sekrit-key" {
		t.Errorf("Authorization header = %v", got)
	}
	if got := srv.LastModel(); got != "test-model" {
		t.Errorf("model = %v", got)
	}
	sent := srv.Requests()
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
	if srv.Requests() != sent {
		t.Errorf("rerun sent %d requests, want 0", srv.Requests()-sent)
	}
	// Another model does not reuse the answers.
	j3, _ := NewLLM(LLMOptions{BaseURL: srv.URL + "/v1", Model: "other", CacheDir: cache, MaxRetries: 0})
	if _, err := j3.Entails(ctx, "a b", "a"); err != nil {
		t.Fatal(err)
	}
	if srv.Requests() != sent+1 {
		t.Errorf("other model: requests = %d, want %d", srv.Requests(), sent+1)
	}
}

func TestLLMRetries(t *testing.T) {
	srv := llmtest.NewServer()
	srv.FailNext(2)
	defer srv.Close()
	j := newTestLLM(t, srv.URL, "")
	ok, err := j.Entails(context.Background(), "a b c", "a b")
	if err != nil || !ok {
		t.Fatalf("Entails after 2 failures = %v, %v", ok, err)
	}
	if srv.Requests() != 3 {
		t.Errorf("requests = %d, want 3 (2 failures + 1 success)", srv.Requests())
	}

	srv.FailNext(100)
	_, err = j.Entails(context.Background(), "x y", "x")
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("persistent 500: err = %v", err)
	}
}

func TestLLMUnusableAnswers(t *testing.T) {
	srv := llmtest.NewServer()
	defer srv.Close()
	cache := t.TempDir()
	j := newTestLLM(t, srv.URL, cache)
	srv.GarbleNext(2)
	ok, err := j.Entails(context.Background(), "a b c", "a b")
	if err != nil || !ok {
		t.Fatalf("after 2 unusable answers: %v, %v", ok, err)
	}
	if srv.Requests() != 3 {
		t.Errorf("requests = %d, want 3", srv.Requests())
	}
	srv.GarbleNext(100)
	if _, err := j.Entails(context.Background(), "x y z", "x y"); !errors.Is(err, errUnusable) {
		t.Fatalf("persistently unusable answer: err = %v", err)
	}
	srv.GarbleNext(0)
	// The unusable answer was not cached: a rerun asks again and gets a usable one.
	before := srv.Requests()
	ok, err = j.Entails(context.Background(), "x y z", "x y")
	if err != nil || !ok || srv.Requests() != before+1 {
		t.Errorf("rerun: %v, %v, %d requests", ok, err, srv.Requests()-before)
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

// TestLLMRefusalNotCached: a refusal to decompose is asked again and never cached.
func TestLLMRefusalNotCached(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		content := "I'm sorry, I can't help with that."
		if n.Add(1) > 1 {
			content = `["A."]`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":%q}}]}`, content)
	}))
	defer srv.Close()
	j := newTestLLM(t, srv.URL, t.TempDir())
	claims, err := j.Decompose(context.Background(), "A.")
	if err != nil || !slices.Equal(claims, []string{"A."}) || n.Load() != 2 {
		t.Fatalf("Decompose after a refusal = %q, %v (%d requests)", claims, err, n.Load())
	}
	if s := j.Stats(); s.Unusable != 1 || s.Requests != 2 {
		t.Errorf("stats: %+v", s)
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
		{"refusal", "I'm sorry, but I can't split this summary.", nil},
		{"refusal as a list", `I cannot do that. ["A."]`, nil},
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
		{"refusal", "I'm sorry, I cannot judge this.", false, false},
	}
	for _, c := range verdicts {
		if yes, ok := ParseVerdict(c.answer); yes != c.yes || ok != c.ok {
			t.Errorf("%s: ParseVerdict(%q) = %v, %v", c.desc, c.answer, yes, ok)
		}
	}
}
