package config

import (
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"
)

// PrintOptions says how --print-config orders and filters the keys.
type PrintOptions struct {
	// First are the sections printed first, in this order (the task's, then the command's own);
	// the others follow in the order of Config's fields.
	First []string
	// Changed prints only the keys whose value is not the default (--print-config=changed).
	Changed bool
}

// WriteResolvedIn writes the keys of c as `key=value  # source`, grouped by section under a
// `# section` line (the top-level keys, e.g. seed, under `# top level`), opts.First's sections
// first, keys sorted within a section. Values are written as --set and the environment take them
// (lists comma-separated), so a line can be pasted back as `--set key=value`.
func WriteResolvedIn(w io.Writer, c *Config, src map[string]Source, opts PrintOptions) error {
	leaves := map[string]reflect.Value{}
	leafKeys("", reflect.ValueOf(*c), leaves)
	defaults := defaultLeaves()
	groups := map[string][]string{}
	for _, key := range slices.Sorted(maps.Keys(leaves)) {
		if opts.Changed && formatValue(leaves[key]) == formatValue(defaults[key]) {
			continue
		}
		section, _, nested := strings.Cut(key, ".")
		if !nested {
			section = ""
		}
		groups[section] = append(groups[section], key)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	printed := 0
	for _, section := range sectionOrder(opts.First) {
		keys := groups[section]
		if len(keys) == 0 {
			continue
		}
		head := section
		if head == "" {
			head = "top level"
		}
		if printed > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "# %s\n", head)
		for _, key := range keys {
			v := formatValue(leaves[key])
			fmt.Fprintf(tw, "%s=%s\t# %s%s\n", key, v, src[key], unsetNote(key, v))
		}
		printed += len(keys)
	}
	if printed == 0 && opts.Changed {
		fmt.Fprintln(tw, "# every key has its default value")
	}
	return tw.Flush()
}

// unsetMeaning says what an unset key means (empty for an optional key, 0 for serve.threshold):
// the value another source gives then (--print-config shows where the threshold will come from).
var unsetMeaning = map[string]string{
	"infer.threshold": "unset: the tracker checkpoint's tracker.threshold, else 0.5",
	"serve.threshold": "unset: infer.threshold when set, else the tracker checkpoint's, else 0.5",
}

// unsetNote is the note --print-config adds to key's value v when v means "not set".
func unsetNote(key, v string) string {
	if m, ok := unsetMeaning[key]; ok && (v == "" || (key == "serve.threshold" && v == "0")) {
		return " (" + m + ")"
	}
	return ""
}

// SectionOrder lists the sections in the order of Config's fields ("" for the top-level keys).
func SectionOrder() []string { return sectionOrder(nil) }

// sectionOrder lists the sections ("" for the top-level keys) with first's in front, then the
// others in the order of Config's fields.
func sectionOrder(first []string) []string {
	var out []string
	for _, s := range first {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("mapstructure"), ",")[0]
		if f.Type.Kind() != reflect.Struct || f.Type.String() == "time.Duration" {
			name = ""
		}
		if name != "-" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}
