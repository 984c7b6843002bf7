// Package llmtest is a local HTTP server that speaks the OpenAI chat-completions protocol well
// enough to test the llm judge without a model: it decomposes summaries by splitting them at ". "
// and answers "Yes." to an entailment prompt when every word of the hypothesis occurs in the
// premise. It counts requests and can fail on purpose.
//
// # Example
//
//	srv := llmtest.NewServer()
//	defer srv.Close()
//	cfg.LLM.BaseURL = srv.URL + "/v1"
package llmtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
)

// Server is a fake chat-completions endpoint at URL + "/v1/chat/completions".
type Server struct {
	*httptest.Server
	requests atomic.Int64
	fail     atomic.Int64
	garble   atomic.Int64
	mu       sync.Mutex
	auth     string
	model    string
}

// NewServer starts a server; Close it when done.
func NewServer() *Server {
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Requests returns the number of requests received so far.
func (s *Server) Requests() int64 { return s.requests.Load() }

// FailNext makes the next n requests answer HTTP 500.
func (s *Server) FailNext(n int64) { s.fail.Store(n) }

// GarbleNext makes the next n requests answer text that is neither a list nor a verdict.
func (s *Server) GarbleNext(n int64) { s.garble.Store(n) }

// LastAuthorization returns the Authorization header of the last request.
func (s *Server) LastAuthorization() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth
}

// LastModel returns the model named by the last request.
func (s *Server) LastModel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model
}

type request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	s.auth = r.Header.Get("Authorization")
	s.mu.Unlock()
	if s.fail.Load() > 0 {
		s.fail.Add(-1)
		http.Error(w, "overloaded", http.StatusInternalServerError)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.model = req.Model
	s.mu.Unlock()
	answer := Answer(req.Messages[len(req.Messages)-1].Content)
	if s.garble.Load() > 0 {
		s.garble.Add(-1)
		answer = "I would rather not say."
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "model": req.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]string{"role": "assistant", "content": answer}}},
	})
}

// Answer is the server's reply to a prompt of the llm judge.
func Answer(prompt string) string {
	switch {
	case strings.Contains(prompt, "List of subclaims:"):
		i := strings.LastIndex(prompt, "Summary:\n")
		k := strings.LastIndex(prompt, "\nList of subclaims:")
		if i < 0 || k < i {
			return "[]"
		}
		var claims []string
		for _, c := range strings.Split(prompt[i+len("Summary:\n"):k], ". ") {
			if c = strings.TrimSuffix(strings.TrimSpace(c), "."); c != "" {
				claims = append(claims, c+".")
			}
		}
		b, _ := json.Marshal(claims)
		return "Here is the list:\n" + string(b)
	case strings.Contains(prompt, "Hypothesis:"):
		p := strings.ToLower(between(prompt, "Premise:\n", "\n\nHypothesis:"))
		h := strings.ToLower(between(prompt, "Hypothesis:\n", "\n\nAnswer:"))
		for _, w := range strings.Fields(strings.NewReplacer(".", " ", ",", " ").Replace(h)) {
			if !strings.Contains(p, w) {
				return "No, it does not."
			}
		}
		return "Yes."
	}
	return "I do not understand."
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	k := strings.Index(s, b)
	if i < 0 || k < i+len(a) {
		return ""
	}
	return s[i+len(a) : k]
}
