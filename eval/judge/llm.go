package judge

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
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tracksum/tracksum/internal/atomicio"
)

// LLMOptions configures the llm judge (config keys eval.llm.*).
type LLMOptions struct {
	// BaseURL is the endpoint's base; requests go to BaseURL + "/chat/completions".
	BaseURL string
	// Model is sent with every request and is part of every cache key.
	Model string
	// APIKey is the bearer token (empty: no Authorization header). It is never logged or put in
	// an error message.
	APIKey string
	// CacheDir holds the answers; empty disables the cache.
	CacheDir string
	// Concurrency bounds the requests in flight (and is what Concurrency returns).
	Concurrency int
	// MaxRetries is the number of retries after a network error, a 429 or a 5xx answer.
	MaxRetries int
	// Backoff is the wait before the first retry; it doubles at each further retry.
	Backoff time.Duration
	// Timeout bounds each request.
	Timeout time.Duration
	// Client is the HTTP client (nil: a default one with Timeout).
	Client *http.Client
}

// LLM is a judge backed by an OpenAI-compatible chat-completions endpoint. Every answer is cached
// on disk under a key made of the model name and the prompt, so a rerun on the same inputs sends
// no request.
type LLM struct {
	opts   LLMOptions
	client *http.Client
	sem    chan struct{}
}

// ErrUnreachable marks an endpoint that could not be reached (connection refused, DNS, timeout)
// after all retries.
var ErrUnreachable = errors.New("llm endpoint unreachable")

// NewLLM returns an llm judge; it sends nothing until the first Decompose or Entails.
func NewLLM(opts LLMOptions) (*LLM, error) {
	if opts.BaseURL == "" || opts.Model == "" {
		return nil, errors.New("llm judge: base URL and model are required (eval.llm.base_url, eval.llm.model)")
	}
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	c := opts.Client
	if c == nil {
		c = &http.Client{Timeout: opts.Timeout}
	}
	return &LLM{opts: opts, client: c, sem: make(chan struct{}, opts.Concurrency)}, nil
}

// Name implements Judge.
func (j *LLM) Name() string { return "llm:" + j.opts.Model }

// Concurrency implements Judge.
func (j *LLM) Concurrency() int { return j.opts.Concurrency }

// Decompose implements Judge with the decomposition prompt (PCoA's Table 7, reworded).
func (j *LLM) Decompose(ctx context.Context, summary string) ([]string, error) {
	if IsUnknown(summary) {
		return nil, nil
	}
	answer, err := j.ask(ctx, DecomposePrompt(summary), func(a string) bool { return len(ParseClaims(a)) > 0 })
	if err != nil {
		return nil, err
	}
	return ParseClaims(answer), nil
}

// Entails implements Judge with the entailment prompt.
func (j *LLM) Entails(ctx context.Context, premise, hypothesis string) (bool, error) {
	if strings.TrimSpace(premise) == "" || strings.TrimSpace(hypothesis) == "" {
		return false, nil
	}
	answer, err := j.ask(ctx, EntailPrompt(premise, hypothesis), func(a string) bool {
		_, ok := ParseVerdict(a)
		return ok
	})
	if err != nil {
		return false, err
	}
	yes, _ := ParseVerdict(answer)
	return yes, nil
}

// DecomposePrompt is the decomposition prompt: PCoA's instruction (Table 7) in our own words, with
// our own demonstration.
func DecomposePrompt(summary string) string {
	return "Instructions:\n" +
		"Split the summary below into a list of atomic subclaims. Each subclaim must state exactly one fact " +
		"taken from the summary. Reply with a JSON list of sentences only, with no other text.\n\n" +
		"Demonstration:\n" +
		"Summary:\n" +
		"After a median follow-up of two years, no new safety signals appeared, and the adverse events matched those reported earlier for drug X.\n" +
		"List of subclaims:\n" +
		"[\"The median follow-up was two years.\", \"No new safety signals appeared.\", " +
		"\"The adverse events matched those reported earlier for drug X.\"]\n\n" +
		"Summary:\n" + strings.TrimSpace(summary) + "\n" +
		"List of subclaims:\n"
}

// EntailPrompt is the entailment prompt, in the spirit of the papers' NLI evaluator: one premise,
// one hypothesis, a yes/no answer.
func EntailPrompt(premise, hypothesis string) string {
	return "Instructions:\n" +
		"Decide whether the premise entails the hypothesis: given only the premise, must the hypothesis be true? " +
		"Numbers, doses, percentages, groups and negations must agree; an abbreviation may be read as its " +
		"expansion when the premise makes it clear. Reply with one word: yes or no.\n\n" +
		"Premise:\n" + strings.TrimSpace(premise) + "\n\n" +
		"Hypothesis:\n" + strings.TrimSpace(hypothesis) + "\n\n" +
		"Answer:\n"
}

// ParseClaims reads a decomposition answer: a JSON list of strings (possibly inside a code block or
// after some text), or else one claim per non-empty line with list markers removed.
func ParseClaims(answer string) []string {
	if i, k := strings.Index(answer, "["), strings.LastIndex(answer, "]"); i >= 0 && k > i {
		var list []string
		if err := json.Unmarshal([]byte(answer[i:k+1]), &list); err == nil {
			var out []string
			for _, s := range list {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
			return out
		}
	}
	var out []string
	for _, line := range strings.Split(answer, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimLeft(line, "-*•0123456789.) ")
		if line != "" && !strings.HasPrefix(line, "```") {
			out = append(out, line)
		}
	}
	return out
}

// ParseVerdict reads a yes/no answer; ok is false when the answer is neither.
func ParseVerdict(answer string) (yes, ok bool) {
	a := strings.ToLower(strings.TrimSpace(answer))
	a = strings.TrimLeft(a, "*\"'`([ ")
	switch {
	case strings.HasPrefix(a, "yes"), strings.HasPrefix(a, "entail"), strings.HasPrefix(a, "true"):
		return true, true
	case strings.HasPrefix(a, "no"), strings.HasPrefix(a, "not"), strings.HasPrefix(a, "false"),
		strings.HasPrefix(a, "contradict"), strings.HasPrefix(a, "neutral"):
		return false, true
	}
	return false, false
}

type cacheEntry struct {
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
	Answer string `json:"answer"`
}

func (j *LLM) cachePath(prompt string) string {
	h := sha256.Sum256([]byte(j.opts.Model + "\x00" + prompt))
	name := hex.EncodeToString(h[:])
	return filepath.Join(j.opts.CacheDir, name[:2], name+".json")
}

// ask returns the answer to prompt, from the cache or from the endpoint. usable says whether an
// answer can be used: an unusable answer is neither returned from the cache nor written to it,
// and is asked again (up to MaxRetries times), so that one odd reply cannot poison every rerun.
func (j *LLM) ask(ctx context.Context, prompt string, usable func(string) bool) (string, error) {
	var path string
	if j.opts.CacheDir != "" {
		path = j.cachePath(prompt)
		if b, err := os.ReadFile(path); err == nil {
			var e cacheEntry
			if json.Unmarshal(b, &e) == nil && e.Model == j.opts.Model && e.Prompt == prompt && usable(e.Answer) {
				return e.Answer, nil
			}
		}
	}
	var answer string
	for attempt := 0; attempt <= j.opts.MaxRetries; attempt++ {
		select {
		case j.sem <- struct{}{}:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		a, err := j.post(ctx, prompt)
		<-j.sem
		if err != nil {
			return "", err
		}
		answer = a
		if usable(answer) {
			break
		}
	}
	if !usable(answer) {
		return answer, fmt.Errorf("%w: %q", errUnusable, clip(answer, 80))
	}
	if path != "" {
		b, _ := json.Marshal(cacheEntry{Model: j.opts.Model, Prompt: prompt, Answer: answer})
		if err := atomicio.WriteFile(path, b, 0o644); err != nil {
			return "", fmt.Errorf("llm judge: cache: %w", err)
		}
	}
	return answer, nil
}

// errUnusable marks an answer that stayed unusable after the retries.
var errUnusable = errors.New("llm judge: unusable answer after retries")

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatResponse struct {
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
}

// post sends one chat completion with retries and exponential backoff.
func (j *LLM) post(ctx context.Context, prompt string) (string, error) {
	body, err := json.Marshal(chatRequest{
		Model:       j.opts.Model,
		Messages:    []chatMessage{{Role: "user", Content: prompt}},
		Temperature: 0,
	})
	if err != nil {
		return "", err
	}
	url := strings.TrimRight(j.opts.BaseURL, "/") + "/chat/completions"
	wait := j.opts.Backoff
	var lastErr error
	unreachable := false
	for attempt := 0; attempt <= j.opts.MaxRetries; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			wait *= 2
		}
		answer, retry, err := j.once(ctx, url, body)
		if err == nil {
			return answer, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		lastErr = err
		var ne netError
		unreachable = errors.As(err, &ne)
		if !retry {
			break
		}
	}
	if unreachable {
		return "", fmt.Errorf("llm judge: %w: %s after %d attempts (check eval.llm.base_url): %v",
			ErrUnreachable, url, j.opts.MaxRetries+1, lastErr)
	}
	return "", fmt.Errorf("llm judge: %s: %w", url, lastErr)
}

// netError wraps a transport failure (no HTTP answer at all).
type netError struct{ err error }

func (e netError) Error() string { return e.err.Error() }
func (e netError) Unwrap() error { return e.err }

// once sends one request; retry says whether the failure is worth another attempt.
func (j *LLM) once(ctx context.Context, url string, body []byte) (answer string, retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", false, err
	}
	req.Header.Set("Content-Type", "application/json")
	if j.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+j.opts.APIKey)
	}
	resp, err := j.client.Do(req)
	if err != nil {
		return "", true, netError{err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return "", true, netError{err}
	}
	if resp.StatusCode != http.StatusOK {
		retry := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		return "", retry, fmt.Errorf("HTTP %d: %s", resp.StatusCode, clip(j.redact(string(b)), 200))
	}
	var cr chatResponse
	if err := json.Unmarshal(b, &cr); err != nil {
		return "", false, fmt.Errorf("malformed chat-completions answer: %v", err)
	}
	if len(cr.Choices) == 0 {
		return "", false, errors.New("chat-completions answer has no choices")
	}
	return cr.Choices[0].Message.Content, false, nil
}

// redact removes the API key from text an endpoint sends back (some echo the request).
func (j *LLM) redact(s string) string {
	if j.opts.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, j.opts.APIKey, "[redacted]")
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
