package config

import (
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Setting is one `--set key=value` of the command line: the highest layer, above flags, so that any
// key can be set without a dedicated flag.
type Setting struct{ Key, Value string }

// ParseSettings reads `key=value` arguments (the values of repeated --set flags) for a command that
// trains no task: ParseSettingsIn with no scope.
func ParseSettings(args []string) ([]Setting, error) { return ParseSettingsIn(args, Scope{}) }

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
// within the same section (so that learning_rat finds tracker.train.learning_rate). The keys of
// section (the task trained; "" for none) come first: the closest of them when one is close;
// then every key, and for a bare key the Hugging Face names of HFNames.
func didYouMean(key, section string) string {
	if section != "" {
		if s := closestKey(key, slices.DeleteFunc(Keys(), func(k string) bool { return !strings.HasPrefix(k, section+".") })); s != "" {
			return s
		}
	}
	all := Keys()
	if !strings.Contains(key, ".") {
		// A bare key may be a misspelt Hugging Face name (per_device_batch_size).
		for _, h := range HFNames {
			all = append(all, h.Name)
		}
	}
	return closestKey(key, all)
}

// closestKey is didYouMean over the keys given (sorted: the first of equally close ones wins).
func closestKey(key string, keys []string) string {
	best, bestDist := "", 0
	for _, k := range keys {
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

// fileUnknownKeys lists the profile keys that are no config key, sorted. A key below a leaf (a
// map-valued setting) is accepted.
func fileUnknownKeys(v *viper.Viper) []string {
	leaves := defaultLeaves()
	var out []string
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
			out = append(out, key)
		}
	}
	return out
}

// Source says which layer gave a key its value (--print-config).
type Source struct {
	// Layer is "default", "file", "env", "flag", "set" or LayerPretrained.
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

// WriteResolved writes every key of c as `key=value  # source`, the format of --print-config
// (WriteResolvedIn with no sections put first).
func WriteResolved(w io.Writer, c *Config, src map[string]Source) error {
	return WriteResolvedIn(w, c, src, PrintOptions{})
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
