package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPlainOutput(t *testing.T) {
	var buf bytes.Buffer
	b := NewTo(&buf, "prepare", 10, "abstracts")
	b.Add(4)
	b.Status("loss %.2f", 0.5)
	b.Finish()
	b.Finish() // idempotent
	out := buf.String()
	if strings.Contains(out, "\r") {
		t.Errorf("non-terminal output redraws with \\r: %q", out)
	}
	last := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	for _, want := range []string{"prepare", "4/10 abstracts", "40.0%", "loss 0.50"} {
		if !strings.Contains(last, want) {
			t.Errorf("final line %q lacks %q", last, want)
		}
	}
}

func TestUnknownTotal(t *testing.T) {
	var buf bytes.Buffer
	b := NewTo(&buf, "scan", 0, "rows")
	b.Set(7)
	b.Finish()
	if !strings.Contains(buf.String(), "7 rows") {
		t.Errorf("output %q lacks the count", buf.String())
	}
}

// TestQuiet: after SetQuiet(true) (every command's --quiet) a bar writes nothing.
func TestQuiet(t *testing.T) {
	var b strings.Builder
	SetQuiet(true)
	t.Cleanup(func() { SetQuiet(false) })
	bar := NewTo(&b, "train", 10, "steps")
	bar.Add(10)
	bar.Finish()
	if b.Len() != 0 {
		t.Errorf("quiet bar wrote %q", b.String())
	}
}

// TestPlainOutputNoNoise: in a log, a bar writes no line at its first unit (only after an interval
// or at the end) and none at all when it did nothing.
func TestPlainOutputNoNoise(t *testing.T) {
	var buf bytes.Buffer
	b := NewTo(&buf, "tokenizer", 0, "texts")
	b.Add(1)
	if buf.Len() != 0 {
		t.Errorf("first unit wrote %q", buf.String())
	}
	b.Add(9)
	b.Finish()
	if n := strings.Count(buf.String(), "\n"); n != 1 || !strings.Contains(buf.String(), "10 texts") {
		t.Errorf("want one final line with 10 texts, got %q", buf.String())
	}
	buf.Reset()
	idle := NewTo(&buf, "validate", 0, "instances")
	idle.Finish()
	if buf.Len() != 0 {
		t.Errorf("idle bar wrote %q", buf.String())
	}
}

// TestSlowUnitsAndStage: work slower than a unit a second reads as seconds per unit, never as
// "0.0 steps/s", and the stage is shown with its elapsed time.
func TestSlowUnitsAndStage(t *testing.T) {
	var buf bytes.Buffer
	b := NewTo(&buf, "train", 10, "steps")
	b.Stage("compiling the graph and first step")
	if !strings.Contains(buf.String(), "[compiling the graph and first step 0:00]") {
		t.Errorf("a log's first stage is not said at once: %q", buf.String())
	}
	b.mu.Lock()
	b.start = b.start.Add(-20 * time.Second) // the step took 20 s
	b.mu.Unlock()
	b.Stage("")
	b.Set(1)
	b.Finish()
	last := buf.String()[strings.LastIndex(strings.TrimSuffix(buf.String(), "\n"), "\n")+1:]
	for _, want := range []string{"1/10 steps", "elapsed 0:20", "20.0 s/step"} {
		if !strings.Contains(last, want) {
			t.Errorf("final line %q lacks %q", last, want)
		}
	}
	if strings.Contains(last, "steps/s") {
		t.Errorf("slow work shown as a rate: %q", last)
	}
}

// TestHeartbeat: a bar waiting on one stage writes lines on its own (here every 20 ms in place of
// the log's 30 s), and stops at Finish.
func TestHeartbeat(t *testing.T) {
	old := heartbeatLog
	heartbeatLog = 20 * time.Millisecond
	t.Cleanup(func() { heartbeatLog = old })
	var buf syncBuffer
	b := NewTo(&buf, "train", 10, "steps")
	b.Stage("evaluating on dev")
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(buf.String(), "evaluating on dev") < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := strings.Count(buf.String(), "evaluating on dev"); n < 3 {
		t.Fatalf("heartbeat wrote %d lines in 5 s: %q", n, buf.String())
	}
	b.Finish()
	n := len(buf.String())
	time.Sleep(100 * time.Millisecond)
	if len(buf.String()) != n {
		t.Errorf("the heartbeat wrote after Finish: %q", buf.String()[n:])
	}
}

func TestFormatElapsed(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{0, "0:00"}, {59 * time.Second, "0:59"}, {61 * time.Second, "1:01"}, {3725 * time.Second, "1:02:05"}} {
		if got := formatElapsed(tc.d); got != tc.want {
			t.Errorf("formatElapsed(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// syncBuffer is a bytes.Buffer the heartbeat goroutine and the test may use together.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
