package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// Scope is what a command knows of the model it configures, for the names whose meaning depends
// on it: Hugging Face names (HFNames) and the suggestions for a mistyped key.
type Scope struct {
	// Section is the config section of the task trained (tracker or summarizer; tracksum-train's
	// --task): a Hugging Face name becomes its key, and "did you mean" prefers its keys. Empty
	// when the command trains no task (eval, infer): a task-dependent name is then an error
	// naming the candidate keys.
	Section string
	// Partial is a first pass that resolves only the settings which decide the task (cli.Peek):
	// Hugging Face names and unknown keys of --set and of the profile are left out, for the
	// second pass to read or refuse once the task is known.
	Partial bool
	// Notes receives one line per Hugging Face name read as a tracksum key (nil: none).
	Notes io.Writer
}

// ParseSettingsIn reads `key=value` arguments (the values of repeated --set flags). A key must be
// a config key or a Hugging Face name of HFNames, read as scope's key (a mistyped one gets a
// suggestion), and its value must parse as the key's type.
func ParseSettingsIn(args []string, scope Scope) ([]Setting, error) {
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
			hf, isHF := LookupHFName(key)
			switch {
			case scope.Partial:
				continue
			case !isHF:
				return nil, fmt.Errorf("--set %s: no such config key%s", key, didYouMean(key, scope.Section))
			}
			where := "--set " + key
			mapped, v, err := hf.Resolve(scope.Section, value, where)
			if err != nil {
				return nil, err
			}
			noteHF(scope.Notes, "--set", key, mapped)
			key, value, leaf = mapped, v, leaves[mapped]
		}
		if err := decodeAs(leaf.Type(), value); err != nil {
			return nil, fmt.Errorf("--set %s: cannot use %q as %s", key, value, valueType(leaf.Type()))
		}
		out = append(out, Setting{Key: key, Value: value})
	}
	return out, nil
}

// LoadIn is LoadWith for a command of scope: a profile may use the Hugging Face names of HFNames
// at its top level (learning_rate: 1e-4), read as scope's keys, and sets come from
// ParseSettingsIn with the same scope.
func LoadIn(v *viper.Viper, file string, flags *pflag.FlagSet, flagKeys map[string]string, sets []Setting, scope Scope) (*Config, map[string]Source, error) {
	cfg, err := loadScoped(v, file, flags, flagKeys, sets, scope)
	if err != nil {
		return nil, nil, err
	}
	src := sources(v, file, flags, flagKeys, sets, os.LookupEnv)
	if err := applyPretrainedDefaults(cfg, src); err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	// The pretrained defaults are valid by construction, but a generation_config.json is not.
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	return cfg, src, nil
}

// readProfileNames checks the keys of the profile read into v: an unknown key is an error with a
// suggestion, a Hugging Face name at the top level is renamed to scope's key (its value
// translated); with scope.Partial both are left out. When something is renamed or left out, v's
// profile layer is replaced by the profile so rewritten.
func readProfileNames(v *viper.Viper, file string, scope Scope) error {
	unknown := fileUnknownKeys(v)
	if len(unknown) == 0 {
		return nil
	}
	var errs []error
	drop := []string{}
	set := map[string]any{}
	for _, key := range unknown {
		hf, isHF := LookupHFName(key)
		switch {
		case scope.Partial:
			drop = append(drop, key)
			continue
		case !isHF || strings.Contains(key, "."):
			errs = append(errs, fmt.Errorf("config %s: unknown key %s%s", file, key, didYouMean(key, scope.Section)))
			continue
		}
		where := "config " + file + ": " + key
		value := v.Get(key)
		text, isText := value.(string)
		mapped, translated, err := hf.Resolve(scope.Section, text, where)
		switch {
		case err != nil:
			errs = append(errs, err)
			continue
		case v.InConfig(mapped):
			errs = append(errs, fmt.Errorf("%s: a Hugging Face name for %s, which the file sets too: keep one", where, mapped))
			continue
		}
		if isText {
			value = translated
		}
		noteHF(scope.Notes, "config "+file, key, mapped)
		drop = append(drop, key)
		set[mapped] = value
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The file's own settings (a fresh instance holds no defaults), rewritten.
	fv := viper.New()
	fv.SetConfigFile(file)
	fv.SetConfigType("yaml")
	if err := fv.ReadInConfig(); err != nil {
		return fmt.Errorf("config %s: %w", file, err)
	}
	tree := fv.AllSettings()
	for _, key := range drop {
		deletePath(tree, key)
	}
	for key, value := range set {
		setPath(tree, key, value)
	}
	b, err := yaml.Marshal(tree)
	if err != nil {
		return fmt.Errorf("config %s: %w", file, err)
	}
	if err := v.ReadConfig(bytes.NewReader(b)); err != nil {
		return fmt.Errorf("config %s: %w", file, err)
	}
	return nil
}

// deletePath removes the dotted key from a nested settings map.
func deletePath(tree map[string]any, key string) {
	head, rest, nested := strings.Cut(key, ".")
	if !nested {
		delete(tree, head)
		return
	}
	if sub, ok := tree[head].(map[string]any); ok {
		deletePath(sub, rest)
	}
}

// setPath sets the dotted key in a nested settings map, creating the sections on the way.
func setPath(tree map[string]any, key string, value any) {
	head, rest, nested := strings.Cut(key, ".")
	if !nested {
		tree[head] = value
		return
	}
	sub, ok := tree[head].(map[string]any)
	if !ok {
		sub = map[string]any{}
		tree[head] = sub
	}
	setPath(sub, rest, value)
}
