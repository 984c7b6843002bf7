package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"
)

// BenchEnvPrefix prefixes environment variables read by benchmarks (e.g. TRACKSUM_BENCH_ABSTRACTS);
// they are not config keys, so checkEnv leaves them alone.
const BenchEnvPrefix = EnvPrefix + "_BENCH_"

// CacheDirEnv names the directory of tracksum's caches (the base snapshots' file digests, package
// hf/snapshot); not a config key: checkEnv leaves it alone.
const CacheDirEnv = EnvPrefix + "_CACHE_DIR"

// envKey returns the environment variable that overrides a dotted config key.
func envKey(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// leafKeys lists every leaf of a config struct as a dotted key with its Go type and value.
func leafKeys(prefix string, val reflect.Value, out map[string]reflect.Value) {
	t := val.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("mapstructure"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		key := tag
		if prefix != "" {
			key = prefix + "." + tag
		}
		fv := val.Field(i)
		if fv.Kind() == reflect.Struct && f.Type.String() != "time.Duration" {
			leafKeys(key, fv, out)
			continue
		}
		out[key] = fv
	}
}

// decodeHook is the conversion applied to every value from a profile or the environment.
func decodeHook() mapstructure.DecodeHookFunc {
	return mapstructure.ComposeDecodeHookFunc(
		mapstructure.StringToTimeDurationHookFunc(),
		mapstructure.StringToSliceHookFunc(","),
		emptyToUnset, // last: a hook after it would be given no value
	)
}

// emptyToUnset decodes an empty text as an unset optional key (a nil pointer: infer.decoding.*),
// so that the empty value --print-config shows for it can be pasted back as --set key=.
func emptyToUnset(from, to reflect.Type, data any) (any, error) {
	if to.Kind() == reflect.Pointer && from.Kind() == reflect.String && data.(string) == "" {
		return nil, nil
	}
	return data, nil
}

// checkEnv checks every TRACKSUM_* variable of environ ("NAME=value" entries, as os.Environ) before
// viper reads them: a name that is no config key is an error (viper would silently ignore it), and
// a value that does not parse as its key's type is reported as the variable's fault rather than the
// config file's. Variables that name secrets (the values of *_env keys, e.g. TRACKSUM_LLM_API_KEY
// from eval.llm.api_key_env, as resolved by lookup and by default) and benchmark knobs are not
// config keys and are skipped.
func checkEnv(environ []string, lookup func(key string) string) error {
	leaves := map[string]reflect.Value{}
	leafKeys("", reflect.ValueOf(Default()), leaves)
	known := map[string]string{}
	var exempt []string
	for key, v := range leaves {
		known[envKey(key)] = key
		if strings.HasSuffix(key, "_env") && v.Kind() == reflect.String {
			exempt = append(exempt, v.String(), lookup(key))
		}
	}
	var errs []error
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix+"_") || strings.HasPrefix(name, BenchEnvPrefix) || name == CacheDirEnv || slices.Contains(exempt, name) {
			continue
		}
		key, ok := known[name]
		if !ok {
			hint := fmt.Sprintf("variables are %s_SECTION_KEY, e.g. %s", EnvPrefix, envKey("tracker.train.learning_rate"))
			if k := closestEnvKey(name, known); k != "" {
				hint = "did you mean " + k + "?"
			}
			errs = append(errs, fmt.Errorf("environment variable %s: no such config key (%s)", name, hint))
			continue
		}
		target := reflect.New(leaves[key].Type())
		dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
			Result: target.Interface(), WeaklyTypedInput: true, DecodeHook: decodeHook(),
		})
		if err == nil {
			err = dec.Decode(value)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("environment variable %s (%s): cannot use %q as %s", name, key, value, valueType(leaves[key].Type())))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// closestEnvKey returns the known variable nearest to name (within a third of its length in edits),
// or "".
func closestEnvKey(name string, known map[string]string) string {
	best, bestDist := "", 0
	for k := range known {
		if d := editDistance(name, k); best == "" || d < bestDist || (d == bestDist && k < best) {
			best, bestDist = k, d
		}
	}
	if bestDist > max(2, (len(name)-len(EnvPrefix))/3) {
		return ""
	}
	return best
}
