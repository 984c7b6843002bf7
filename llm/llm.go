package llm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tracksum/tracksum/internal/atomicio"
)

// Message is one chat message.
type Message struct {
	// Role is "system", "user" or "assistant".
	Role string `json:"role"`
	// Content is the message text.
	Content string `json:"content"`
}

// Request is one chat completion. Nil pointers and zero values are left out of the request, so
// the endpoint's own defaults apply; every field that is sent is part of the cache key.
type Request struct {
	// Messages is the conversation, in order; it must not be empty.
	Messages []Message
	// Temperature is the sampling temperature (nil: the endpoint's default).
	Temperature *float64
	// TopP is the nucleus sampling mass (nil: the endpoint's default).
	TopP *float64
	// MaxTokens bounds the answer's length in tokens (0: the endpoint's default).
	MaxTokens int
	// Seed asks the endpoint for reproducible sampling where it supports it (nil: none).
	Seed *int64
	// Stop lists strings at which the endpoint stops generating.
	Stop []string
}

// Options configures a Client.
type Options struct {
	// BaseURL is the endpoint's base; requests go to BaseURL + "/chat/completions".
	BaseURL string
	// Model is sent with every request and is part of every cache key.
	Model string
	// APIKey is the bearer token (empty: no Authorization header). It is redacted from every
	// answer and error and never written to the cache.
	APIKey string
	// CacheDir holds the answers; empty disables the cache.
	CacheDir string
	// Concurrency bounds the requests in flight (< 1 means 1).
	Concurrency int
	// MaxRetries is the number of retries after a network error, a timeout, a 429 or a 5xx
	// answer, and also the number of times an unusable answer is asked again.
	MaxRetries int
	// Backoff is the wait before the first retry; it doubles at each further retry. A 429 or 503
	// answer with a Retry-After header waits what the header says instead.
	Backoff time.Duration
	// Timeout bounds each request, from sending it to reading the whole answer (<= 0: 60s). It also
	// caps the wait a Retry-After header may ask for: an endpoint asking for more fails the call.
	Timeout time.Duration
	// Client is the HTTP client (nil: a default one). Timeout applies either way.
	Client *http.Client
	// ConfigKey names the setting of BaseURL in errors about an unreachable endpoint, e.g.
	// "eval.llm.base_url" (empty: "the LLM base URL").
	ConfigKey string
}

// Stats counts what a Client did; see Client.Stats.
type Stats struct {
	// Calls is the number of Chat calls.
	Calls int64 `json:"calls"`
	// Requests is the number of HTTP requests sent, retries included.
	Requests int64 `json:"requests"`
	// CacheHits is the number of Chat calls answered from the cache without a request.
	CacheHits int64 `json:"cache_hits"`
	// Retries is the number of requests sent again after a failure or an unusable answer.
	Retries int64 `json:"retries"`
	// Unusable is the number of answers the caller's usable function rejected.
	Unusable int64 `json:"unusable"`
	// Failures is the number of Chat calls that returned an error.
	Failures int64 `json:"failures"`
}

// HitRate is the share of Chat calls answered from the cache (0 when there was none).
func (s Stats) HitRate() float64 {
	if s.Calls == 0 {
		return 0
	}
	return float64(s.CacheHits) / float64(s.Calls)
}

// String renders the stats for a summary line.
func (s Stats) String() string {
	return fmt.Sprintf("%d calls, %d requests, %d cache hits (%.1f%%), %d retries, %d unusable answers, %d failures",
		s.Calls, s.Requests, s.CacheHits, 100*s.HitRate(), s.Retries, s.Unusable, s.Failures)
}

var (
	// ErrUnreachable marks an endpoint that could not be reached or did not answer in time
	// (connection refused, DNS, timeout) after all retries.
	ErrUnreachable = errors.New("llm endpoint did not answer")
	// ErrUnusable marks an answer that the caller's usable function still rejected after all
	// retries; Chat returns that answer along with the error.
	ErrUnusable = errors.New("unusable answer after retries")
)

// StatusError is an HTTP answer other than 200 OK, after all retries (for errors.As).
type StatusError struct {
	// URL is the endpoint (redacted).
	URL string
	// Code is the HTTP status code.
	Code int
	// Body is the start of the answer's body (redacted).
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.Code, http.StatusText(e.Code), e.Body)
}

// Client sends chat completions to one endpoint and model. It is safe for concurrent use.
type Client struct {
	opts   Options
	url    string
	client *http.Client
	sem    chan struct{}

	calls, requests, hits, retries, unusable, failures atomic.Int64
}

// New returns a client; it sends nothing until the first Chat.
func New(opts Options) (*Client, error) {
	if opts.BaseURL == "" || opts.Model == "" {
		return nil, errors.New("llm: base URL and model are required")
	}
	if !strings.HasPrefix(opts.BaseURL, "http://") && !strings.HasPrefix(opts.BaseURL, "https://") {
		return nil, fmt.Errorf("llm: base URL %q must start with http:// or https://", Redact(opts.BaseURL, opts.APIKey))
	}
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	if opts.MaxRetries < 0 {
		opts.MaxRetries = 0
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.ConfigKey == "" {
		opts.ConfigKey = "the LLM base URL"
	}
	c := opts.Client
	if c == nil {
		// No client-level timeout: each request's context carries Options.Timeout, which also
		// bounds reading the body and applies to a caller's client as well.
		c = &http.Client{}
	}
	return &Client{
		opts:   opts,
		url:    strings.TrimRight(opts.BaseURL, "/") + "/chat/completions",
		client: c,
		sem:    make(chan struct{}, opts.Concurrency),
	}, nil
}

// Model returns the model name sent with every request.
func (c *Client) Model() string { return c.opts.Model }

// Endpoint returns the chat-completions URL, redacted.
func (c *Client) Endpoint() string { return c.redact(c.url) }

// Concurrency returns the bound on requests in flight.
func (c *Client) Concurrency() int { return c.opts.Concurrency }

// Stats returns what the client did so far.
func (c *Client) Stats() Stats {
	return Stats{
		Calls: c.calls.Load(), Requests: c.requests.Load(), CacheHits: c.hits.Load(),
		Retries: c.retries.Load(), Unusable: c.unusable.Load(), Failures: c.failures.Load(),
	}
}

// wireRequest is the chat-completions request body; its JSON encoding is also the cache key.
type wireRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature *float64  `json:"temperature,omitempty"`
	TopP        *float64  `json:"top_p,omitempty"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Seed        *int64    `json:"seed,omitempty"`
	Stop        []string  `json:"stop,omitempty"`
}

type cacheEntry struct {
	Model   string          `json:"model"`
	Request json.RawMessage `json:"request"`
	Answer  string          `json:"answer"`
}

// Chat returns the answer to req, from the cache or from the endpoint. usable says whether the
// caller can use an answer (nil: any answer that is not a refusal, see IsRefusal): an unusable
// answer is neither returned from the cache nor written to it, and is asked again up to
// MaxRetries times; if it stays unusable, Chat returns it with an error wrapping ErrUnusable, so
// that the caller may count it. Answers are redacted (see Redact) before anything else sees them.
func (c *Client) Chat(ctx context.Context, req Request, usable func(answer string) bool) (string, error) {
	c.calls.Add(1)
	answer, err := c.chat(ctx, req, usable)
	if err != nil {
		c.failures.Add(1)
	}
	return answer, err
}

func (c *Client) chat(ctx context.Context, req Request, usable func(string) bool) (string, error) {
	if usable == nil {
		usable = func(a string) bool { return !IsRefusal(a) }
	}
	if len(req.Messages) == 0 {
		return "", errors.New("llm: request has no messages")
	}
	body, err := json.Marshal(wireRequest{
		Model: c.opts.Model, Messages: req.Messages, Temperature: req.Temperature, TopP: req.TopP,
		MaxTokens: req.MaxTokens, Seed: req.Seed, Stop: req.Stop,
	})
	if err != nil {
		return "", fmt.Errorf("llm: encode request: %w", err)
	}
	// The cached copy of the request is redacted like everything else written to disk; the key
	// is the hash of the request actually sent, so two requests never share an entry.
	stored := json.RawMessage(c.redact(string(body)))
	var path string
	if c.opts.CacheDir != "" {
		h := sha256.Sum256(body)
		name := hex.EncodeToString(h[:])
		path = filepath.Join(c.opts.CacheDir, name[:2], name+".json")
		// A missing or damaged entry is a miss: the request is sent and the entry rewritten.
		var e cacheEntry
		if atomicio.ReadJSON(path, &e, false) == nil && e.Model == c.opts.Model && bytes.Equal(e.Request, stored) && usable(e.Answer) {
			c.hits.Add(1)
			return e.Answer, nil
		}
	}
	var answer string
	for attempt := 0; attempt <= c.opts.MaxRetries; attempt++ {
		if attempt > 0 {
			c.retries.Add(1)
		}
		a, err := c.post(ctx, body)
		if err != nil {
			return "", err
		}
		answer = c.redact(a)
		if usable(answer) {
			if path != "" {
				b, err := json.Marshal(cacheEntry{Model: c.opts.Model, Request: stored, Answer: answer})
				if err == nil {
					err = atomicio.WriteFile(path, b, 0o644)
				}
				if err != nil {
					return "", fmt.Errorf("llm: cache %s: %w", c.opts.CacheDir, err)
				}
			}
			return answer, nil
		}
		c.unusable.Add(1)
	}
	return answer, fmt.Errorf("llm: %s: %w (%d attempts): %q", c.Endpoint(), ErrUnusable,
		c.opts.MaxRetries+1, clip(answer, 80))
}

// netError wraps a transport failure (no HTTP answer at all).
type netError struct{ err error }

func (e netError) Error() string { return e.err.Error() }
func (e netError) Unwrap() error { return e.err }

// post sends one chat completion with retries: exponential backoff, or the wait a Retry-After
// header asks for.
func (c *Client) post(ctx context.Context, body []byte) (string, error) {
	wait := c.opts.Backoff
	var lastErr error
	for attempt := 0; attempt <= c.opts.MaxRetries; attempt++ {
		answer, retry, after, err := c.once(ctx, body)
		if err == nil {
			return answer, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		lastErr = err
		if !retry || attempt == c.opts.MaxRetries {
			break
		}
		d := wait
		if after >= 0 {
			if after > c.opts.Timeout {
				return "", fmt.Errorf("llm: %s: %s; the endpoint asks to retry after %s, more than the timeout %s",
					c.Endpoint(), err, after, c.opts.Timeout)
			}
			d = after
		}
		c.retries.Add(1)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		wait *= 2
	}
	attempts := c.opts.MaxRetries + 1
	var ne netError
	if errors.As(lastErr, &ne) {
		return "", fmt.Errorf("%w: %s (check %s): %v", ErrUnreachable, c.Endpoint(), c.opts.ConfigKey, lastErr)
	}
	var se *StatusError
	if errors.As(lastErr, &se) && (se.Code == http.StatusTooManyRequests || se.Code >= 500) {
		return "", fmt.Errorf("llm: %s: %w (after %d attempts)", c.Endpoint(), lastErr, attempts)
	}
	return "", fmt.Errorf("llm: %s: %w", c.Endpoint(), lastErr)
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// once sends one request under the concurrency bound and the per-request timeout. retry says
// whether the failure is worth another attempt; after is the Retry-After wait (-1: none).
func (c *Client) once(ctx context.Context, body []byte) (answer string, retry bool, after time.Duration, err error) {
	after = -1
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return "", false, after, ctx.Err()
	}
	defer func() { <-c.sem }()
	rctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return "", false, after, errors.New(c.redact(err.Error()))
	}
	req.Header.Set("Content-Type", "application/json")
	if c.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	c.requests.Add(1)
	resp, err := c.client.Do(req)
	if err != nil {
		return "", true, after, c.transportError(ctx, rctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return "", true, after, c.transportError(ctx, rctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		code := resp.StatusCode
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			after = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		return "", code == http.StatusTooManyRequests || code >= 500, after,
			&StatusError{URL: c.Endpoint(), Code: code, Body: clip(c.redact(string(b)), 200)}
	}
	var cr chatResponse
	if err := json.Unmarshal(b, &cr); err != nil {
		return "", false, after, fmt.Errorf("malformed chat-completions answer (%v): %s", err, clip(c.redact(string(b)), 120))
	}
	if len(cr.Choices) == 0 || cr.Choices[0].Message.Content == nil {
		return "", false, after, fmt.Errorf("chat-completions answer has no message content: %s", clip(c.redact(string(b)), 120))
	}
	return *cr.Choices[0].Message.Content, false, after, nil
}

// transportError describes a failure with no HTTP answer; a per-request timeout says so plainly.
func (c *Client) transportError(ctx, rctx context.Context, err error) error {
	var te interface{ Timeout() bool }
	if ctx.Err() == nil && (rctx.Err() != nil || errors.As(err, &te) && te.Timeout()) {
		return netError{fmt.Errorf("no answer within the timeout %s", c.opts.Timeout)}
	}
	return netError{errors.New(c.redact(err.Error()))}
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date; -1 when absent or invalid.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return -1
	}
	if s, err := strconv.Atoi(h); err == nil {
		if s < 0 {
			return -1
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
		return 0
	}
	return -1
}

func (c *Client) redact(s string) string { return Redact(s, c.opts.APIKey) }

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
