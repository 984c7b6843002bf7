package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// TestUnknownEnvironmentKey is the regression test of issue 10 item 11: TRACKSUM_PREPARE_FOO=1 was
// ignored although unknown keys are errors, and TRACKSUM_SEED=abc was reported as an error in the
// config file.
func TestUnknownEnvironmentKey(t *testing.T) {
	profile := writeYAML(t, "seed: 11\n")
	for _, tc := range []struct {
		desc    string
		env     map[string]string
		file    string
		want    string // "" = no error
		notWant string
	}{
		{desc: "unknown key in a section", env: map[string]string{"TRACKSUM_PREPARE_FOO": "1"},
			want: "environment variable TRACKSUM_PREPARE_FOO: no such config key"},
		{desc: "unknown section", env: map[string]string{"TRACKSUM_TRAKER_DROPOUT": "0.1"},
			want: "environment variable TRACKSUM_TRAKER_DROPOUT: no such config key"},
		{desc: "bad value is the variable's fault, not the file's", env: map[string]string{"TRACKSUM_SEED": "abc"}, file: profile,
			want: `environment variable TRACKSUM_SEED (seed): cannot use "abc" as int64`, notWant: "profile.yaml"},
		{desc: "bad bool", env: map[string]string{"TRACKSUM_TRACKER_LEXICAL": "maybe"},
			want: `environment variable TRACKSUM_TRACKER_LEXICAL (tracker.lexical): cannot use "maybe" as bool`},
		{desc: "bad duration", env: map[string]string{"TRACKSUM_EVAL_LLM_TIMEOUT": "soon"},
			want: `environment variable TRACKSUM_EVAL_LLM_TIMEOUT (eval.llm.timeout): cannot use "soon"`},
		{desc: "known keys are fine", env: map[string]string{"TRACKSUM_SEED": "5", "TRACKSUM_INFER_ASPECTS": "a,i", "TRACKSUM_EVAL_LLM_TIMEOUT": "5s"}},
		{desc: "the API key variable is not a config key and is allowed", env: map[string]string{"TRACKSUM_LLM_API_KEY": "sk-x"}},
		{desc: "a renamed API key variable is allowed too",
			env: map[string]string{"TRACKSUM_EVAL_LLM_API_KEY_ENV": "TRACKSUM_MY_KEY", "TRACKSUM_MY_KEY": "sk-x"}},
		{desc: "benchmark knobs are not config keys", env: map[string]string{"TRACKSUM_BENCH_ABSTRACTS": "10"}},
		{desc: "the cache directory is not a config key", env: map[string]string{"TRACKSUM_CACHE_DIR": "/tmp/c"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Load(viper.New(), tc.file, pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v\nwant one containing %q", err, tc.want)
			case tc.notWant != "" && strings.Contains(err.Error(), tc.notWant):
				t.Fatalf("err = %v blames %q", err, tc.notWant)
			}
		})
	}
}

// TestThresholdNaN is the regression test of issue 10 item 9 (first half): --threshold NaN was
// accepted (every comparison with NaN is false, so every summary became "Unknown."). Every float
// key now refuses NaN and infinities, from a flag, the environment or a profile.
func TestThresholdNaN(t *testing.T) {
	for _, tc := range []struct {
		desc, flag, env, yaml, want string
	}{
		{desc: "flag NaN", flag: "NaN", want: "infer.threshold: must be a finite number, got NaN"},
		{desc: "flag +Inf", flag: "+Inf", want: "infer.threshold: must be a finite number, got +Inf"},
		{desc: "flag negative", flag: "-0.1", want: "infer.threshold: must be in [0, 1], got -0.1"},
		{desc: "flag above 1", flag: "1.5", want: "infer.threshold: must be in [0, 1], got 1.5"},
		{desc: "environment NaN", env: "nan", want: "infer.threshold: must be a finite number, got NaN"},
		{desc: "profile NaN", yaml: "infer:\n  threshold: .nan\n", want: "infer.threshold: must be a finite number, got NaN"},
		{desc: "another key: tracker dropout NaN", yaml: "tracker:\n  dropout: .nan\n", want: "tracker.dropout: must be a finite number, got NaN"},
		{desc: "learning rate -Inf", yaml: "tracker:\n  train:\n    learning_rate: -.inf\n", want: "tracker.train.learning_rate: must be a finite number, got -Inf"},
		{desc: "valid", flag: "0.3"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
			fs.Float64("threshold", 0.5, "")
			keys := map[string]string{}
			if tc.flag != "" {
				if err := fs.Parse([]string{"--threshold", tc.flag}); err != nil {
					t.Fatal(err)
				}
				keys["threshold"] = "infer.threshold"
			}
			if tc.env != "" {
				t.Setenv("TRACKSUM_INFER_THRESHOLD", tc.env)
			}
			file := ""
			if tc.yaml != "" {
				file = writeYAML(t, tc.yaml)
			}
			cfg, err := Load(viper.New(), file, fs, keys)
			if tc.want == "" {
				if err != nil || cfg.Infer.Threshold == nil || *cfg.Infer.Threshold != 0.3 {
					t.Fatalf("threshold %v, err %v; want 0.3", cfg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant one containing %q", err, tc.want)
			}
		})
	}
}

// TestNonFiniteOnce (issue 35 item 18): `--set eval.nli.threshold=NaN` gave two lines, the
// finiteness check's and the section's range check's. A non-finite setting is reported once; other
// problems are still all reported.
func TestNonFiniteOnce(t *testing.T) {
	for _, tc := range []struct {
		desc, yaml string
		want       []string
	}{
		{"nli threshold NaN", "eval:\n  nli:\n    threshold: .nan\n", []string{"eval.nli.threshold: must be a finite number, got NaN"}},
		{"lexical threshold +Inf", "eval:\n  lexical:\n    threshold: .inf\n", []string{"eval.lexical.threshold: must be a finite number, got +Inf"}},
		{"bootstrap level NaN", "eval:\n  bootstrap:\n    level: .nan\n", []string{"eval.bootstrap.level: must be a finite number, got NaN"}},
		{"a NaN and another problem", "eval:\n  nli:\n    threshold: .nan\n    batch_size: 0\n",
			[]string{"eval.nli.threshold: must be a finite number, got NaN", "eval.nli.batch_size: must be >= 1"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := Load(viper.New(), writeYAML(t, tc.yaml), pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
			if err == nil {
				t.Fatal("no error")
			}
			if lines := strings.Split(err.Error(), "\n"); len(lines) != len(tc.want) {
				t.Errorf("error %q: %d lines, want %d", err, len(lines), len(tc.want))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
