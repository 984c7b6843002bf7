package config

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// hfCases are the Hugging Face names of docs/configuration.md's tables with a value each, the key
// they become for --task tracker and --task summarizer, and the value the key gets.
var hfCases = []struct {
	name, value, tracker, summarizer, want string
}{
	{"learning_rate", "1e-4", "tracker.train.learning_rate", "summarizer.train.learning_rate", "0.0001"},
	{"num_train_epochs", "3", "tracker.train.epochs", "summarizer.train.epochs", "3"},
	{"max_steps", "500", "tracker.train.max_steps", "summarizer.train.max_steps", "500"},
	{"per_device_train_batch_size", "8", "tracker.train.batch_size", "summarizer.train.batch_size", "8"},
	{"gradient_accumulation_steps", "4", "tracker.train.grad_accumulation", "summarizer.train.grad_accumulation", "4"},
	{"warmup_steps", "100", "tracker.train.warmup_steps", "summarizer.train.warmup_steps", "100"},
	{"lr_scheduler_type", "cosine", "tracker.train.decay", "summarizer.train.decay", "cosine"},
	{"lr_scheduler_type", "constant", "tracker.train.decay", "summarizer.train.decay", "none"},
	{"weight_decay", "0.05", "tracker.train.weight_decay", "summarizer.train.weight_decay", "0.05"},
	{"adam_beta1", "0.8", "tracker.train.beta1", "summarizer.train.beta1", "0.8"},
	{"adam_beta2", "0.99", "tracker.train.beta2", "summarizer.train.beta2", "0.99"},
	{"adam_epsilon", "1e-6", "tracker.train.epsilon", "summarizer.train.epsilon", "1e-06"},
	{"max_grad_norm", "0.5", "tracker.train.clip_norm", "summarizer.train.clip_norm", "0.5"},
	{"eval_steps", "50", "tracker.train.eval_every", "summarizer.train.eval_every", "50"},
	{"early_stopping_patience", "2", "tracker.train.patience", "summarizer.train.patience", "2"},
	{"max_seq_length", "256", "tracker.max_seq_len", "summarizer.max_seq_len", "256"},
	{"model_name_or_path", "/snapshots/llama", "tracker.pretrained", "summarizer.pretrained", "/snapshots/llama"},
	{"packing", "true", "tracker.train.packing", "summarizer.train.packing", "true"},
	{"attn_implementation", "flash_attention_2", "tracker.train.attention", "summarizer.train.attention", "flash"},
	{"attn_implementation", "eager", "tracker.train.attention", "summarizer.train.attention", "eager"},
	{"r", "8", "tracker.lora.rank", "summarizer.lora.rank", "8"},
	{"lora_alpha", "32", "tracker.lora.alpha", "summarizer.lora.alpha", "32"},
	{"lora_dropout", "0.1", "tracker.lora.dropout", "summarizer.lora.dropout", "0.1"},
	{"use_rslora", "false", "tracker.lora.rslora", "summarizer.lora.rslora", "false"},
	{"target_modules", "q_proj,v_proj", "tracker.lora.target_modules", "summarizer.lora.target_modules", "q_proj,v_proj"},
	{"task_type", "SEQ_CLS", "tracker.head", "tracker.head", "auto"},
	{"task_type", "CAUSAL_LM", "tracker.head", "tracker.head", "generative"},
	{"num_beams", "2", "summarizer.beam_size", "summarizer.beam_size", "2"},
	{"max_new_tokens", "64", "summarizer.max_new_tokens", "summarizer.max_new_tokens", "64"},
	{"length_penalty", "1.2", "summarizer.length_penalty", "summarizer.length_penalty", "1.2"},
	{"no_repeat_ngram_size", "3", "summarizer.no_repeat_ngram", "summarizer.no_repeat_ngram", "3"},
}

// TestHFNamesInSet: each Hugging Face name of the table, given to --set or written at the top of a
// profile, sets the task's key (with a note saying which), for both tasks.
func TestHFNamesInSet(t *testing.T) {
	for _, tc := range hfCases {
		for _, section := range []string{"tracker", "summarizer"} {
			want := tc.tracker
			if section == "summarizer" {
				want = tc.summarizer
			}
			t.Run(tc.name+"="+tc.value+"/"+section, func(t *testing.T) {
				var notes bytes.Buffer
				scope := Scope{Section: section, Notes: &notes}
				sets, err := ParseSettingsIn([]string{tc.name + "=" + tc.value}, scope)
				if err != nil {
					t.Fatal(err)
				}
				if len(sets) != 1 || sets[0].Key != want {
					t.Fatalf("--set %s: got %v, want key %s", tc.name, sets, want)
				}
				if !strings.Contains(notes.String(), tc.name+" read as "+want) {
					t.Errorf("note %q does not say %s became %s", notes.String(), tc.name, want)
				}
				cfg, _, err := LoadIn(viper.New(), "", pflag.NewFlagSet("x", pflag.ContinueOnError), nil, sets, scope)
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := cfg.Value(want); got != tc.want {
					t.Errorf("--set: %s = %q, want %q", want, got, tc.want)
				}

				value := tc.value
				if strings.Contains(value, ",") {
					value = "[" + value + "]"
				}
				notes.Reset()
				file := writeYAML(t, tc.name+": "+value+"\n")
				cfg, src, err := LoadIn(viper.New(), file, pflag.NewFlagSet("x", pflag.ContinueOnError), nil, nil, scope)
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := cfg.Value(want); got != tc.want {
					t.Errorf("profile: %s = %q, want %q", want, got, tc.want)
				}
				if src[want].Layer != "file" {
					t.Errorf("profile: %s's source is %v, want the file", want, src[want])
				}
				if !strings.Contains(notes.String(), tc.name+" read as "+want) {
					t.Errorf("profile: note %q does not say %s became %s", notes.String(), tc.name, want)
				}
			})
		}
	}
}

// TestHFNamesCoverTheDocs: every name of docs/configuration.md's TrainingArguments, LoraConfig and
// GenerationConfig tables is in HFNames and in hfCases (seed is a tracksum key already;
// load_best_model_at_end is always on).
func TestHFNamesCoverTheDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "## From Hugging Face names")
	end := strings.Index(text, "| NLI cross-encoder")
	if start < 0 || end < start {
		t.Fatal("docs/configuration.md: the Hugging Face tables moved")
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_0-9]+)")
	var names []string
	for _, m := range row.FindAllStringSubmatch(text[start:end], -1) {
		names = append(names, m[1])
	}
	// adam_beta1's row also names adam_beta2 and adam_epsilon.
	names = append(names, "adam_beta2", "adam_epsilon")
	if len(names) < 20 {
		t.Fatalf("read %d names from the docs' tables: %v", len(names), names)
	}
	for _, name := range names {
		if name == "seed" || name == "load_best_model_at_end" {
			continue
		}
		if _, ok := LookupHFName(name); !ok {
			t.Errorf("%s: in docs/configuration.md, not in HFNames", name)
		}
		if !slices.ContainsFunc(hfCases, func(c struct{ name, value, tracker, summarizer, want string }) bool { return c.name == name }) {
			t.Errorf("%s: not tested in hfCases", name)
		}
	}
}

// TestHFNamesWithoutTask: a command that trains no task (eval, infer) refuses a Hugging Face name
// and names the keys it could be (a generation name's inference override among them).
func TestHFNamesWithoutTask(t *testing.T) {
	for _, tc := range []struct {
		desc, set, yaml, want string
	}{
		{desc: "--set", set: "learning_rate=1e-4",
			want: "--set learning_rate: a Hugging Face name, read as a key of the task trained, and this command trains none: give tracker.train.learning_rate or summarizer.train.learning_rate"},
		{desc: "profile", yaml: "lora_alpha: 32\n",
			want: "lora_alpha: a Hugging Face name, read as a key of the task trained, and this command trains none: give tracker.lora.alpha or summarizer.lora.alpha"},
		{desc: "generation name", set: "num_beams=3",
			want: "--set num_beams: a Hugging Face name, read as a key of the task trained, and this command trains none: give summarizer.beam_size or infer.decoding.beam_size"},
		{desc: "fixed key", yaml: "task_type: CAUSAL_LM\n", want: "task_type: a Hugging Face name, read as a key of the task trained, and this command trains none: give tracker.head"},
		{desc: "the name and its key both in the profile", yaml: "learning_rate: 1\ntracker:\n  train:\n    learning_rate: 2\n",
			want: "learning_rate: a Hugging Face name for tracker.train.learning_rate, which the file sets too"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			scope := Scope{}
			if strings.Contains(tc.desc, "both") {
				scope.Section = "tracker"
			}
			var sets []Setting
			var err error
			if tc.set != "" {
				sets, err = ParseSettingsIn([]string{tc.set}, scope)
			}
			file := ""
			if tc.yaml != "" {
				file = writeYAML(t, tc.yaml)
			}
			if err == nil {
				_, _, err = LoadIn(viper.New(), file, pflag.NewFlagSet("x", pflag.ContinueOnError), nil, sets, scope)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("err %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestPartialScopeLeavesNamesOut: the first pass of tracksum-train (the task not known yet) reads
// the profile and --set without their Hugging Face names and unknown keys, and still reads the task.
func TestPartialScopeLeavesNamesOut(t *testing.T) {
	scope := Scope{Partial: true}
	sets, err := ParseSettingsIn([]string{"learning_rate=1e-4", "learning_rat=1", "train.task=summarizer"}, scope)
	if err != nil {
		t.Fatal(err)
	}
	file := writeYAML(t, "lora_alpha: 32\ntracker:\n  dropoutt: 0.1\n")
	cfg, _, err := LoadIn(viper.New(), file, pflag.NewFlagSet("x", pflag.ContinueOnError), nil, sets, scope)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Train.Task != "summarizer" {
		t.Errorf("train.task = %q, want summarizer", cfg.Train.Task)
	}
}

// TestDidYouMeanPrefersTheTask: a mistyped key is matched to the task's section first, so that
// --task tracker --set learning_rat suggests tracker.train.learning_rate (it suggested
// summarizer.train.learning_rate, the first in key order); without a task the order decides.
func TestDidYouMeanPrefersTheTask(t *testing.T) {
	for _, tc := range []struct {
		key, section, want string
	}{
		{"learning_rat", "tracker", "tracker.train.learning_rate"},
		{"learning_rat", "summarizer", "summarizer.train.learning_rate"},
		{"batch_siz", "tracker", "tracker.train.batch_size"},
		{"learning_rat", "", "summarizer.train.learning_rate"},
		{"per_device_batch_size", "tracker", "per_device_train_batch_size"},
		{"gradient_accumulation", "tracker", "tracker.train.grad_accumulation"},
	} {
		_, err := ParseSettingsIn([]string{tc.key + "=1"}, Scope{Section: tc.section})
		if want := "(did you mean " + tc.want + "?)"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--set %s with section %q: err %v, want %q", tc.key, tc.section, err, want)
		}
	}
}
