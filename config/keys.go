package config

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Setting is one `--set key=value` of the command line: the highest layer, above flags, so that any
// key can be set without a dedicated flag.
type Setting struct{ Key, Value string }

// ParseSettings reads `key=value` arguments (the values of repeated --set flags). A key must be a
// config key (a mistyped one gets a suggestion) and its value must parse as the key's type.
func ParseSettings(args []string) ([]Setting, error) {
	leaves := defaultLeaves()
	var out []Setting
	for _, arg := range args {
		key, value, ok := strings.Cut(arg, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("--set %q: want key=value, e.g. --set tracker.train.learning_rate=2e-5", arg)
		}
		leaf, known := leaves[key]
		if !known {
			return nil, fmt.Errorf("--set %s: no such config key%s", key, didYouMean(key))
		}
		if err := decodeAs(leaf.Type(), value); err != nil {
			return nil, fmt.Errorf("--set %s: cannot use %q as %s", key, value, valueType(leaf.Type()))
		}
		out = append(out, Setting{Key: key, Value: value})
	}
	return out, nil
}

// Keys lists every config key, dotted (tracker.train.learning_rate), sorted.
func Keys() []string { return slices.Sorted(maps.Keys(defaultLeaves())) }

// defaultLeaves maps each dotted key of the default config to its value.
func defaultLeaves() map[string]reflect.Value {
	leaves := map[string]reflect.Value{}
	leafKeys("", reflect.ValueOf(Default()), leaves)
	return leaves
}

// decodeAs checks that text parses as a value of type t, as a profile's or the environment's would.
func decodeAs(t reflect.Type, text string) error {
	target := reflect.New(t)
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result: target.Interface(), WeaklyTypedInput: true, DecodeHook: decodeHook(),
	})
	if err != nil {
		return err
	}
	return dec.Decode(text)
}

// didYouMean returns " (did you mean K?)" for the config key closest to key, or "" when none is
// close: within a third of the key's length in edits, on the whole dotted key or on its last part
// within the same section (so that learning_rat finds tracker.train.learning_rate).
func didYouMean(key string) string {
	best, bestDist := "", 0
	for _, k := range Keys() {
		d := editDistance(key, k)
		if i, j := strings.LastIndexByte(key, '.'), strings.LastIndexByte(k, '.'); i < 0 || (j >= 0 && key[:i] == k[:j]) {
			// A bare last part (learning_rat) or the same section: compare last parts too.
			d = min(d, editDistance(key[i+1:], k[j+1:]))
		}
		if best == "" || d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" || bestDist > max(2, len(key)/3) {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// editDistance is the Levenshtein distance between a and b, in bytes (keys are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// checkFileKeys refuses a profile key that is no config key, one line per key with a suggestion,
// before the decoder's multi-line message. A key below a leaf (a map-valued setting) is accepted.
func checkFileKeys(v *viper.Viper, file string) error {
	leaves := defaultLeaves()
	var errs []error
	for _, key := range slices.Sorted(slices.Values(v.AllKeys())) {
		if !v.InConfig(key) {
			continue
		}
		if _, ok := leaves[key]; ok {
			continue
		}
		below := false
		for k := range leaves {
			if strings.HasPrefix(key, k+".") {
				below = true
				break
			}
		}
		if !below {
			errs = append(errs, fmt.Errorf("config %s: unknown key %s%s", file, key, didYouMean(key)))
		}
	}
	return errors.Join(errs...)
}

// Source says which layer gave a key its value (--print-config).
type Source struct {
	// Layer is "default", "file", "env", "flag" or "set".
	Layer string
	// From names the file, variable or flag ("" for defaults).
	From string
}

// String is how --print-config shows the source, e.g. "flag --lr" or "file configs/paper.yaml".
func (s Source) String() string {
	if s.From == "" {
		return s.Layer
	}
	return s.Layer + " " + s.From
}

// Sources tells, for each config key, which layer set it; file is the profile given (or ""),
// flagKeys the flags bound to keys, sets the --set settings.
func sources(v *viper.Viper, file string, flags *pflag.FlagSet, flagKeys map[string]string, sets []Setting, environ func(string) (string, bool)) map[string]Source {
	out := map[string]Source{}
	for _, key := range Keys() {
		out[key] = Source{Layer: "default"}
		if file != "" && v.InConfig(key) {
			out[key] = Source{Layer: "file", From: file}
		}
		// viper ignores an empty variable (AllowEmptyEnv is off), so it is no source either.
		if val, ok := environ(envKey(key)); ok && val != "" {
			out[key] = Source{Layer: "env", From: envKey(key)}
		}
	}
	for name, key := range flagKeys {
		if f := flags.Lookup(name); f != nil && f.Changed {
			out[key] = Source{Layer: "flag", From: "--" + name}
		}
	}
	for _, s := range sets {
		out[s.Key] = Source{Layer: "set", From: "--set"}
	}
	return out
}

// WriteResolved writes every key of c as `key = value  source`, one per line in key order, the
// format of --print-config: values are written as --set and the environment take them (lists
// comma-separated), so a line can be pasted back as `--set key=value`.
func WriteResolved(w io.Writer, c *Config, src map[string]Source) error {
	leaves := map[string]reflect.Value{}
	leafKeys("", reflect.ValueOf(*c), leaves)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, key := range slices.Sorted(maps.Keys(leaves)) {
		fmt.Fprintf(tw, "%s=%s\t# %s\n", key, formatValue(leaves[key]), src[key])
	}
	return tw.Flush()
}

// formatValue renders a leaf as text that decodes back to the same value; an unset optional key
// (a nil pointer) is empty.
func formatValue(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Slice {
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v.Interface())
}

// KeyKind is the kind of a config key's value (reflect.Invalid for no key), for commands that
// define a flag per key.
func KeyKind(key string) reflect.Kind {
	v, ok := defaultLeaves()[key]
	if !ok {
		return reflect.Invalid
	}
	if v.Kind() == reflect.Pointer {
		return v.Type().Elem().Kind()
	}
	return v.Kind()
}

// valueType names the type of a key's values in messages: an optional key's (*float64) is its
// element's (float64).
func valueType(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// Value returns the value of a dotted key as --print-config writes it (an unset optional key is
// empty), and false for no key: for a command that checks a setting it knows only by key (e.g.
// tracksum-train's task flags, each bound to a key).
func (c *Config) Value(key string) (string, bool) {
	leaves := map[string]reflect.Value{}
	leafKeys("", reflect.ValueOf(*c), leaves)
	v, ok := leaves[key]
	if !ok {
		return "", false
	}
	return formatValue(v), true
}
