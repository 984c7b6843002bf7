package chattemplate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// parseSource parses a template given as its Jinja source, as if read from path.
func parseSource(t *testing.T, path, source string) *Template {
	t.Helper()
	data, err := json.Marshal(map[string]any{"chat_template": source, "eos_token": "</s>"})
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := Parse(path, data, "default")
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// TestChatTemplateLimits: issue 22 defect 4. Templates come from downloaded snapshots: unbounded
// recursion was a fatal stack overflow, 'x' * 2000000000 and range(1000000000) a fatal out of
// memory, nested 1e5 x 1e5 loops a hang. Each now fails within the limits, quickly, with a
// one-line ErrLimit error naming the file; cancellation and the time limit stop a long one.
func TestChatTemplateLimits(t *testing.T) {
	const path = "/snap/tokenizer_config.json"
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		desc, source string
		opts         Options
		want         string
	}{
		{"macro recursion", `{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(1) }}`, Options{}, "nesting deeper than"},
		{"recursive loop", `{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}`, Options{}, "nesting deeper than"},
		{"string repetition", `{{ 'x' * 2000000000 }}`, Options{}, "a repetition of 2000000000 x 1 bytes exceeds"},
		{"doubling by concatenation", `{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}`, Options{}, "bytes of strings built"},
		{"huge range", `{% for i in range(1000000000) %}{{ i }}{% endfor %}`, Options{}, "range of 1000000000 numbers exceeds"},
		{"nested loops", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, Options{}, "more than"},
		{"wide filter", `{{ 'x'|center(2000000000) }}`, Options{}, "argument 2000000000 exceeds"},
		{"wide str method", `{{ 'x'.ljust(2000000000) }}`, Options{}, "argument 2000000000 exceeds"},
		{"output size", `{% for i in range(1000) %}{{ 'abcdefghij' }}{% endfor %}`, Options{Limits: Limits{MaxOutput: 5000}}, "more than 5000 bytes of output"},
		{"literal text in a loop", `{% for i in range(1000) %}0123456789{% endfor %}`, Options{Limits: Limits{MaxAlloc: 5000}}, "more than 5000 bytes of strings built"},
		{"time", `{% for i in range(300) %}{% for j in range(300) %}{{ i ~ j }}{% endfor %}{% endfor %}`, Options{Limits: Limits{Timeout: time.Millisecond}}, "rendering took more than 1ms"},
		{"cancelled", `{% for m in messages %}{{ m.content }}{% endfor %}`, Options{Context: cancelled}, "cancelled: context canceled"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			tpl := parseSource(t, path, tc.source)
			start := time.Now()
			_, err := tpl.Render([]Message{{Role: "user", Content: "hi"}}, tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			// A guard against a hang, not a speed target: on a busy 2-core machine the doubling case
			// takes 5-7 s to reach the allocation limit.
			if d := time.Since(start); d > time.Minute {
				t.Errorf("the error took %v", d)
			}
			msg := err.Error()
			if !errors.Is(err, ErrLimit) || !strings.HasPrefix(msg, path+": chat template limit: ") || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one ErrLimit line naming %s and containing %q", msg, path, tc.want)
			}
		})
	}
	// The same template under the limits renders as before.
	tpl := parseSource(t, path, `{% macro wrap(s) %}[{{ s ~ '!' }}]{% endmacro %}{% for m in messages %}{{ wrap(m.role + ':' + m.content * 2)|trim }}{% for i in range(2) %}{{ i }}{% endfor %}{% endfor %}`)
	got, err := tpl.Render([]Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[user:hihi!]01[assistant:yoyo!]01"; got != want {
		t.Errorf("render = %q, want %q", got, want)
	}
}
