package chattemplate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoadErrors checks that each malformed tokenizer_config.json is a one-line error naming the
// file, with the sentinel callers test for.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		desc     string
		file     string
		name     string
		sentinel error
		want     string
	}{
		{desc: "no chat_template key", file: "no_template.json", name: "default", sentinel: ErrNoTemplate, want: "no chat template (chat_template is missing"},
		{desc: "chat_template null", file: "null_template.json", name: "default", sentinel: ErrNoTemplate, want: "chat_template is missing"},
		{desc: "blank template", file: "empty_template.json", name: "default", sentinel: ErrNoTemplate, want: "chat_template is empty"},
		{desc: "list without default", file: "no_default.json", name: "default", sentinel: ErrNoTemplate, want: `no chat template named "default" (the file has tool_use, rag)`},
		{desc: "string form asked by name", file: "syntax_error.json", name: "tool_use", sentinel: ErrNoTemplate, want: `named "tool_use": chat_template is a single template`},
		{desc: "syntax error", file: "syntax_error.json", name: "default", sentinel: ErrSyntax, want: "chat template syntax error:"},
		{desc: "special token of the wrong type", file: "bad_token.json", name: "default", want: "bos_token: neither a string nor an AddedToken object"},
		{desc: "chat_template of the wrong type", file: "bad_template_type.json", name: "default", want: "chat_template is neither a string nor a list"},
		{desc: "truncated JSON", file: "truncated.json", name: "default", want: "not a JSON object"},
		{desc: "missing file", file: "absent.json", name: "default", sentinel: os.ErrNotExist, want: "absent.json"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			path := filepath.Join("testdata", "malformed", tc.file)
			_, err := LoadNamed(path, tc.name)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q should name %s and contain %q", msg, path, tc.want)
			}
			if strings.ContainsAny(msg, "\n\r") {
				t.Errorf("error is not one line: %q", msg)
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("error %q is not %v", msg, tc.sentinel)
			}
		})
	}
}

// TestSyntaxErrorIsShort guards against gonja's habit of quoting the whole template in parse
// errors: a real template is kilobytes long.
func TestSyntaxErrorIsShort(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "malformed", "syntax_error.json"))
	if err == nil || len(err.Error()) > 300 || strings.Contains(err.Error(), "{% endfor %}") {
		t.Fatalf("want a short syntax error, got %v", err)
	}
}

// TestRenderErrors checks errors raised while rendering.
func TestRenderErrors(t *testing.T) {
	tpl, err := Load(filepath.Join("testdata", "malformed", "render_error.json"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "hi"}}
	tests := []struct {
		desc string
		opts Options
		want string
	}{
		{desc: "undefined function", want: "chat template render error:"},
		{desc: "messages given as a variable", opts: Options{Variables: map[string]any{"messages": nil}}, want: `variable "messages" is set by Render itself`},
		{desc: "add_generation_prompt given as a variable", opts: Options{Variables: map[string]any{"add_generation_prompt": true}}, want: `variable "add_generation_prompt" is set by Render itself`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := tpl.Render(msgs, tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrRender) || !strings.Contains(err.Error(), tpl.Path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, want ErrRender naming %s and containing %q", err, tpl.Path, tc.want)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

// parseString compiles a template given inline, with the special tokens of a small config.
func parseString(t *testing.T, source string) *Template {
	t.Helper()
	tpl, err := Parse("inline.json", []byte(`{"chat_template": `+jsonString(source)+`, "bos_token": {"content": "<s>"}, "eos_token": "</s>", "pad_token": null}`), "default")
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func jsonString(s string) string {
	var b strings.Builder
	(&jsonEncoder{}).encodeString(&b, s)
	return b.String()
}

// TestFeatures covers the Jinja features and Python semantics that real templates rely on, with
// expected values from Python 3 / Jinja2.
func TestFeatures(t *testing.T) {
	nested := map[string]any{"b": []any{1, 2.0, nil, true}, "a": map[string]any{"x": "é\"\\\n\t\x01😀"}}
	tests := []struct {
		desc   string
		source string
		vars   map[string]any
		want   string
	}{
		{desc: "special tokens from strings and AddedToken, null absent", source: `{{ bos_token }}|{{ eos_token }}|{{ pad_token is defined }}`, want: "<s>|</s>|False"},
		{desc: "trim_blocks and lstrip_blocks", source: "{% if true %}\n    a\n    {% endif %}\nb", want: "    a\nb"},
		{desc: "trailing newline dropped", source: "x\n", want: "x"},
		{desc: "generation markers removed", source: "a {% generation %}b{% endgeneration %} c", want: "a b c"},
		{desc: "loop.first and loop.last", source: `{% for m in messages %}{% if loop.first %}[{% endif %}{{ m.role }}{% if not loop.last %},{% endif %}{% endfor %}]`, want: "[user,assistant]"},
		{desc: "namespace", source: `{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}`, want: "2"},
		{desc: "reverse slice", source: `{% for m in messages[::-1] %}{{ m.role }} {% endfor %}`, want: "assistant user "},
		{desc: "conditional expression at top level", source: `{{ 'a' if messages|length > 1 else 'b' }}`, want: "a"},
		{desc: "strip family without argument", source: `{{ ' \n a \t'.strip() }}|{{ ' a '.lstrip() }}|{{ ' a '.rstrip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'ab'.strip('') }}`, want: "a|a | a|a|ab"},
		{desc: "trim filter strips Python whitespace", source: "{{ '\u00a0\u2003a\x1f ' | trim }}|{{ 'xax' | trim('x') }}", want: "a|a"},
		{desc: "startswith endswith split in", source: `{{ 'abc'.startswith('a') }} {{ 'abc'.endswith('c') }} {{ 'a</t>b'.split('</t>')[-1] }} {{ 'b' in 'abc' }}`, want: "True True b True"},
		{desc: "raise_exception inside a false branch is not raised", source: `{% if false %}{{ raise_exception('no') }}{% endif %}ok`, want: "ok"},
		{desc: "tojson default", source: `{{ x | tojson }}`, vars: map[string]any{"x": nested}, want: `{"a": {"x": "é\"\\\n\t\u0001😀"}, "b": [1, 2.0, null, true]}`},
		{desc: "tojson separators", source: `{{ x | tojson(separators=(',', ':')) }}`, vars: map[string]any{"x": nested}, want: `{"a":{"x":"é\"\\\n\t\u0001😀"},"b":[1,2.0,null,true]}`},
		{desc: "tojson ensure_ascii", source: `{{ x | tojson(ensure_ascii=true) }}`, vars: map[string]any{"x": nested}, want: `{"a": {"x": "\u00e9\"\\\n\t\u0001\ud83d\ude00"}, "b": [1, 2.0, null, true]}`},
		{desc: "tojson indent", source: `{{ x | tojson(indent=2) }}`, vars: map[string]any{"x": map[string]any{"k": []any{}, "j": []any{1, map[string]any{}}}}, want: "{\n  \"j\": [\n    1,\n    {}\n  ],\n  \"k\": []\n}"},
		{desc: "tojson of a template literal keeps its order", source: `{{ {'b': [1, 'x'], 'a': none} | tojson }}`, want: `{"b": [1, "x"], "a": null}`},
		{desc: "tojson sort_keys", source: `{{ {'b': 1, 'a': {'d': 2, 'c': 3}} | tojson(sort_keys=true) }}`, want: `{"a": {"c": 3, "d": 2}, "b": 1}`},
		{desc: "lstrip_blocks only from a line's start", source: "{% for m in messages %}{{ m.role }} {% endfor %}\n  {%+ if true %}x{% endif %}\n\t{# c #}y", want: "user assistant   xy"},
		{desc: "tojson does not HTML-escape", source: `{{ '<a & b>' | tojson }}`, want: `"<a & b>"`},
		{desc: "caller variable overrides a special token", source: `{{ bos_token }}`, vars: map[string]any{"bos_token": "<B>"}, want: "<B>"},
	}
	msgs := []Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := parseString(t, tc.source).Render(msgs, Options{Variables: tc.vars})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRaiseException checks that a template's own exception is the error, with its message.
func TestRaiseException(t *testing.T) {
	tpl := parseString(t, `before{{ raise_exception('Only user and assistant roles are supported, got ' + messages[0].role) }}after`)
	_, err := tpl.Render([]Message{{Role: "critic"}}, Options{})
	want := "inline.json: chat template render error: raise_exception: Only user and assistant roles are supported, got critic"
	if err == nil || err.Error() != want || !errors.Is(err, ErrRender) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// TestStrftimeNow checks strftime_now against Python's datetime.strftime on a fixed clock.
func TestStrftimeNow(t *testing.T) {
	tpl := parseString(t, `{{ strftime_now(fmt) }}`)
	tests := []struct {
		now  time.Time
		fmt  string
		want string
	}{
		{time.Date(2024, 7, 6, 21, 5, 3, 0, time.UTC), "%d %b %Y|%A %a %B %j %I %p %y %H:%M:%S %m %e %F %T %% %Q", "06 Jul 2024|Saturday Sat July 188 09 PM 24 21:05:03 07  6 2024-07-06 21:05:03 % %Q"},
		{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), "%I %p %j", "12 AM 001"},
	}
	for _, tc := range tests {
		got, err := tpl.Render(nil, Options{Variables: map[string]any{"fmt": tc.fmt}, Now: func() time.Time { return tc.now }})
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("strftime_now(%q) = %q, want %q", tc.fmt, got, tc.want)
		}
	}
}

// TestPythonFloat checks float formatting against Python's repr.
func TestPythonFloat(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{1e16, "1e+16"}, {1e-5, "1e-05"}, {0.0001, "0.0001"}, {123456789012345678.0, "1.2345678901234568e+17"},
		{1.5, "1.5"}, {2.0, "2.0"}, {1e15, "1000000000000000.0"}, {0.30000000000000004, "0.30000000000000004"},
		{1.5e-7, "1.5e-07"}, {-2.5e300, "-2.5e+300"}, {9999999999999998.0, "9999999999999998.0"},
	}
	for _, tc := range tests {
		if got := pythonFloat(tc.f); got != tc.want {
			t.Errorf("pythonFloat(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

// TestListForm checks that the named entries of the list form are selectable.
func TestListForm(t *testing.T) {
	path := filepath.Join("testdata", "features", "tokenizer_config.json")
	tpl, err := LoadNamed(path, "tool_use")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.Render(nil, Options{})
	if err == nil || !strings.HasSuffix(err.Error(), "raise_exception: tool_use is not exercised") {
		t.Fatalf("tool_use template: got %v", err)
	}
	def, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if def.Name != "default" || def.Engine != "gonja" || !strings.Contains(def.Source, "strftime_now") {
		t.Errorf("default template: name %q engine %q", def.Name, def.Engine)
	}
	if def.SpecialTokens["bos_token"] != "<|start|>" || def.SpecialTokens["eos_token"] != "<|stop|>" {
		t.Errorf("special tokens %v", def.SpecialTokens)
	}
	if _, ok := def.SpecialTokens["pad_token"]; ok {
		t.Errorf("pad_token is null in the file and must be absent: %v", def.SpecialTokens)
	}
}

// TestStrftimeDefaultsToNow checks that without date_string the feature template asks the clock.
func TestStrftimeDefaultsToNow(t *testing.T) {
	tpl, err := Load(filepath.Join("testdata", "features", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tpl.Render([]Message{{Role: "user", Content: "hi"}}, Options{Now: func() time.Time { return time.Date(2031, 2, 3, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "Today: 03 Feb 2031\n") {
		t.Errorf("rendering %q lacks the clock's date", got)
	}
}

// TestEngineChoice checks that the Gemma 3 built-in replaces gonja only where gonja fails to
// parse a template carrying Gemma 3's markers.
func TestEngineChoice(t *testing.T) {
	tests := []struct {
		desc   string
		source string
		want   string
	}{
		{desc: "gemma markers, parses", source: `{% set first_user_prefix = '' %}<start_of_turn>{{ messages[0].content }}<end_of_turn>`, want: "gonja"},
		{desc: "gemma markers, gonja cannot parse", source: `{% set first_user_prefix = '' %}{{ '<start_of_turn>' + (first_user_prefix if true else '') }}<end_of_turn>`, want: "builtin:gemma3"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := parseString(t, tc.source).Engine; got != tc.want {
				t.Errorf("engine %q, want %q", got, tc.want)
			}
		})
	}
	_, err := Parse("other.json", []byte(`{"chat_template": "{{ (1 if true else 2) }}"}`), "default")
	if !errors.Is(err, ErrSyntax) {
		t.Errorf("a template without Gemma 3's markers that gonja cannot parse: got %v, want ErrSyntax", err)
	}
}

// TestConcurrentRender renders one template from several goroutines (run with -race): a loaded
// template is shared by data-loading workers.
func TestConcurrentRender(t *testing.T) {
	tpl, err := Load(filepath.Join("testdata", "features", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "hi"}}
	want, err := tpl.Render(msgs, Options{Variables: map[string]any{"date_string": "1 Jan 2025"}})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for range 20 {
				got, err := tpl.Render(msgs, Options{Variables: map[string]any{"date_string": "1 Jan 2025"}})
				if err == nil && got != want {
					err = errors.New("concurrent rendering differs: " + got)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
