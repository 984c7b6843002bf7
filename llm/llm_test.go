package llm_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tracksum/tracksum/llm"
	"github.com/tracksum/tracksum/llm/llmtest"
)

const testKey = "sekrit-key-0042"

func newClient(t *testing.T, url, cache string, mod func(*llm.Options)) *llm.Client {
	t.Helper()
	o := llm.Options{BaseURL: url + "/v1", Model: "test-model", APIKey: testKey, CacheDir: cache,
		Concurrency: 2, MaxRetries: 2, Backoff: time.Millisecond, Timeout: 5 * time.Second}
	if mod != nil {
		mod(&o)
	}
	c, err := llm.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func user(s string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: "user", Content: s}}}
}

func ptr[T any](v T) *T { return &v }

// cacheText returns every cache file's content, concatenated.
func cacheText(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(p)
			b.Write(data)
		}
		return nil
	})
	return b.String()
}

func TestChatSendsRequestAndCacheMakesRerunSendNothing(t *testing.T) {
	srv := llmtest.NewServer(func(r llmtest.Received) string { return "echo: " + r.Last() })
	defer srv.Close()
	cache := t.TempDir()
	ctx := context.Background()
	req := llm.Request{
		Messages:    []llm.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi."}},
		Temperature: ptr(1.0), TopP: ptr(0.9), MaxTokens: 64, Seed: ptr(int64(7)), Stop: []string{"\n\n"},
	}
	c := newClient(t, srv.URL, cache, nil)
	got, err := c.Chat(ctx, req, nil)
	if err != nil || got != "echo: Hi." {
		t.Fatalf("Chat = %q, %v", got, err)
	}
	rec := srv.Received()[0]
	if rec.Model != "test-model" || len(rec.Messages) != 2 || rec.Messages[0].Role != "system" ||
		*rec.Temperature != 1 || *rec.TopP != 0.9 || rec.MaxTokens != 64 || *rec.Seed != 7 || rec.Stop[0] != "\n\n" {
		t.Errorf("request as received: %+v", rec)
	}
	if a := rec.Header.Get("Authorization"); a != "Bearer "+testKey {
		t.Errorf("Authorization = %q", a)
	}

	// A new client on the same cache answers without a request.
	c2 := newClient(t, srv.URL, cache, nil)
	if got, err := c2.Chat(ctx, req, nil); err != nil || got != "echo: Hi." {
		t.Fatalf("cached Chat = %q, %v", got, err)
	}
	if srv.Requests() != 1 {
		t.Errorf("rerun sent %d requests, want 0", srv.Requests()-1)
	}
	if s := c2.Stats(); s.Calls != 1 || s.CacheHits != 1 || s.Requests != 0 || s.HitRate() != 1 {
		t.Errorf("stats of the rerun: %+v", s)
	}
	// Every part of the request is part of the key: another temperature, seed or model asks again.
	for _, mod := range []func(*llm.Request){
		func(r *llm.Request) { r.Temperature = ptr(0.0) },
		func(r *llm.Request) { r.Seed = nil },
		func(r *llm.Request) { r.Messages = r.Messages[1:] },
	} {
		r := req
		mod(&r)
		before := srv.Requests()
		if _, err := c2.Chat(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
		if srv.Requests() != before+1 {
			t.Errorf("a different request was answered from the cache")
		}
	}
	other := newClient(t, srv.URL, cache, func(o *llm.Options) { o.Model = "other" })
	before := srv.Requests()
	if _, err := other.Chat(ctx, req, nil); err != nil || srv.Requests() != before+1 {
		t.Errorf("another model reused the cache: %v", err)
	}
	if strings.Contains(cacheText(t, cache), testKey) {
		t.Error("the API key is in the cache")
	}
}

func TestChatRetriesUnusableAndRefusalsWithoutCachingThem(t *testing.T) {
	srv := llmtest.NewServer(func(llmtest.Received) string { return "Summary: fine." })
	defer srv.Close()
	cache := t.TempDir()
	ctx := context.Background()
	c := newClient(t, srv.URL, cache, nil)

	srv.Script(llmtest.Reply{Content: "I'm sorry, but I can't help with that."})
	got, err := c.Chat(ctx, user("a"), nil)
	if err != nil || got != "Summary: fine." || srv.Requests() != 2 {
		t.Fatalf("after a refusal: %q, %v, %d requests", got, err, srv.Requests())
	}

	refusal := "I cannot provide medical summaries."
	srv.Script(llmtest.Reply{Content: refusal}, llmtest.Reply{Content: refusal}, llmtest.Reply{Content: refusal})
	got, err = c.Chat(ctx, user("b"), nil)
	if !errors.Is(err, llm.ErrUnusable) || got != refusal {
		t.Fatalf("persistent refusal: %q, %v", got, err)
	}
	if !strings.Contains(err.Error(), c.Endpoint()) {
		t.Errorf("error does not name the endpoint: %v", err)
	}
	if strings.Contains(cacheText(t, cache), refusal) {
		t.Error("a refusal was cached")
	}
	// Not cached: the rerun asks again and gets a usable answer.
	before := srv.Requests()
	if got, err := c.Chat(ctx, user("b"), nil); err != nil || got != "Summary: fine." || srv.Requests() != before+1 {
		t.Errorf("rerun after refusal: %q, %v, %d requests", got, err, srv.Requests()-before)
	}

	// The caller's usable function decides: a malformed answer is asked again.
	usable := func(a string) bool { return strings.HasPrefix(a, "Summary:") }
	srv.Script(llmtest.Reply{Content: "Here you go"})
	if got, err := c.Chat(ctx, user("c"), usable); err != nil || got != "Summary: fine." {
		t.Errorf("after a malformed answer: %q, %v", got, err)
	}
	if s := c.Stats(); s.Unusable != 5 || s.Failures != 1 || s.Calls != 4 {
		t.Errorf("stats: %+v", s)
	}
}

func TestChatRetryAfterAndBackoff(t *testing.T) {
	srv := llmtest.NewServer(nil)
	defer srv.Close()
	ctx := context.Background()
	c := newClient(t, srv.URL, "", func(o *llm.Options) { o.Backoff = time.Millisecond })

	// Retry-After: 1 is honoured although the backoff is 1ms.
	srv.Script(llmtest.Reply{Status: http.StatusTooManyRequests, RetryAfter: "1"})
	start := time.Now()
	if got, err := c.Chat(ctx, user("a"), nil); err != nil || got != "OK." {
		t.Fatalf("after a 429: %q, %v", got, err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("waited %v after Retry-After: 1", waited)
	}

	// A 503 without the header falls back to the backoff.
	srv.Script(llmtest.Reply{Status: http.StatusServiceUnavailable}, llmtest.Reply{Status: http.StatusBadGateway})
	before := srv.Requests()
	if _, err := c.Chat(ctx, user("b"), nil); err != nil || srv.Requests() != before+3 {
		t.Fatalf("after 503 and 502: %v, %d requests", err, srv.Requests()-before)
	}

	// Persistent 5xx: the error names the endpoint, the status and the attempts.
	srv.Script(llmtest.Reply{Status: 503}, llmtest.Reply{Status: 503}, llmtest.Reply{Status: 503})
	_, err := c.Chat(ctx, user("c"), nil)
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Code != 503 {
		t.Fatalf("persistent 503: %v", err)
	}
	for _, want := range []string{srv.URL + "/v1/chat/completions", "HTTP 503", "after 3 attempts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}

	// An endpoint asking to wait longer than the timeout fails at once instead of hanging.
	short := newClient(t, srv.URL, "", func(o *llm.Options) { o.Timeout = 200 * time.Millisecond })
	srv.Script(llmtest.Reply{Status: http.StatusTooManyRequests, RetryAfter: "3600"})
	start = time.Now()
	_, err = short.Chat(ctx, user("d"), nil)
	if err == nil || !strings.Contains(err.Error(), "HTTP 429") || !strings.Contains(err.Error(), "retry after 1h0m0s") ||
		!strings.Contains(err.Error(), srv.URL) {
		t.Errorf("long Retry-After: %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("long Retry-After waited %v", time.Since(start))
	}
}

func TestChatClientErrorsAreNotRetried(t *testing.T) {
	srv := llmtest.NewServer(nil)
	defer srv.Close()
	c := newClient(t, srv.URL, "", nil)
	cases := []struct {
		desc  string
		reply llmtest.Reply
		want  string
	}{
		{"bad request", llmtest.Reply{Status: 400, Body: "context too long"}, "HTTP 400 Bad Request: context too long"},
		{"not found", llmtest.Reply{Status: 404, Body: "no such model"}, "HTTP 404"},
		{"malformed json", llmtest.Reply{Body: "{not json"}, "malformed chat-completions answer"},
		{"no choices", llmtest.Reply{Body: `{"choices":[]}`}, "no message content"},
	}
	for _, tc := range cases {
		srv.Script(tc.reply)
		before := srv.Requests()
		_, err := c.Chat(context.Background(), user(tc.desc), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), c.Endpoint()) {
			t.Errorf("%s: err = %v, want it to name %q and the endpoint", tc.desc, err, tc.want)
		}
		if n := srv.Requests() - before; n != 1 {
			t.Errorf("%s: %d requests, want 1 (no retry)", tc.desc, n)
		}
	}
}

func TestChatTimeoutNeverHangs(t *testing.T) {
	srv := llmtest.NewServer(nil)
	defer srv.Close()
	c := newClient(t, srv.URL, "", func(o *llm.Options) { o.Timeout = 100 * time.Millisecond; o.MaxRetries = 1 })
	srv.Script(llmtest.Reply{Delay: time.Minute}, llmtest.Reply{Delay: time.Minute})
	start := time.Now()
	_, err := c.Chat(context.Background(), user("slow"), nil)
	if !errors.Is(err, llm.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	for _, want := range []string{"no answer within the timeout 100ms", srv.URL + "/v1/chat/completions"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("two timed-out attempts took %v", d)
	}
	// A slow answer within the timeout is fine.
	srv.Script(llmtest.Reply{Delay: 20 * time.Millisecond, Content: "late"})
	if got, err := c.Chat(context.Background(), user("ok"), nil); err != nil || got != "late" {
		t.Errorf("slow answer: %q, %v", got, err)
	}
}

func TestChatUnreachableNamesConfigKey(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := newClient(t, url, "", func(o *llm.Options) { o.ConfigKey = "eval.llm.base_url" })
	_, err := c.Chat(context.Background(), user("a"), nil)
	if !errors.Is(err, llm.ErrUnreachable) || !strings.Contains(err.Error(), "eval.llm.base_url") ||
		!strings.Contains(err.Error(), url) {
		t.Fatalf("err = %v", err)
	}
}

func TestChatBoundsConcurrency(t *testing.T) {
	var inFlight, peak atomic.Int64
	srv := llmtest.NewServer(func(llmtest.Received) string {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		inFlight.Add(-1)
		return "OK."
	})
	defer srv.Close()
	c := newClient(t, srv.URL, "", func(o *llm.Options) { o.Concurrency = 3 })
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Chat(context.Background(), user(strings.Repeat("x", i+1)), nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > 3 || p < 2 {
		t.Errorf("peak requests in flight = %d, want at most 3 (and some overlap)", p)
	}
}

// TestAPIKeyNeverLeaks uses an endpoint that echoes the request headers, in answers and in
// errors: the key must appear in neither what Chat returns nor the cache.
func TestAPIKeyNeverLeaks(t *testing.T) {
	srv := llmtest.NewServer(nil)
	defer srv.Close()
	cache := t.TempDir()
	c := newClient(t, srv.URL, cache, nil)
	srv.Script(llmtest.Reply{EchoHeaders: true})
	got, err := c.Chat(context.Background(), user("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, testKey) || !strings.Contains(got, "Authorization: Bearer [redacted]") {
		t.Errorf("echoed answer not redacted: %q", got)
	}
	for _, status := range []int{401, 500} {
		srv.Script(llmtest.Reply{Status: status, EchoHeaders: true}, llmtest.Reply{Status: status, EchoHeaders: true},
			llmtest.Reply{Status: status, EchoHeaders: true})
		_, err = c.Chat(context.Background(), user("b"), nil)
		if err == nil || strings.Contains(err.Error(), testKey) {
			t.Errorf("HTTP %d echo: err = %v", status, err)
		}
	}
	if text := cacheText(t, cache); strings.Contains(text, testKey) || text == "" {
		t.Errorf("cache holds the key (or nothing): %q", text)
	}
	// A key in the base URL (some proxies take it as a query parameter) is redacted too.
	k := newClient(t, srv.URL, "", func(o *llm.Options) { o.BaseURL = srv.URL + "/v1?key=" + testKey })
	if strings.Contains(k.Endpoint(), testKey) {
		t.Errorf("endpoint shows the key: %s", k.Endpoint())
	}
}

func TestRedact(t *testing.T) {
	cases := []struct {
		desc, in, want string
	}{
		{"key", "got " + testKey + " here", "got [redacted] here"},
		{"header", "Authorization: Bearer abcdefgh12345", "Authorization: Bearer [redacted]"},
		{"json field", `{"authorization":"Basic dXNlcjpwYXNz"}`, `{"authorization":"Basic [redacted]"}`},
		{"bare bearer", "token bearer eyJhbGciOiJIUzI1NiJ9.x", "token bearer [redacted]"},
		{"prose bearer", "the bearer of bad news", "the bearer of bad news"},
		{"hosted key", "key sk-proj-abcdefghijklmnop1234", "key [redacted]"},
		{"nothing", "Summary: fine.", "Summary: fine."},
		{"idempotent", "Authorization: Bearer [redacted]", "Authorization: Bearer [redacted]"},
	}
	for _, tc := range cases {
		if got := llm.Redact(tc.in, testKey); got != tc.want {
			t.Errorf("%s: Redact(%q) = %q, want %q", tc.desc, tc.in, got, tc.want)
		}
	}
}

func TestIsRefusal(t *testing.T) {
	cases := []struct {
		answer string
		want   bool
	}{
		{"I'm sorry, but I can't help with that.", true},
		{"I’m sorry, I cannot do this.", true},
		{"I cannot provide medical advice.", true},
		{"I am unable to summarize this text.", true},
		{"As an AI language model, I ...", true},
		{"Sorry, I won't.", true},
		{"Unfortunately, I cannot comply.", true},
		{"Summary: The trial enrolled 120 adults.\nCitations: [1]", false},
		{"Unknown.", false},
		{"Summary: Patients said \"I'm sorry\" less often.", false},
		{"No, it does not.", false},
		{"", false},
	}
	for _, tc := range cases {
		if got := llm.IsRefusal(tc.answer); got != tc.want {
			t.Errorf("IsRefusal(%q) = %v, want %v", tc.answer, got, tc.want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	for _, o := range []llm.Options{
		{Model: "m"},
		{BaseURL: "http://x/v1"},
		{BaseURL: "localhost:8000/v1", Model: "m"},
	} {
		if _, err := llm.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

func TestChatHonoursCancellation(t *testing.T) {
	srv := llmtest.NewServer(nil)
	defer srv.Close()
	c := newClient(t, srv.URL, "", nil)
	srv.Script(llmtest.Reply{Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Chat(ctx, user("a"), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's error", err)
	}
}
