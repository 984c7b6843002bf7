package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// TestUnknownKeySuggestions: a mistyped key in a profile, the environment or --set is one line
// naming the key and the nearest real one.
func TestUnknownKeySuggestions(t *testing.T) {
	for _, tc := range []struct {
		desc, yaml string
		env        map[string]string
		sets       []string
		want       string
	}{
		{desc: "profile", yaml: "tracker:\n  train:\n    learning_rat: 1\n",
			want: "unknown key tracker.train.learning_rat (did you mean tracker.train.learning_rate?)"},
		{desc: "profile section", yaml: "trakcer:\n  dropout: 0.1\n", want: "unknown key trakcer.dropout (did you mean tracker.dropout?)"},
		{desc: "profile, nothing close", yaml: "zzzzzzzzzz: 1\n", want: "unknown key zzzzzzzzzz\n"},
		{desc: "environment", env: map[string]string{"TRACKSUM_TRACKER_TRAIN_LEARNING_RAT": "1"},
			want: "did you mean TRACKSUM_TRACKER_TRAIN_LEARNING_RATE?"},
		{desc: "--set", sets: []string{"summarizer.train.max_step=5"}, want: "did you mean summarizer.train.max_steps?"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			file := ""
			if tc.yaml != "" {
				file = writeYAML(t, tc.yaml)
			}
			_, err := ParseSettings(tc.sets)
			if err == nil {
				_, err = Load(viper.New(), file, pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
			}
			if err == nil || !strings.Contains(err.Error()+"\n", tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
			if err != nil && strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"learning_rat", "learning_rate", 1}, {"kitten", "sitting", 3}} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestEmptyEnvIsNoSource is issue 35 item 16: an empty TRACKSUM_* variable is ignored (the value
// stays the profile's or the default), and --print-config must not say it came from it.
func TestEmptyEnvIsNoSource(t *testing.T) {
	t.Setenv("TRACKSUM_INFER_THRESHOLD", "")
	t.Setenv("TRACKSUM_INFER_WORKERS", "3")
	cfg, src, err := LoadWith(viper.New(), "", pflag.NewFlagSet("x", pflag.ContinueOnError), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Infer.Threshold != nil || src["infer.threshold"].Layer != "default" {
		t.Errorf("infer.threshold = %v from %v, want the default (unset) from the defaults", cfg.Infer.Threshold, src["infer.threshold"])
	}
	if src["infer.workers"].Layer != "env" || cfg.Infer.Workers != 3 {
		t.Errorf("infer.workers = %d from %v, want 3 from the environment", cfg.Infer.Workers, src["infer.workers"])
	}
}

// TestPrintConfigThresholdUnset (issue 34): infer.threshold is unset by default, and
// --print-config says which threshold applies then; a threshold that is set (0 included: every
// sentence kept) has no note.
func TestPrintConfigThresholdUnset(t *testing.T) {
	for _, tc := range []struct{ env, want, not string }{
		{"", "infer.threshold=  # default (unset: the tracker checkpoint's tracker.threshold, else 0.5)", ""},
		{"0.3", "infer.threshold=0.3  # env TRACKSUM_INFER_THRESHOLD\n", "unset"},
		{"0", "infer.threshold=0  # env TRACKSUM_INFER_THRESHOLD\n", "unset"},
	} {
		t.Setenv("TRACKSUM_INFER_THRESHOLD", tc.env)
		cfg, src, err := LoadWith(viper.New(), "", pflag.NewFlagSet("x", pflag.ContinueOnError), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := WriteResolvedIn(&b, cfg, src, PrintOptions{First: []string{"infer"}}); err != nil {
			t.Fatal(err)
		}
		line := b.String()[strings.Index(b.String(), "infer.threshold="):]
		line = line[:strings.IndexByte(line, '\n')+1]
		if !strings.Contains(strings.Join(strings.Fields(line), " "), strings.Join(strings.Fields(tc.want), " ")) || (tc.not != "" && strings.Contains(line, tc.not)) {
			t.Errorf("TRACKSUM_INFER_THRESHOLD=%q: %q, want %q", tc.env, line, tc.want)
		}
	}
}
