package progress

import (
	"bytes"
	"strings"
	"testing"
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
