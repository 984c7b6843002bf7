package chattemplate

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// gonja's str methods, by name: MethodSet cannot be listed or copied, so ours is rebuilt from
// these names (the full set of gonja v2.9.1) with the strip family replaced.
var gonjaStrMethods = []string{
	"capitalize", "capwords", "casefold", "center", "count", "encode", "endswith", "expandtabs",
	"find", "format", "format_map", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
	"islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust",
	"lower", "lstrip", "partition", "removeprefix", "removesuffix", "replace", "rfind", "rjust",
	"rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip", "swapcase",
	"title", "upper", "zfill",
}

// methods returns gonja's methods with Python's str.strip/lstrip/rstrip: gonja v2.9.1 fails on
// a bare .lstrip()/.rstrip() (its default argument is a rune, not a string) and treats an
// explicit ” as whitespace. With a render's budget b, each counts against it (limits.go).
func methods(b *budget) exec.Methods {
	str := map[string]exec.Method[string]{}
	for _, name := range gonjaStrMethods {
		if m, ok := builtins.Methods.Str.Get(name); ok {
			str[name] = m
		}
	}
	str["strip"] = stripMethod(true, true)
	str["lstrip"] = stripMethod(true, false)
	str["rstrip"] = stripMethod(false, true)
	if b != nil {
		for name, m := range str {
			str[name] = limitMethod(m, b)
		}
	}
	m := builtins.Methods
	m.Str = exec.NewMethodSet(str)
	return m
}

// stripMethod is Python's str.strip family: no argument or None strips whitespace, a string
// strips any of its characters.
func stripMethod(left, right bool) exec.Method[string] {
	return func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		chars, err := charsArgument(args)
		if err != nil {
			return nil, exec.ErrInvalidCall(err)
		}
		return pyStrip(self, chars, left, right), nil
	}
}

// charsArgument reads the optional chars argument of strip and trim; nil means whitespace.
func charsArgument(args *exec.VarArgs) (*string, error) {
	var v *exec.Value
	if err := args.Take(exec.PositionalArgument("chars", exec.AsValue(nil), func(x *exec.Value) error { v = x; return nil })); err != nil {
		return nil, err
	}
	if v.IsNil() {
		return nil, nil
	}
	if !v.IsString() {
		return nil, fmt.Errorf("strip argument must be a string or None, got %s", v.String())
	}
	s := v.String()
	return &s, nil
}

// pyStrip strips s as Python does; chars nil means Python's whitespace (str.isspace).
func pyStrip(s string, chars *string, left, right bool) string {
	cut := isPySpace
	if chars != nil {
		set := *chars
		cut = func(r rune) bool { return strings.ContainsRune(set, r) }
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s
}

// isPySpace is Python's str.isspace for one character: Unicode White_Space plus the
// information separators U+001C..U+001F, which Python also counts.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// filterTrim is Jinja2's trim filter (Python str.strip, with an optional chars argument).
func filterTrim(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	chars, err := charsArgument(params)
	if err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	return exec.AsValue(pyStrip(in.String(), chars, true, true))
}
