package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
)

// LayerPretrained is the Source layer of a key set by the pretrained defaults: the task's section
// names a pretrained snapshot (tracker.pretrained, summarizer.pretrained) and no profile, variable,
// flag or --set gave the key, so the from-scratch model's default (tuned for a small network trained
// from scratch: learning rate 1e-3, 40 epochs, beam 4, ...) gives way to the paper's recipe, or to
// PEFT's, TRL's and transformers' defaults where the paper is silent.
const LayerPretrained = "pretrained default"

// pretrainedDefault is one key's value on a pretrained model and why.
type pretrainedDefault struct {
	key   string // below the section, e.g. train.learning_rate
	value any
	why   string
}

// pretrainedLoop are the loop settings of both tasks on a pretrained model: the paper's (C.2, C.3)
// and its released scripts'.
var pretrainedLoop = []pretrainedDefault{
	{"train.learning_rate", 1e-5, "(paper C.2/C.3)"},
	{"train.warmup_steps", 200, "(paper C.2/C.3)"},
	{"train.weight_decay", 0.01, "(paper C.2/C.3)"},
	{"train.decay", "linear", "(paper C.2/C.3)"},
	{"train.epochs", 5, "(paper C.2/C.3)"},
	{"train.max_steps", 0, "(paper: epochs decide)"},
	{"train.grad_accumulation", 2, "(paper C.2/C.3)"},
	{"train.eval_every", 32, "(released scripts)"},
	{"train.patience", 0, "(released scripts: no early stopping)"},
}

// pretrainedDefaults lists section's pretrained defaults (tracker or summarizer).
func pretrainedDefaults(section string) []pretrainedDefault {
	out := append([]pretrainedDefault(nil), pretrainedLoop...)
	switch section {
	case "tracker":
		out = append(out, pretrainedDefault{"train.batch_size", 32, "(paper C.2)"})
	case "summarizer":
		out = append(out,
			pretrainedDefault{"train.batch_size", 16, "(paper C.3)"},
			pretrainedDefault{"dev_decode_limit", 0, "(released script: every dev instance)"},
			// transformers' generate without a generation_config.json: greedy, no n-gram blocking;
			// tracksum's length_penalty (GNMT alpha) 0 is no penalty, as greedy search has none.
			pretrainedDefault{"beam_size", 1, "(transformers: greedy)"},
			pretrainedDefault{"length_penalty", 0.0, "(transformers: none in greedy search)"},
			pretrainedDefault{"no_repeat_ngram", 0, "(transformers: no_repeat_ngram_size 0)"},
			pretrainedDefault{"temperature", 0.0, "(transformers: do_sample false)"},
			pretrainedDefault{"top_p", 1.0, "(transformers)"},
			pretrainedDefault{"top_k", 0, "(transformers: no sampling)"},
		)
	}
	return out
}

// generationConfig is what the pretrained defaults read of a snapshot's generation_config.json.
type generationConfig struct {
	NumBeams          *int     `json:"num_beams"`
	NoRepeatNgramSize *int     `json:"no_repeat_ngram_size"`
	DoSample          bool     `json:"do_sample"`
	Temperature       *float64 `json:"temperature"`
	TopP              *float64 `json:"top_p"`
	TopK              *int     `json:"top_k"`
}

// readGenerationConfig reads dir's generation_config.json; a missing file is no setting.
func readGenerationConfig(dir string) (generationConfig, string, error) {
	var g generationConfig
	path := filepath.Join(dir, "generation_config.json")
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return g, path, nil
	case err != nil:
		return g, path, err
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return g, path, fmt.Errorf("%s: %w", path, err)
	}
	return g, path, nil
}

// applyPretrainedDefaults gives every key of a section with a pretrained snapshot that still has
// its built-in default (src says "default") its pretrained default, and records that in src. The
// summarizer's num_beams, no_repeat_ngram_size and sampling (do_sample, temperature, top_p,
// top_k) come from the snapshot's generation_config.json when it sets them, as transformers'
// generate reads them.
func applyPretrainedDefaults(c *Config, src map[string]Source) error {
	leaves := map[string]reflect.Value{}
	leafKeys("", reflect.ValueOf(c).Elem(), leaves)
	for _, s := range []struct{ section, snapshot string }{
		{"tracker", c.Tracker.Pretrained}, {"summarizer", c.Summarizer.Pretrained},
	} {
		if s.snapshot == "" {
			continue
		}
		defaults := pretrainedDefaults(s.section)
		if s.section == "summarizer" {
			g, path, err := readGenerationConfig(s.snapshot)
			if err != nil {
				return fmt.Errorf("summarizer.pretrained: %w", err)
			}
			gen := "(" + path
			for i, d := range defaults {
				switch {
				// do_sample: transformers samples with the file's temperature, top_p and top_k, or
				// its own defaults (1.0, 1.0, 50) for those the file leaves out.
				case d.key == "temperature" && g.DoSample:
					defaults[i] = pretrainedDefault{d.key, positive(g.Temperature, 1), gen + " do_sample, temperature)"}
				case d.key == "top_p" && g.DoSample:
					defaults[i] = pretrainedDefault{d.key, positive(g.TopP, 1), gen + " do_sample, top_p)"}
				case d.key == "top_k" && g.DoSample:
					k := 50
					if g.TopK != nil && *g.TopK >= 0 {
						k = *g.TopK
					}
					defaults[i] = pretrainedDefault{d.key, k, gen + " do_sample, top_k)"}
				case d.key == "beam_size" && g.NumBeams != nil && *g.NumBeams > 0:
					defaults[i] = pretrainedDefault{d.key, *g.NumBeams, "(" + path + " num_beams)"}
				case d.key == "no_repeat_ngram" && g.NoRepeatNgramSize != nil && *g.NoRepeatNgramSize >= 0:
					defaults[i] = pretrainedDefault{d.key, *g.NoRepeatNgramSize, "(" + path + " no_repeat_ngram_size)"}
				}
			}
		}
		for _, d := range defaults {
			key := s.section + "." + d.key
			leaf, ok := leaves[key]
			if !ok {
				panic("config: pretrained default for no key " + key)
			}
			if src[key].Layer != "default" {
				continue
			}
			leaf.Set(reflect.ValueOf(d.value).Convert(leaf.Type()))
			src[key] = Source{Layer: LayerPretrained, From: d.why}
		}
	}
	return nil
}

// positive returns *v when set and > 0, else def.
func positive(v *float64, def float64) float64 {
	if v != nil && *v > 0 {
		return *v
	}
	return def
}
