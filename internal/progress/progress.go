// Package progress draws a one-line progress bar on a terminal (stderr) for long work: done/total,
// elapsed time, rate, ETA, the stage the work is in (compiling the graph, evaluating on dev) and
// free-form status (loss, examples/s). When stderr is not a terminal (CI, pipes) it prints a plain
// line at most every few seconds instead of redrawing, so logs stay readable.
//
// A bar that stays on one unit for a long time (a first step that compiles a graph, an evaluation
// that decodes the dev set) still shows that it is alive: a heartbeat redraws it every second on a
// terminal, and writes a line every heartbeat interval in a log, with the elapsed time and stage.
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
	stage    string
	// stageStart is when the current stage began: its elapsed time is shown beside it.
	stageStart time.Time
	// drawnDone is done at the last line written to a log: the heartbeat writes a line there
	// only when nothing was written for heartbeatLog.
	stop chan struct{}
}

// heartbeatLog is how long a bar in a log (not a terminal) stays silent while it waits on one unit
// before it writes a line saying what it is doing.
var heartbeatLog = 30 * time.Second

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

// heartbeat redraws the bar every beat while nothing else does, so that a long first step or an
// evaluation still shows its elapsed time; it starts with the first Stage and ends with Finish.
func (b *Bar) heartbeat(beat time.Duration) {
	t := time.NewTicker(beat)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.mu.Lock()
			if !b.finished && time.Since(b.last) >= beat {
				b.maybeDraw(true)
			}
			b.mu.Unlock()
		}
	}
}

// Stage names what the work is doing now ("compiling the graph and first step", "evaluating on
// dev"); it is shown with its own elapsed time until the next Stage. An empty name clears it.
func (b *Bar) Stage(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if name == b.stage {
		return
	}
	b.stage, b.stageStart = name, time.Now()
	if b.stop == nil && !b.finished && b.w != io.Discard {
		beat := heartbeatLog
		if b.tty {
			beat = time.Second
		}
		b.stop = make(chan struct{})
		go b.heartbeat(beat)
	}
	if name != "" && !b.tty && b.done == 0 && time.Since(b.start) < b.interval {
		// The first stage of a log's bar is said at once: it is what the silence that follows is.
		b.maybeDraw(true)
		return
	}
	b.maybeDraw(false)
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
	if b.stop != nil {
		close(b.stop)
	}
	b.stage = ""
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
			fmt.Fprintf(&sb, " elapsed %s eta %s", formatElapsed(now.Sub(b.start)), formatElapsed(eta))
		} else {
			fmt.Fprintf(&sb, " elapsed %s", formatElapsed(now.Sub(b.start)))
		}
	} else {
		fmt.Fprintf(&sb, " %d %s elapsed %s", b.done, b.unit, formatElapsed(now.Sub(b.start)))
	}
	switch {
	case b.done == 0:
	case rate >= 1 || b.unit == "":
		fmt.Fprintf(&sb, " %.1f %s/s", rate, b.unit)
	default:
		// Slow units (a pretrained step on a CPU) read as seconds each, never as "0.0 steps/s".
		fmt.Fprintf(&sb, " %.1f s/%s", 1/rate, singular(b.unit))
	}
	if b.stage != "" {
		fmt.Fprintf(&sb, " [%s %s]", b.stage, formatElapsed(now.Sub(b.stageStart)))
	}
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

// formatElapsed writes a duration as m:ss (or h:mm:ss), the way a stopwatch does.
func formatElapsed(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// singular drops a plural s from a unit ("steps" -> "step") for "s/step".
func singular(unit string) string {
	if len(unit) > 1 && strings.HasSuffix(unit, "s") {
		return unit[:len(unit)-1]
	}
	return unit
}
