package testlog

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB whose Log calls are kept.
type recorder struct {
	testing.TB
	lines []string
	clean []func()
}

func (r *recorder) Helper()          {}
func (r *recorder) Log(args ...any)  { r.lines = append(r.lines, fmt.Sprint(args...)) }
func (r *recorder) Cleanup(f func()) { r.clean = append(r.clean, f) }

func TestLines(t *testing.T) {
	r := &recorder{TB: t}
	w := Writer(r)
	fmt.Fprint(w, "train [==  ] 1/4 steps\rtrain [====] 4/4 steps\nstep 4: dev f1 0.5\n\npartial")
	if len(r.lines) != 3 {
		t.Fatalf("before the end: %q, want 3 lines", r.lines)
	}
	for _, f := range r.clean {
		f()
	}
	fmt.Fprint(w, "after the test\n") // dropped, not a panic
	want := []string{"1/4 steps", "4/4 steps", "dev f1 0.5", "partial"}
	if len(r.lines) != len(want) {
		t.Fatalf("lines %q, want %d", r.lines, len(want))
	}
	for i, s := range want {
		if !strings.Contains(r.lines[i], s) || !strings.HasPrefix(r.lines[i], "[") {
			t.Errorf("line %d = %q, want a stamped line with %q", i, r.lines[i], s)
		}
	}
}
