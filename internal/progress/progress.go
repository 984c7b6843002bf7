// Package progress draws a one-line progress bar on a terminal (stderr) for long work: done/total,
// rate, ETA and free-form status (loss, examples/s). When stderr is not a terminal (CI, pipes) it
// prints a plain line at most every few seconds instead of redrawing, so logs stay readable.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bar tracks progress of a task with a known (or unknown: total <= 0) number of units.
type Bar struct {
	mu       sync.Mutex
	w        io.Writer
	label    string
	unit     string
	total    int64
	done     int64
	status   string
	start    time.Time
	last     time.Time
	tty      bool
	interval time.Duration
	finished bool
}

// New starts a bar writing to stderr. unit names what is counted ("abstracts", "steps").
func New(label string, total int64, unit string) *Bar {
	return NewTo(os.Stderr, label, total, unit)
}

// quiet, when set (every command's --quiet), makes every bar silent.
var quiet atomic.Bool

// SetQuiet turns every bar of the process off (true) or on: the commands' --quiet.
func SetQuiet(q bool) { quiet.Store(q) }

// Quiet reports whether --quiet turned the bars off (summary lines that go with a bar follow it).
func Quiet() bool { return quiet.Load() }

// NewTo starts a bar writing to w; w is treated as a terminal only if it is a character device.
// After SetQuiet(true) the bar writes nothing.
func NewTo(w io.Writer, label string, total int64, unit string) *Bar {
	if quiet.Load() {
		w = io.Discard
	}
	b := &Bar{w: w, label: label, total: total, unit: unit, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			b.tty = true
		}
	}
	b.interval = 5 * time.Second
	if b.tty {
		b.interval = 100 * time.Millisecond
	} else {
		// In a log, the first line waits one interval: a line written at the first unit says
		// nothing ("1 texts 334.3 texts/s"), and short work then prints only its final line.
		b.last = b.start
	}
	return b
}

// Add advances the bar by n units.
func (b *Bar) Add(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += n
	b.maybeDraw(false)
}

// Set moves the bar to an absolute position (e.g. a resumed training step).
func (b *Bar) Set(done int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = done
	b.maybeDraw(false)
}

// Status sets the free-form text shown after the counters, e.g. "loss 0.231".
func (b *Bar) Status(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.status = fmt.Sprintf(format, args...)
	b.maybeDraw(false)
}

// Finish draws the final state and ends the line.
func (b *Bar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.finished = true
	if b.done == 0 && !b.tty {
		return // nothing was done (e.g. no input to validate): no line in the log
	}
	b.maybeDraw(true)
	if b.tty {
		fmt.Fprintln(b.w)
	}
}

// Rate returns units per second since the bar started.
func (b *Bar) Rate() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return float64(b.done) / max(time.Since(b.start).Seconds(), 1e-9)
}

func (b *Bar) maybeDraw(force bool) {
	now := time.Now()
	if !force && now.Sub(b.last) < b.interval {
		return
	}
	b.last = now
	elapsed := now.Sub(b.start).Seconds()
	rate := float64(b.done) / max(elapsed, 1e-9)
	var sb strings.Builder
	sb.WriteString(b.label)
	if b.total > 0 {
		frac := min(float64(b.done)/float64(b.total), 1)
		const width = 24
		filled := int(frac * width)
		fmt.Fprintf(&sb, " [%s%s] %d/%d %s %5.1f%%", strings.Repeat("=", filled), strings.Repeat(" ", width-filled),
			b.done, b.total, b.unit, 100*frac)
		if rate > 0 && b.done < b.total {
			eta := time.Duration(float64(b.total-b.done) / rate * float64(time.Second)).Round(time.Second)
			fmt.Fprintf(&sb, " eta %s", eta)
		}
	} else {
		fmt.Fprintf(&sb, " %d %s", b.done, b.unit)
	}
	fmt.Fprintf(&sb, " %.1f %s/s", rate, b.unit)
	if b.status != "" {
		sb.WriteString(" ")
		sb.WriteString(b.status)
	}
	if b.tty {
		fmt.Fprintf(b.w, "\r\033[K%s", sb.String())
	} else {
		fmt.Fprintln(b.w, sb.String())
	}
}
