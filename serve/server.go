package serve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracksum/tracksum/config"
)

// Options configures a Server.
type Options struct {
	// Listen is the TCP address, e.g. 127.0.0.1:8000 (port 0: any free port).
	Listen string
	// ModelName is the id served by /v1/models; a request naming another model gets 404
	// (an empty "model" field is accepted).
	ModelName string
	// Workers is the number of requests the model runs at once.
	Workers int
	// Queue is the number of admitted requests that may wait for a worker; beyond Workers+Queue
	// a request is answered 429 with Retry-After.
	Queue int
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// BodyTimeout bounds the reading of a request body (408 beyond). The body is read before
	// the request takes a place among the Workers+Queue, so that clients trickling their bodies
	// cannot hold every place and starve the others (issue 22 defect 8).
	BodyTimeout time.Duration
	// RequestTimeout bounds a request from admission to answer, queueing included (504 beyond).
	RequestTimeout time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests after SIGTERM/SIGINT.
	ShutdownTimeout time.Duration
	// RetryAfter is the Retry-After of a 429 answer (rounded up to whole seconds, at least 1).
	RetryAfter time.Duration
	// WriteTimeout bounds the write of each part of an answer (a streamed chunk, or the whole
	// answer otherwise): a client that stops reading loses its connection then, rather than
	// holding it for RequestTimeout plus 10 s. 0 is DefaultWriteTimeout.
	WriteTimeout time.Duration
	// APIKey, when not empty, is the bearer token every /v1 request must carry (401 otherwise).
	APIKey string
	// LogPrompts adds the messages to the access log lines (off by default: prompts may hold
	// private text).
	LogPrompts bool
	// Log receives one JSON line per request (and one when listening and when stopped).
	Log io.Writer
}

// DefaultWriteTimeout is Options.WriteTimeout's default: a reading client takes a chunk within
// milliseconds.
const DefaultWriteTimeout = 10 * time.Second

// DefaultOptions returns the defaults of tracksum-serve's flags.
func DefaultOptions() Options {
	c := config.DefaultServe() // the serve.* keys' defaults, which are tracksum-serve's
	return Options{
		Listen: c.Listen, ModelName: c.ModelName, Workers: c.Workers, Queue: c.Queue, MaxBodyBytes: c.MaxBodyBytes,
		BodyTimeout: c.BodyTimeout, RequestTimeout: c.RequestTimeout, ShutdownTimeout: c.ShutdownTimeout, RetryAfter: time.Second,
		WriteTimeout: DefaultWriteTimeout,
	}
}

// Validate reports invalid options, naming the flag.
func (o Options) Validate() error {
	var errs []error
	if o.ModelName == "" {
		errs = append(errs, errors.New("--model-name must not be empty"))
	}
	if o.Workers < 1 {
		errs = append(errs, errors.New("--workers must be >= 1"))
	}
	if o.Queue < 0 {
		errs = append(errs, errors.New("--queue must be >= 0"))
	}
	if o.MaxBodyBytes < 1 {
		errs = append(errs, errors.New("--max-body-bytes must be >= 1"))
	}
	if o.BodyTimeout <= 0 {
		errs = append(errs, errors.New("--body-timeout must be > 0"))
	}
	if o.RequestTimeout <= 0 {
		errs = append(errs, errors.New("--request-timeout must be > 0"))
	}
	if o.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("--shutdown-timeout must be > 0"))
	}
	return errors.Join(errs...)
}

// Server is an OpenAI-compatible chat-completions server over a Backend.
type Server struct {
	opts    Options
	backend Backend
	// admitted counts the requests past admission (running or waiting for a worker).
	admitted atomic.Int64
	slots    chan struct{}
	ids      atomic.Uint64
	created  int64
	logMu    sync.Mutex
	// Counters for Stats.
	served, rejected, failed atomic.Int64
}

// New returns a server for backend; it listens on nothing until Serve.
func New(backend Backend, o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = time.Second
	}
	return &Server{opts: o, backend: backend, slots: make(chan struct{}, o.Workers), created: time.Now().Unix()}, nil
}

// Stats counts the chat requests a server answered.
type Stats struct {
	// Served were answered 200; Rejected got 429 (queue full); Failed got another error status.
	Served, Rejected, Failed int64
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	return Stats{Served: s.served.Load(), Rejected: s.rejected.Load(), Failed: s.failed.Load()}
}

// Handler returns the HTTP routes: POST /v1/chat/completions, POST /v1/completions, GET
// /v1/models, GET /v1/models/{id}, GET /health; any other path is a JSON 404 as OpenAI's API
// answers it (SDKs parse the error body).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.chat)
	mux.HandleFunc("/v1/completions", s.completions)
	mux.HandleFunc("/v1/models", s.models)
	mux.HandleFunc("/v1/models/", s.model)
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"status\":\"ok\",\"in_flight\":%d}\n", s.admitted.Load())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, http.StatusNotFound, "invalid_request_error", "not_found",
			fmt.Sprintf("no route %s %s (this server has POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /v1/models/{id}, GET /health)", r.Method, r.URL.Path))
	})
	return s.logged(mux)
}

// Serve answers requests on ln until ctx is cancelled, then stops accepting connections, drains
// the requests in flight (at most ShutdownTimeout) and returns nil; an unfinished drain is an
// error.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// The body must arrive within the request timeout; the answer may take the request
		// timeout plus the time to write it.
		ReadTimeout:    s.opts.RequestTimeout,
		WriteTimeout:   s.opts.RequestTimeout + 10*time.Second,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
		BaseContext:    func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	s.event("listening", s.listeningFields(ln.Addr().String()))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.event("draining", map[string]any{"in_flight": s.admitted.Load()})
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %d requests still in flight after %s: %w", s.admitted.Load(), s.opts.ShutdownTimeout, err)
	}
	s.event("stopped", map[string]any{"served": s.served.Load(), "rejected": s.rejected.Load(), "failed": s.failed.Load()})
	return nil
}

// listeningFields are the "listening" line's: the address, the model, the mode and the requests
// really answered at once (a chat model answers one at a time whatever --workers says).
func (s *Server) listeningFields(addr string) map[string]any {
	f := map[string]any{"addr": addr, "model": s.opts.ModelName, "workers": s.opts.Workers, "queue": s.opts.Queue,
		"concurrency": s.opts.Workers}
	if d, ok := s.backend.(describedBackend); ok {
		f["mode"] = d.Mode()
		if c := d.Concurrency(); c > 0 && c < s.opts.Workers {
			f["concurrency"] = c
		}
	}
	return f
}

// ListenAndServe listens on Options.Listen and calls Serve.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", s.opts.Listen, err)
	}
	return s.Serve(ctx, ln)
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r, http.MethodGet) {
		return
	}
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelInfo{{
		ID: s.opts.ModelName, Object: "model", Created: s.created, OwnedBy: "tracksum",
	}}})
}

// model is GET /v1/models/{id}: the served model, or a 404 naming it.
func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r, http.MethodGet) {
		return
	}
	id := strings.TrimPrefix(r.URL.Path, "/v1/models/")
	if id != s.opts.ModelName {
		s.fail(w, http.StatusNotFound, "invalid_request_error", "model_not_found",
			fmt.Sprintf("model %q is not served here (this server serves %q)", id, s.opts.ModelName))
		return
	}
	writeJSON(w, http.StatusOK, modelInfo{ID: s.opts.ModelName, Object: "model", Created: s.created, OwnedBy: "tracksum"})
}

// admit answers a request of another method than method (405) or without the API key (401) and
// reports whether the route may go on.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method != method {
		w.Header().Set("Allow", method)
		s.fail(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use "+method)
		return false
	}
	return s.authorized(w, r)
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.APIKey == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.APIKey)) == 1 {
		return true
	}
	s.fail(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "missing or wrong API key")
	return false
}

// call is one completion request, read from either route.
type call struct {
	model        string
	messages     []Message
	params       Params
	stop         []string
	stream       bool
	includeUsage bool
}

// answer is what a route writes back: the reply and its accounting. id is the request's number
// (each route adds its prefix: chatcmpl-, cmpl-).
type answer struct {
	id, content, finish string
	usage               usage
}

// chat is POST /v1/chat/completions.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	s.handle(w, r, readChat, func(w http.ResponseWriter, c call, a answer) {
		if c.stream {
			s.stream(w, a, c.includeUsage)
			return
		}
		writeJSON(w, http.StatusOK, chatResponse{
			ID: "chatcmpl-" + a.id, Object: "chat.completion", Created: time.Now().Unix(), Model: s.opts.ModelName,
			Choices: []chatChoice{{Index: 0, Message: Message{Role: "assistant", Content: a.content}, FinishReason: a.finish}},
			Usage:   a.usage,
		})
	})
}

// completions is POST /v1/completions: the prompt is answered as one user message.
func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	s.handle(w, r, readCompletion, func(w http.ResponseWriter, c call, a answer) {
		if c.stream {
			s.streamText(w, a, c.includeUsage)
			return
		}
		writeJSON(w, http.StatusOK, textResponse{
			ID: "cmpl-" + a.id, Object: "text_completion", Created: time.Now().Unix(), Model: s.opts.ModelName,
			Choices: []textChoice{{Text: a.content, FinishReason: &a.finish}},
			Usage:   &a.usage,
		})
	})
}

// readChat reads a chat-completions body; the string is a client mistake ("" when none).
func readChat(body []byte) (call, string) {
	var req chatRequest
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&req); err != nil {
		return call{}, "invalid JSON body: " + err.Error()
	}
	c := call{model: req.Model, messages: req.Messages, stop: req.Stop, stream: req.Stream,
		includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	if req.MaxTokens != nil {
		c.params.MaxTokens = *req.MaxTokens
	}
	if req.MaxCompletion != nil {
		c.params.MaxTokens = *req.MaxCompletion
	}
	c.params.Temperature, c.params.TopP, c.params.Seed, c.params.Stop = req.Temperature, req.TopP, req.Seed, req.Stop
	return c, validate(&req)
}

// readCompletion reads a text-completions body as a one-message conversation.
func readCompletion(body []byte) (call, string) {
	var req completionRequest
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&req); err != nil {
		return call{}, "invalid JSON body: " + err.Error()
	}
	c := call{model: req.Model, messages: []Message{{Role: "user", Content: string(req.Prompt)}}, stop: req.Stop,
		stream: req.Stream, includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	if req.MaxTokens != nil {
		c.params.MaxTokens = *req.MaxTokens
	}
	c.params.Temperature, c.params.TopP, c.params.Seed, c.params.Stop = req.Temperature, req.TopP, req.Seed, req.Stop
	as := chatRequest{Messages: c.messages, MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP, N: req.N}
	if strings.TrimSpace(string(req.Prompt)) == "" {
		return c, "prompt must not be empty"
	}
	return c, validate(&as)
}

// handle runs one completion request of either route: admission, body, model, the backend within
// the request timeout, stop strings, then write.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, read func([]byte) (call, string), write func(http.ResponseWriter, call, answer)) {
	info := logInfo(r)
	if !s.admit(w, r, http.MethodPost) {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	// Admission: a request beyond the running and queued ones is turned away at once, so that a
	// burst cannot pile up unbounded goroutines and memory.
	n := s.admitted.Add(1)
	released := false
	release := func() {
		if !released {
			released = true
			s.admitted.Add(-1)
		}
	}
	defer release()
	if n > int64(s.opts.Workers+s.opts.Queue) {
		s.rejected.Add(1)
		secs := int((s.opts.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
		s.fail(w, http.StatusTooManyRequests, "rate_limit_error", "queue_full",
			fmt.Sprintf("server busy: %d requests running and %d queued; retry later", s.opts.Workers, s.opts.Queue))
		return
	}
	req, msg := read(body)
	info.model, info.stream = req.model, req.stream
	if s.opts.LogPrompts {
		info.messages = req.messages
	}
	if !s.checkRequest(w, body, req, msg) {
		return
	}
	c, ok := s.complete(w, r, req)
	if !ok {
		return
	}
	finish := "stop"
	if c.Truncated {
		finish = "length"
	}
	if cut, ok := applyStop(c.Content, req.stop); ok {
		c.Content, finish = cut, "stop"
	}
	info.promptTokens, info.completionTokens = c.PromptTokens, c.CompletionTokens
	s.served.Add(1)
	// The answer is written outside the running and queued places (a client slow to read it
	// holds no worker and no place), each part within WriteTimeout.
	release()
	s.writeDeadline(w)
	write(w, req, answer{
		id:      fmt.Sprintf("%d-%d", s.created, s.ids.Add(1)),
		content: c.Content, finish: finish,
		usage: usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, TotalTokens: c.PromptTokens + c.CompletionTokens},
	})
}

// readBody reads the whole body (within BodyTimeout and MaxBodyBytes) before admission: a client
// that sends its body one byte at a time then holds a connection for BodyTimeout at most, never a
// place among the running and queued requests. It answers the error itself (ok false).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout)) // unsupported only by test recorders
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mb *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mb):
			s.fail(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
				fmt.Sprintf("request body over %d bytes", s.opts.MaxBodyBytes))
		case errors.As(err, &ne) && ne.Timeout():
			w.Header().Set("Connection", "close")
			s.fail(w, http.StatusRequestTimeout, "invalid_request_error", "body_timeout",
				fmt.Sprintf("request body not received within %s", s.opts.BodyTimeout))
		default:
			s.fail(w, http.StatusBadRequest, "invalid_request_error", "bad_body", "reading the body: "+err.Error())
		}
		return nil, false
	}
	_ = rc.SetReadDeadline(time.Time{})
	return body, true
}

// checkRequest answers a request the model must not see (msg: what read found wrong, a parameter
// this server does not support, another model's name) and reports whether it may run.
func (s *Server) checkRequest(w http.ResponseWriter, body []byte, req call, msg string) bool {
	if msg != "" {
		code := "invalid_request"
		if strings.HasPrefix(msg, "invalid JSON") {
			code = "invalid_json"
		}
		s.fail(w, http.StatusBadRequest, "invalid_request_error", code, msg)
		return false
	}
	if field, why := unsupported(body); field != "" {
		s.failParam(w, http.StatusBadRequest, "invalid_request_error", "unsupported_parameter", field, field+": "+why)
		return false
	}
	if req.model != "" && req.model != s.opts.ModelName {
		s.fail(w, http.StatusNotFound, "invalid_request_error", "model_not_found",
			fmt.Sprintf("model %q is not served here (this server serves %q)", req.model, s.opts.ModelName))
		return false
	}
	return true
}

// complete runs the backend on req in a worker slot, within RequestTimeout (waiting for the slot
// included), and answers a timeout or the backend's error itself (ok false).
func (s *Server) complete(w http.ResponseWriter, r *http.Request, req call) (Completion, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.RequestTimeout)
	defer cancel()
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		s.timeout(w, r, "waiting for a worker")
		return Completion{}, false
	}
	type result struct {
		c   Completion
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The worker slot is held until the model is done, even when the client has given up,
		// so that the number of running decodes never exceeds Workers.
		defer func() { <-s.slots }()
		c, err := s.backend.Complete(ctx, req.messages, req.params)
		done <- result{c, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		s.timeout(w, r, "running the model")
		return Completion{}, false
	}
	if res.err != nil {
		var br badRequest
		if errors.As(res.err, &br) {
			s.fail(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", br.Error())
			if sw, ok := w.(*statusWriter); ok && br.log != "" {
				sw.info.err = br.log
			}
			return Completion{}, false
		}
		s.fail(w, http.StatusInternalServerError, "server_error", "model_error", res.err.Error())
		return Completion{}, false
	}
	return res.c, true
}

// validate returns what is wrong with a request ("" when nothing).
func validate(req *chatRequest) string {
	if len(req.Messages) == 0 {
		return "messages must not be empty"
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "user", "assistant", "developer", "tool":
		default:
			return fmt.Sprintf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	if req.N != nil && *req.N != 1 {
		return "n must be 1 (one answer per request)"
	}
	if req.MaxTokens != nil && *req.MaxTokens < 1 {
		return "max_tokens must be >= 1"
	}
	if req.MaxCompletion != nil && *req.MaxCompletion < 1 {
		return "max_completion_tokens must be >= 1"
	}
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 2) {
		return "temperature must be in [0, 2]"
	}
	if req.TopP != nil && (*req.TopP <= 0 || *req.TopP > 1) {
		return "top_p must be in (0, 1]"
	}
	return ""
}

// applyStop cuts content before the first occurrence of any stop string.
func applyStop(content string, stop []string) (string, bool) {
	cut := -1
	for _, s := range stop {
		if s == "" {
			continue
		}
		if i := strings.Index(content, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut < 0 {
		return content, false
	}
	return content[:cut], true
}

// stream writes a chat answer as server-sent events: a first chunk with the role, one chunk per
// word of the content, a last chunk with the finish reason (and usage when asked), then [DONE].
// The answer is complete before the first chunk is sent: the summarizer decodes the whole summary
// at once (beam search), and the chat model's generation has no per-token callback, so streaming
// changes the framing, not the latency.
func (s *Server) stream(w http.ResponseWriter, a answer, withUsage bool) {
	created := time.Now().Unix()
	base := func() chunkResponse {
		return chunkResponse{ID: "chatcmpl-" + a.id, Object: "chat.completion.chunk", Created: created, Model: s.opts.ModelName}
	}
	var events []any
	first := base()
	first.Choices = []chunkChoice{{Delta: delta{Role: "assistant"}}}
	events = append(events, first)
	for _, piece := range splitWords(a.content) {
		ch := base()
		ch.Choices = []chunkChoice{{Delta: delta{Content: piece}}}
		events = append(events, ch)
	}
	last := base()
	last.Choices = []chunkChoice{{Delta: delta{}, FinishReason: &a.finish}}
	events = append(events, last)
	if withUsage {
		uc := base()
		uc.Choices = []chunkChoice{}
		uc.Usage = &a.usage
		events = append(events, uc)
	}
	s.sendEvents(w, events)
}

// streamText writes a text-completion answer as server-sent events: one chunk per word, the last
// with the finish reason (then usage when asked), then [DONE].
func (s *Server) streamText(w http.ResponseWriter, a answer, withUsage bool) {
	created := time.Now().Unix()
	base := func() textResponse {
		return textResponse{ID: "cmpl-" + a.id, Object: "text_completion", Created: created, Model: s.opts.ModelName}
	}
	var events []any
	for _, piece := range splitWords(a.content) {
		ch := base()
		ch.Choices = []textChoice{{Text: piece}}
		events = append(events, ch)
	}
	last := base()
	last.Choices = []textChoice{{FinishReason: &a.finish}}
	events = append(events, last)
	if withUsage {
		uc := base()
		uc.Choices = []textChoice{}
		uc.Usage = &a.usage
		events = append(events, uc)
	}
	s.sendEvents(w, events)
}

// writeDeadline gives the next write to w WriteTimeout from now.
func (s *Server) writeDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout)) // unsupported only by test recorders
}

// sendEvents writes each event as a server-sent "data:" line, then [DONE], each within
// WriteTimeout; it stops when the client is gone or has stopped reading.
func (s *Server) sendEvents(w http.ResponseWriter, events []any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		s.writeDeadline(w)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	s.writeDeadline(w)
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// splitWords cuts s into pieces that each start at a word (the spaces before a word go with it),
// so that the pieces concatenate back to s.
func splitWords(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if (s[i-1] == ' ' || s[i-1] == '\n') && s[i] != ' ' && s[i] != '\n' {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func (s *Server) timeout(w http.ResponseWriter, r *http.Request, while string) {
	if r.Context().Err() != nil {
		// The client went away: nobody reads the answer. 499 in the log, as nginx does.
		s.failed.Add(1)
		if sw, ok := w.(*statusWriter); ok {
			sw.status = 499
		}
		return
	}
	s.fail(w, http.StatusGatewayTimeout, "timeout_error", "timeout",
		fmt.Sprintf("request timed out after %s %s", s.opts.RequestTimeout, while))
}

func (s *Server) fail(w http.ResponseWriter, status int, typ, code, msg string) {
	s.failParam(w, status, typ, code, "", msg)
}

// failParam is fail with the request field at fault (the error's "param"; none when empty).
func (s *Server) failParam(w http.ResponseWriter, status int, typ, code, param, msg string) {
	if status != http.StatusTooManyRequests {
		s.failed.Add(1)
	}
	var e apiError
	e.Error.Message, e.Error.Type, e.Error.Code = msg, typ, code
	if param != "" {
		e.Error.Param = &param
	}
	if sw, ok := w.(*statusWriter); ok {
		sw.info.err = msg
	}
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
