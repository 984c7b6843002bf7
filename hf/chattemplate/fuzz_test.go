package chattemplate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzRender parses and renders arbitrary template sources under tight limits: each must render
// or fail with a one-line error, within the time limit; never crash the process (stack overflow
// and out-of-memory are fatal in Go, not panics) or hang. Seeds: issue 22's hostile templates.
//
//	GOEXPERIMENT=simd go test ./hf/chattemplate -run '^$' -fuzz '^FuzzRender$' -fuzztime 60s
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		`{% for m in messages %}{{ m.role + ': ' + m.content }}{% endfor %}`,
		`{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(1) }}`,
		`{{ 'x' * 2000000000 }}`,
		`{% for i in range(1000000000) %}{{ i }}{% endfor %}`,
		`{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`,
		`{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}`,
		`{{ 'x'|center(2000000000) }}{{ 'y'.ljust(99999999) }}`,
		`{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}`,
	} {
		f.Add(s)
	}
	limits := Limits{MaxOutput: 1 << 16, MaxAlloc: 1 << 22, MaxSteps: 20_000, MaxDepth: 2_000, Timeout: 2 * time.Second}
	f.Fuzz(func(t *testing.T, source string) {
		data, err := json.Marshal(map[string]any{"chat_template": source, "eos_token": "</s>"})
		if err != nil {
			return
		}
		tpl, err := Parse("tokenizer_config.json", data, "default")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("parse error spans lines: %q", err)
			}
			return
		}
		start := time.Now()
		out, err := tpl.Render([]Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo"}}, Options{Limits: limits})
		if d := time.Since(start); d > 2*limits.Timeout+time.Second {
			t.Fatalf("rendering took %v", d)
		}
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("render error spans lines: %q", err)
			}
			if !errors.Is(err, ErrLimit) && !errors.Is(err, ErrRender) {
				t.Fatalf("render error is neither ErrLimit nor ErrRender: %v", err)
			}
			return
		}
		if len(out) > limits.MaxOutput {
			t.Fatalf("%d bytes of output past the limit", len(out))
		}
	})
}
