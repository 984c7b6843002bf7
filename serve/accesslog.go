package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// accessInfo collects what the access log line of one request says besides method, path, status
// and latency. Handlers fill it through logInfo.
type accessInfo struct {
	model                          string
	stream                         bool
	promptTokens, completionTokens int
	err                            string
	// messages are logged only with Options.LogPrompts.
	messages []Message
}

type infoKey struct{}

// logInfo returns the request's access-log record (a throwaway one outside the logging handler).
func logInfo(r *http.Request) *accessInfo {
	if info, ok := r.Context().Value(infoKey{}).(*accessInfo); ok {
		return info
	}
	return &accessInfo{}
}

// statusWriter records the status code written and passes flushes through (for streaming).
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
	info   *accessInfo
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (the body's read deadline).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush implements http.Flusher.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// AccessLine is one line of the access log. It never holds the Authorization header, and holds
// the messages only when the server was started with --log-prompts.
type AccessLine struct {
	Time             string    `json:"time"`
	Method           string    `json:"method"`
	Path             string    `json:"path"`
	Status           int       `json:"status"`
	LatencyMS        float64   `json:"latency_ms"`
	Bytes            int       `json:"bytes"`
	Model            string    `json:"model,omitempty"`
	Stream           bool      `json:"stream,omitempty"`
	PromptTokens     int       `json:"prompt_tokens"`
	CompletionTokens int       `json:"completion_tokens"`
	Error            string    `json:"error,omitempty"`
	Messages         []Message `json:"messages,omitempty"`
}

// logged wraps h so that every request ends with one JSON line in the access log.
func (s *Server) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &accessInfo{}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK, info: info}
		h.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), infoKey{}, info)))
		s.writeLine(AccessLine{
			Time: start.UTC().Format(time.RFC3339Nano), Method: r.Method, Path: r.URL.Path, Status: sw.status,
			LatencyMS: float64(time.Since(start).Microseconds()) / 1000, Bytes: sw.bytes,
			Model: info.model, Stream: info.stream, PromptTokens: info.promptTokens,
			CompletionTokens: info.completionTokens, Error: info.err, Messages: info.messages,
		})
	})
}

// event writes a non-request line (listening, draining, stopped).
func (s *Server) event(name string, fields map[string]any) {
	line := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "event": name}
	for k, v := range fields {
		line[k] = v
	}
	s.writeLine(line)
}

func (s *Server) writeLine(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.opts.Log.Write(append(b, '\n'))
}
