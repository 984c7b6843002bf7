package chattemplate

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// filterToJSON is transformers' tojson filter: json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys). Dicts written in the template keep their order, as
// in Python; Go maps (from Options.Variables) have none and are serialized in sorted key order.
func filterToJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	var indent, separators *exec.Value
	var ensureASCII, sortKeys bool
	value := func(out **exec.Value) exec.ArgumentTransmuter {
		return func(v *exec.Value) error { *out = v; return nil }
	}
	if err := params.Take(
		exec.KeywordArgument("ensure_ascii", exec.AsValue(false), exec.BoolArgument(&ensureASCII)),
		exec.KeywordArgument("indent", exec.AsValue(nil), value(&indent)),
		exec.KeywordArgument("separators", exec.AsValue(nil), value(&separators)),
		exec.KeywordArgument("sort_keys", exec.AsValue(false), exec.BoolArgument(&sortKeys)),
	); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	enc := jsonEncoder{ensureASCII: ensureASCII, sortKeys: sortKeys, item: ", ", key: ": "}
	switch {
	case indent.IsNil():
	case indent.IsInteger():
		enc.indent, enc.indented = strings.Repeat(" ", max(indent.Integer(), 0)), true
	case indent.IsString():
		enc.indent, enc.indented = indent.String(), true
	default:
		return exec.AsValue(exec.ErrInvalidCall(fmt.Errorf("tojson: indent must be an integer or a string, got %s", indent.String())))
	}
	if enc.indented {
		enc.item = ","
	}
	if !separators.IsNil() {
		if !separators.IsList() || separators.Len() != 2 {
			return exec.AsValue(exec.ErrInvalidCall(fmt.Errorf("tojson: separators must be a pair of strings")))
		}
		var seps []string
		separators.Iterate(func(_, _ int, key, _ *exec.Value) bool {
			seps = append(seps, key.String())
			return true
		}, func() {})
		enc.item, enc.key = seps[0], seps[1]
	}
	var b strings.Builder
	if err := enc.encode(&b, reflect.ValueOf(in.Interface()), 0); err != nil {
		return exec.AsValue(err)
	}
	return exec.AsSafeValue(b.String())
}

// jsonEncoder writes values as Python's json.dumps does.
type jsonEncoder struct {
	ensureASCII bool
	sortKeys    bool
	indented    bool
	indent      string
	item, key   string
}

// valueType lets encode see through the *exec.Value wrappers gonja puts in lists and dicts;
// dictType is gonja's ordered dict (template literals).
var (
	valueType = reflect.TypeFor[*exec.Value]()
	dictType  = reflect.TypeFor[*exec.Dict]()
)

func (e *jsonEncoder) newline(b *strings.Builder, depth int) {
	if e.indented {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(e.indent, depth))
	}
}

func (e *jsonEncoder) encode(b *strings.Builder, v reflect.Value, depth int) error {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		if v.Type() == valueType {
			v = reflect.ValueOf(v.Interface().(*exec.Value).Interface())
			continue
		}
		if v.Type() == dictType {
			return e.encodeDict(b, v.Interface().(*exec.Dict), depth)
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		b.WriteString("null")
		return nil
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		b.WriteString(pythonFloat(v.Float()))
	case reflect.String:
		e.encodeString(b, v.String())
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b.WriteString(e.item)
			}
			e.newline(b, depth+1)
			if err := e.encode(b, v.Index(i), depth+1); err != nil {
				return err
			}
		}
		e.newline(b, depth)
		b.WriteByte(']')
	case reflect.Map:
		if v.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		pairs := make([]jsonPair, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			pairs = append(pairs, jsonPair{fmt.Sprint(it.Key().Interface()), it.Value()})
		}
		sort.Slice(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
		return e.encodePairs(b, pairs, depth)
	default:
		return fmt.Errorf("tojson: cannot serialize a %s", v.Type())
	}
	return nil
}

// jsonPair is one member of an object, in output order.
type jsonPair struct {
	key   string
	value reflect.Value
}

func (e *jsonEncoder) encodeDict(b *strings.Builder, d *exec.Dict, depth int) error {
	pairs := make([]jsonPair, 0, len(d.Pairs))
	for _, p := range d.Pairs {
		pairs = append(pairs, jsonPair{p.Key.String(), reflect.ValueOf(p.Value)})
	}
	if e.sortKeys {
		sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
	}
	return e.encodePairs(b, pairs, depth)
}

func (e *jsonEncoder) encodePairs(b *strings.Builder, pairs []jsonPair, depth int) error {
	if len(pairs) == 0 {
		b.WriteString("{}")
		return nil
	}
	b.WriteByte('{')
	for i, p := range pairs {
		if i > 0 {
			b.WriteString(e.item)
		}
		e.newline(b, depth+1)
		e.encodeString(b, p.key)
		b.WriteString(e.key)
		if err := e.encode(b, p.value, depth+1); err != nil {
			return err
		}
	}
	e.newline(b, depth)
	b.WriteByte('}')
	return nil
}

// encodeString quotes s as json.dumps does: only quote, backslash and control characters are
// escaped, plus everything outside ASCII when ensure_ascii is set.
func (e *jsonEncoder) encodeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		case e.ensureASCII && r > 0x7e:
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// pythonFloat formats f as Python's float repr (which json.dumps uses): the shortest digits that
// round-trip, ".0" on integral values, exponent form below 1e-4 and from 1e16.
func pythonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	exp := int(math.Floor(math.Log10(math.Abs(f))))
	// Log10 can be off by one near powers of ten; the 'e' format knows the true exponent.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	if i := strings.IndexByte(e, 'e'); i >= 0 {
		if n, err := strconv.Atoi(e[i+1:]); err == nil {
			exp = n
		}
	}
	if exp < -4 || exp >= 16 {
		mant, expo, _ := strings.Cut(e, "e")
		sign := expo[0]
		digits := strings.TrimLeft(expo[1:], "0")
		if len(digits) < 2 {
			digits = fmt.Sprintf("%02s", digits)
		}
		return mant + "e" + string(sign) + digits
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// strftime formats t with the C/Python strftime directives templates use (%d %b %Y and friends),
// in the C locale.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			fmt.Fprintf(&b, "%02d", h)
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case '%':
			b.WriteByte('%')
		default:
			// Unknown directives are kept as written, as glibc does.
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
