package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// TestPretrainedDefaults: a section naming a pretrained snapshot takes the paper's recipe for the
// keys nobody set, shown by --print-config with their source (issue 36 item 8). It inherited the
// from-scratch summarizer's learning rate 1e-3, 40 epochs and beam 4.
func TestPretrainedDefaults(t *testing.T) {
	snap := t.TempDir()
	profile := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(profile, []byte("summarizer:\n  train:\n    epochs: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc, file, genConfig string
		sets                  []Setting
		want                  map[string]string // key -> "value  # source"
	}{
		{desc: "from scratch keeps its defaults", sets: nil,
			want: map[string]string{"summarizer.train.learning_rate": "0.001  # default", "summarizer.beam_size": "4  # default"}},
		{desc: "pretrained summarizer", sets: []Setting{{"summarizer.pretrained", snap}},
			want: map[string]string{
				"summarizer.train.learning_rate": "1e-05  # pretrained default (paper C.2/C.3)",
				"summarizer.train.epochs":        "5  # pretrained default (paper C.2/C.3)",
				"summarizer.train.max_steps":     "0  # pretrained default (paper: epochs decide)",
				"summarizer.beam_size":           "1  # pretrained default (transformers: greedy)",
				"summarizer.no_repeat_ngram":     "0  # pretrained default (transformers: no_repeat_ngram_size 0)",
				"summarizer.length_penalty":      "0  # pretrained default (transformers: none in greedy search)",
				"summarizer.dev_decode_limit":    "0  # pretrained default (released script: every dev instance)",
				"tracker.train.learning_rate":    "0.0005  # default",
			}},
		{desc: "what the user gave wins", file: profile,
			sets: []Setting{{"summarizer.pretrained", snap}, {"summarizer.beam_size", "3"}},
			want: map[string]string{
				"summarizer.train.epochs": "3  # file " + profile,
				"summarizer.beam_size":    "3  # set --set",
			}},
		{desc: "generation_config.json", genConfig: `{"num_beams": 2, "no_repeat_ngram_size": 3, "do_sample": false}`,
			sets: []Setting{{"summarizer.pretrained", snap}},
			want: map[string]string{
				"summarizer.beam_size":       "2  # pretrained default (" + filepath.Join(snap, "generation_config.json") + " num_beams)",
				"summarizer.no_repeat_ngram": "3  # pretrained default (" + filepath.Join(snap, "generation_config.json") + " no_repeat_ngram_size)",
			}},
		{desc: "generation_config.json samples", genConfig: `{"do_sample": true, "temperature": 0.6, "top_p": 0.9}`,
			sets: []Setting{{"summarizer.pretrained", snap}},
			want: map[string]string{
				"summarizer.temperature": "0.6  # pretrained default (" + filepath.Join(snap, "generation_config.json") + " do_sample, temperature)",
				"summarizer.top_p":       "0.9  # pretrained default (" + filepath.Join(snap, "generation_config.json") + " do_sample, top_p)",
				"summarizer.top_k":       "50  # pretrained default (" + filepath.Join(snap, "generation_config.json") + " do_sample, top_k)",
				"summarizer.beam_size":   "1  # pretrained default (transformers: greedy)",
			}},
		{desc: "no generation_config.json: greedy", sets: []Setting{{"summarizer.pretrained", snap}},
			want: map[string]string{
				"summarizer.temperature": "0  # pretrained default (transformers: do_sample false)",
				"summarizer.top_k":       "0  # pretrained default (transformers: no sampling)",
			}},
		{desc: "pretrained tracker", sets: []Setting{{"tracker.pretrained", snap}},
			want: map[string]string{
				"tracker.train.learning_rate":    "1e-05  # pretrained default (paper C.2/C.3)",
				"tracker.train.batch_size":       "32  # pretrained default (paper C.2)",
				"summarizer.train.learning_rate": "0.001  # default",
			}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			gc := filepath.Join(snap, "generation_config.json")
			os.Remove(gc)
			if tc.genConfig != "" {
				if err := os.WriteFile(gc, []byte(tc.genConfig), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg, src, err := LoadWith(viper.New(), tc.file, pflag.NewFlagSet("t", pflag.ContinueOnError), nil, tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteResolved(&b, cfg, src); err != nil {
				t.Fatal(err)
			}
			lines := map[string]string{}
			for _, l := range strings.Split(b.String(), "\n") {
				if k, v, ok := strings.Cut(l, "="); ok {
					lines[k] = strings.Join(strings.Fields(v), " ")
				}
			}
			for k, want := range tc.want {
				if got := lines[k]; got != strings.Join(strings.Fields(want), " ") {
					t.Errorf("%s=%s, want %s", k, got, want)
				}
			}
		})
	}
}

// TestPretrainedDefaultsBadGenerationConfig: an unreadable generation_config.json is one line
// naming the file.
func TestPretrainedDefaultsBadGenerationConfig(t *testing.T) {
	snap := t.TempDir()
	if err := os.WriteFile(filepath.Join(snap, "generation_config.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := LoadWith(viper.New(), "", pflag.NewFlagSet("t", pflag.ContinueOnError), nil, []Setting{{"summarizer.pretrained", snap}})
	if err == nil || !strings.Contains(err.Error(), "generation_config.json") {
		t.Fatalf("err = %v, want one naming generation_config.json", err)
	}
}
