// Package llmtest is a scripted OpenAI-compatible chat-completions server for tests of the llm
// client and of the methods built on it: each request gets the next scripted Reply (a status, a
// Retry-After header, a malformed body, a delay, an echo of the request headers), or, once the
// script is used up, the answer of a Responder. It records every request it receives.
//
// # Example
//
//	srv := llmtest.NewServer(func(r llmtest.Received) string { return "Summary: ..." })
//	defer srv.Close()
//	srv.Script(llmtest.Reply{Status: 429, RetryAfter: "1"})
//	c, _ := llm.New(llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracksum/tracksum/llm"
)

// Reply is one scripted answer.
type Reply struct {
	// Status is the HTTP status (0: 200).
	Status int
	// RetryAfter, when not empty, is sent as the Retry-After header.
	RetryAfter string
	// Content is the assistant message of a 200 answer (ignored when Body is set).
	Content string
	// Body, when not empty, is sent verbatim instead of a chat-completions answer.
	Body string
	// Delay holds the answer back (the request's cancellation ends it early).
	Delay time.Duration
	// EchoHeaders answers with the request's headers, one "Name: value" per line, as content of
	// a 200 answer or as the body of an error status: what a careless proxy might do.
	EchoHeaders bool
}

// Received is one request as the server saw it.
type Received struct {
	// Model is the model named by the request.
	Model string
	// Messages is the conversation sent.
	Messages []llm.Message
	// Temperature, TopP, MaxTokens, Seed and Stop are the sampling parameters sent (nil or zero
	// when absent).
	Temperature *float64
	TopP        *float64
	MaxTokens   int
	Seed        *int64
	Stop        []string
	// Header is the request's headers.
	Header http.Header
}

// Last returns the content of the last message (the prompt of a one-turn request).
func (r Received) Last() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Content
}

// Responder answers a request once the script is used up.
type Responder func(r Received) string

// Server is a fake chat-completions endpoint at URL + "/v1/chat/completions".
type Server struct {
	*httptest.Server
	respond  Responder
	requests atomic.Int64
	mu       sync.Mutex
	script   []Reply
	received []Received
}

// NewServer starts a server that answers with respond (nil: "OK.") once the script is used up;
// Close it when done.
func NewServer(respond Responder) *Server {
	if respond == nil {
		respond = func(Received) string { return "OK." }
	}
	s := &Server{respond: respond}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Script queues replies for the next requests, in order.
func (s *Server) Script(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// ClearScript drops the scripted replies not used yet.
func (s *Server) ClearScript() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = nil
}

// Requests returns the number of requests received so far.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Received returns a copy of the requests received so far, in arrival order.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

type wire struct {
	Model       string        `json:"model"`
	Messages    []llm.Message `json:"messages"`
	Temperature *float64      `json:"temperature"`
	TopP        *float64      `json:"top_p"`
	MaxTokens   int           `json:"max_tokens"`
	Seed        *int64        `json:"seed"`
	Stop        []string      `json:"stop"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req wire
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	rec := Received{Model: req.Model, Messages: req.Messages, Temperature: req.Temperature, TopP: req.TopP,
		MaxTokens: req.MaxTokens, Seed: req.Seed, Stop: req.Stop, Header: r.Header.Clone()}
	s.mu.Lock()
	s.received = append(s.received, rec)
	var reply Reply
	scripted := len(s.script) > 0
	if scripted {
		reply, s.script = s.script[0], s.script[1:]
	}
	s.mu.Unlock()
	if !scripted {
		reply = Reply{Content: s.respond(rec)}
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	content := reply.Content
	if reply.EchoHeaders {
		content = dumpHeaders(r.Header)
	}
	if status != http.StatusOK {
		if reply.Body == "" {
			reply.Body = content
		}
		http.Error(w, reply.Body, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if reply.Body != "" {
		fmt.Fprint(w, reply.Body)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "model": req.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]string{"role": "assistant", "content": content}}},
	})
}

func dumpHeaders(h http.Header) string {
	var lines []string
	for name, values := range h {
		lines = append(lines, name+": "+strings.Join(values, ", "))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
