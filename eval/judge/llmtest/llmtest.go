// Package llmtest is a local chat-completions server (llm/llmtest's scripted server) that answers
// the llm judge's prompts well enough to test it without a model: it decomposes summaries by
// splitting them at ". " and answers "Yes." to an entailment prompt when every word of the
// hypothesis occurs in the premise. It counts requests and can fail on purpose.
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
	"strings"

	"github.com/tracksum/tracksum/llm/llmtest"
)

// Server is a fake chat-completions endpoint at URL + "/v1/chat/completions".
type Server struct {
	*llmtest.Server
}

// NewServer starts a server; Close it when done.
func NewServer() *Server {
	return &Server{llmtest.NewServer(func(r llmtest.Received) string { return Answer(r.Last()) })}
}

// FailNext makes the next n requests answer HTTP 500 (and cancels an earlier FailNext or
// GarbleNext).
func (s *Server) FailNext(n int64) {
	s.ClearScript()
	for range n {
		s.Script(llmtest.Reply{Status: http.StatusInternalServerError, Body: "overloaded"})
	}
}

// GarbleNext makes the next n requests answer text that is neither a list nor a verdict (and
// cancels an earlier FailNext or GarbleNext).
func (s *Server) GarbleNext(n int64) {
	s.ClearScript()
	for range n {
		s.Script(llmtest.Reply{Content: "I would rather not say."})
	}
}

// LastAuthorization returns the Authorization header of the last request.
func (s *Server) LastAuthorization() string {
	if rs := s.Received(); len(rs) > 0 {
		return rs[len(rs)-1].Header.Get("Authorization")
	}
	return ""
}

// LastModel returns the model named by the last request.
func (s *Server) LastModel() string {
	if rs := s.Received(); len(rs) > 0 {
		return rs[len(rs)-1].Model
	}
	return ""
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
