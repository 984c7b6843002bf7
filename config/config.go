// Package config holds tracksum's typed configuration and the one way it is loaded:
// defaults in code (Default) < YAML profile (configs/*.yaml) < environment (TRACKSUM_SECTION_KEY)
// < command-line flags. Unknown keys are an error naming the key; every section validates itself.
//
// Each section lives in its own file (prepare.go, tokenizer.go, tracker.go, ...) with its struct,
// its defaults and its Validate method, so that a new setting is added in one place.
//
// # Example
//
//	v := viper.New()
//	cfg, err := config.Load(v, "configs/tiny.yaml", flags, map[string]string{"seed": "seed"})
package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/internal/atomicio"
	"go.yaml.in/yaml/v3"
)

// EnvPrefix prefixes the environment variables that override config keys:
// TRACKSUM_TRACKER_LEARNING_RATE overrides tracker.learning_rate.
const EnvPrefix = "TRACKSUM"

// Config is the whole resolved configuration of a tracksum run.
type Config struct {
	// Seed drives every random choice: splits, synthetic data, initialisation, shuffling.
	Seed       int64      `mapstructure:"seed" yaml:"seed"`
	Prepare    Prepare    `mapstructure:"prepare" yaml:"prepare"`
	Tokenizer  Tokenizer  `mapstructure:"tokenizer" yaml:"tokenizer"`
	Tracker    Tracker    `mapstructure:"tracker" yaml:"tracker"`
	Summarizer Summarizer `mapstructure:"summarizer" yaml:"summarizer"`
	Variants   Variants   `mapstructure:"variants" yaml:"variants"`
	Infer      Infer      `mapstructure:"infer" yaml:"infer"`
	Eval       Eval       `mapstructure:"eval" yaml:"eval"`
	// Serve, Export and Train are the settings of those commands (commands.go): left out of the
	// config.yaml files written next to outputs.
	Serve  Serve  `mapstructure:"serve" yaml:"-"`
	Export Export `mapstructure:"export" yaml:"-"`
	Train  Train  `mapstructure:"train" yaml:"-"`
}

// Default returns the built-in configuration: the values used when neither a profile, the
// environment nor a flag says otherwise.
func Default() Config {
	return Config{
		Seed:       3407,
		Prepare:    DefaultPrepare(),
		Tokenizer:  DefaultTokenizer(),
		Tracker:    DefaultTracker(),
		Summarizer: DefaultSummarizer(),
		Variants:   DefaultVariants(),
		Infer:      DefaultInfer(),
		Eval:       DefaultEval(),
		Serve:      DefaultServe(),
		Train:      DefaultTrain(),
	}
}

// Validate checks every section and returns all problems found, each naming its key once: a NaN
// or infinite setting is reported as such, not again by its section's range check.
func (c *Config) Validate() error {
	errs, bad := finite(*c)
	for _, err := range []error{
		c.Prepare.Validate(),
		c.Tokenizer.Validate(),
		c.Tracker.Validate(),
		c.Summarizer.Validate(),
		c.Variants.Validate(),
		c.Infer.Validate(),
		c.Eval.Validate(),
		c.Export.Validate(),
	} {
		for _, e := range flatten(err) {
			if key, _, ok := strings.Cut(e.Error(), ":"); ok && bad[key] {
				continue
			}
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// flatten returns the errors joined in err (errors.Join), recursively; nil gives none.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}

// finite reports every float setting that is NaN or infinite, and returns their keys: range checks
// written as `x < lo || x > hi` let NaN through (every comparison with NaN is false), so it is
// refused here once for all keys, before the sections' own checks.
func finite(c Config) ([]error, map[string]bool) {
	leaves := map[string]reflect.Value{}
	leafKeys("", reflect.ValueOf(c), leaves)
	keys := slices.Sorted(maps.Keys(leaves))
	var errs []error
	bad := map[string]bool{}
	for _, key := range keys {
		if v := leaves[key]; v.Kind() == reflect.Float64 || v.Kind() == reflect.Float32 {
			if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
				errs = append(errs, fmt.Errorf("%s: must be a finite number, got %g", key, f))
				bad[key] = true
			}
		}
	}
	return errs, bad
}

// Load resolves the configuration into v (a fresh viper.New() per command, never the global one).
// file may be empty (defaults only). flagKeys maps flag names in flags to dotted config keys; only
// flags the user actually passed override the lower layers.
func Load(v *viper.Viper, file string, flags *pflag.FlagSet, flagKeys map[string]string) (*Config, error) {
	cfg, _, err := LoadWith(v, file, flags, flagKeys, nil)
	return cfg, err
}

// LoadWith is Load with --set settings applied above every other layer; it also returns which
// layer set each key (for --print-config).
func LoadWith(v *viper.Viper, file string, flags *pflag.FlagSet, flagKeys map[string]string, sets []Setting) (*Config, map[string]Source, error) {
	return LoadIn(v, file, flags, flagKeys, sets, Scope{})
}

func loadScoped(v *viper.Viper, file string, flags *pflag.FlagSet, flagKeys map[string]string, sets []Setting, scope Scope) (*Config, error) {
	setDefaults(v)
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	if file != "" {
		v.SetConfigFile(file)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("config %s: %w", file, err)
		}
		if err := readProfileNames(v, file, scope); err != nil {
			return nil, err
		}
	}
	for name, key := range flagKeys {
		f := flags.Lookup(name)
		if f == nil {
			return nil, fmt.Errorf("config: flag --%s bound to %q is not defined", name, key)
		}
		if err := v.BindPFlag(key, f); err != nil {
			return nil, fmt.Errorf("config: bind --%s: %w", name, err)
		}
	}
	if err := checkEnv(os.Environ(), v.GetString); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := checkTextFlags(flags, flagKeys); err != nil {
		return nil, err
	}
	for _, set := range sets {
		v.Set(set.Key, set.Value)
	}
	var cfg Config
	err := v.UnmarshalExact(&cfg, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
		dc.WeaklyTypedInput = true
		dc.DecodeHook = decodeHook()
	})
	if err != nil {
		where := "defaults"
		if file != "" {
			where = file
		}
		return nil, fmt.Errorf("config %s: %w", where, err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return &cfg, nil
}

// checkTextFlags checks the flags given as text for typed keys (tracksum-train's task flags are
// strings, e.g. --lora-rank for tracker.lora.rank) as checkEnv checks the environment, so that a
// bad value is one line naming the flag rather than the decoder's message about "defaults".
func checkTextFlags(flags *pflag.FlagSet, flagKeys map[string]string) error {
	leaves := map[string]reflect.Value{}
	leafKeys("", reflect.ValueOf(Default()), leaves)
	for _, name := range slices.Sorted(maps.Keys(flagKeys)) {
		f, leaf := flags.Lookup(name), leaves[flagKeys[name]]
		if f == nil || !f.Changed || f.Value.Type() != "string" || !leaf.IsValid() || leaf.Kind() == reflect.String {
			continue
		}
		target := reflect.New(leaf.Type())
		dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
			Result: target.Interface(), WeaklyTypedInput: true, DecodeHook: decodeHook(),
		})
		if err == nil {
			err = dec.Decode(f.Value.String())
		}
		if err != nil {
			return fmt.Errorf("config: --%s (%s): cannot use %q as %s", name, flagKeys[name], f.Value.String(), valueType(leaf.Type()))
		}
	}
	return nil
}

// setDefaults registers every leaf of the default config as a viper default, so that each key can be
// overridden from the environment (viper ignores env vars of keys it does not know).
func setDefaults(v *viper.Viper) {
	leaves := map[string]reflect.Value{}
	leafKeys("", reflect.ValueOf(Default()), leaves)
	for key, val := range leaves {
		if val.Kind() == reflect.Pointer && val.IsNil() {
			// An unset optional key (infer.decoding.*): known to viper, so that the environment
			// can set it, and decoded as nil.
			v.SetDefault(key, nil)
			continue
		}
		v.SetDefault(key, val.Interface())
	}
}

// YAML renders the resolved config as YAML with the same keys a profile uses.
func (c *Config) YAML() ([]byte, error) { return yaml.Marshal(c) }

// WriteFile writes the resolved config to path through a hidden temporary file in the same
// directory (internal/atomicio), so a crash leaves no half-written file and no visible leftover.
func (c *Config) WriteFile(path string) error {
	b, err := c.YAML()
	if err != nil {
		return fmt.Errorf("config: render: %w", err)
	}
	if err := atomicio.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// ReadFile loads a resolved config written by WriteFile (e.g. from a checkpoint), strictly.
func ReadFile(path string) (*Config, error) {
	return Load(viper.New(), path, pflag.NewFlagSet("none", pflag.ContinueOnError), nil)
}
