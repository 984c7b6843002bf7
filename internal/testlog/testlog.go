// Package testlog gives slow tests a log that says where they are: an io.Writer, handed to a
// training run or a pipeline as its Log, that passes each complete line to t.Log with the time
// since the test started. `go test -v` streams the lines as they come (make test-full's slow tests
// then show their stages: compiling, training steps, dev evaluations); without -v they are printed
// for a failing test only.
package testlog

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

// Writer returns a writer whose lines go to t.Log, each prefixed with the elapsed time. A last
// unfinished line is logged when the test ends. Carriage returns (a progress bar's redraws) end a
// line too.
func Writer(t testing.TB) io.Writer {
	w := &writer{t: t, start: time.Now()}
	t.Cleanup(w.flush)
	return w
}

type writer struct {
	mu    sync.Mutex
	t     testing.TB
	start time.Time
	buf   []byte
	done  bool
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil // a goroutine that outlived its test: t.Log would panic
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexAny(w.buf, "\r\n")
		if i < 0 {
			break
		}
		if line := bytes.TrimSpace(w.buf[:i]); len(line) > 0 {
			w.t.Helper()
			w.t.Log(w.stamp() + string(line))
		}
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *writer) stamp() string {
	return fmt.Sprintf("[%5.1fs] ", time.Since(w.start).Seconds())
}

func (w *writer) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if line := bytes.TrimSpace(w.buf); len(line) > 0 {
		w.t.Log(w.stamp() + string(line))
	}
	w.buf, w.done = nil, true
}
