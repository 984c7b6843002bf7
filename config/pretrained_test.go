package config

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// TestPretrainedValidation checks the one-line errors of the pretrained keys (issue 9 items 2, 7, 10).
func TestPretrainedValidation(t *testing.T) {
	for _, tc := range []struct {
		desc, yaml, want string
	}{
		{"negative rank", "tracker:\n  lora:\n    rank: -1\n", "tracker.lora.rank: must be >= 0 (0 = full fine-tuning), got -1"},
		{"zero alpha", "summarizer:\n  lora:\n    alpha: 0\n", "summarizer.lora.alpha: must be > 0, got 0"},
		{"dropout", "tracker:\n  lora:\n    dropout: 1\n", "tracker.lora.dropout: must be in [0, 1), got 1"},
		{"unknown target", "tracker:\n  lora:\n    target_modules: [q_proj, qkv]\n", `tracker.lora.target_modules: unknown layer "qkv" (all-linear; decoders: down_proj, gate_proj, gate_up_proj, k_proj, o_proj, q_proj, qkv_proj, up_proj, v_proj; encoders: `},
		{"duplicate target", "summarizer:\n  lora:\n    target_modules: [q_proj, q_proj]\n", `summarizer.lora.target_modules: "q_proj" is listed twice`},
		{"all-linear in a list", "tracker:\n  lora:\n    target_modules: [all-linear, q_proj]\n", "tracker.lora.target_modules: all-linear stands alone (every linear layer), not in a list with other names"},
		{"quantization", "summarizer:\n  train:\n    quantization: int4\n", `summarizer.train.quantization: must be one of [none nf4], got "int4"`},
		{"no target with a rank", "tracker:\n  lora:\n    target_modules: []\n", "tracker.lora.target_modules: must name at least one layer when rank > 0"},
		{"head", "tracker:\n  head: softmax\n", `tracker.head: must be one of [auto encoder_cls lm_cls generative], got "softmax"`},
		{"max_seq_len", "summarizer:\n  max_seq_len: 0\n", "summarizer.max_seq_len: must be >= 8, got 0"},
		{"devices", "tracker:\n  train:\n    devices: 0\n", "tracker.train.devices: must be >= 1, got 0"},
		{"unknown lora key", "tracker:\n  lora:\n    r: 8\n", "r"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := Load(viper.New(), writeYAML(t, tc.yaml), pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant one containing %q", err, tc.want)
			}
		})
	}
	// Full fine-tuning needs no targets; BERT's own names are accepted.
	cfg, err := Load(viper.New(), writeYAML(t, "tracker:\n  lora:\n    rank: 0\n    target_modules: []\nsummarizer:\n  lora:\n    target_modules: [query, value, output.dense]\n"),
		pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tracker.LoRA.Rank != 0 || !slices.Equal(cfg.Summarizer.LoRA.TargetModules, []string{"query", "value", "output.dense"}) {
		t.Errorf("got %+v %+v", cfg.Tracker.LoRA, cfg.Summarizer.LoRA)
	}
}

// TestPretrainedEnv checks that the new keys are overridable from the environment, lists included.
func TestPretrainedEnv(t *testing.T) {
	t.Setenv("TRACKSUM_TRACKER_PRETRAINED", "/models/llama")
	t.Setenv("TRACKSUM_TRACKER_HEAD", "generative")
	t.Setenv("TRACKSUM_TRACKER_LORA_RANK", "8")
	t.Setenv("TRACKSUM_TRACKER_LORA_RSLORA", "false")
	t.Setenv("TRACKSUM_TRACKER_LORA_TARGET_MODULES", "q_proj,v_proj")
	t.Setenv("TRACKSUM_SUMMARIZER_MAX_SEQ_LEN", "1024")
	t.Setenv("TRACKSUM_SUMMARIZER_TRAIN_DEVICES", "4")
	cfg, err := Load(viper.New(), "", pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, su := cfg.Tracker, cfg.Summarizer
	if tr.Pretrained != "/models/llama" || tr.Head != HeadGenerative || tr.LoRA.Rank != 8 || tr.LoRA.RSLoRA ||
		!slices.Equal(tr.LoRA.TargetModules, []string{"q_proj", "v_proj"}) || su.MaxSeqLen != 1024 || su.Train.Devices != 4 {
		t.Errorf("tracker %q %q %+v; summarizer max_seq_len %d devices %d", tr.Pretrained, tr.Head, tr.LoRA, su.MaxSeqLen, su.Train.Devices)
	}
}

func TestLoRAScale(t *testing.T) {
	for _, tc := range []struct {
		l    LoRA
		want float64
	}{
		{LoRA{Rank: 16, Alpha: 16, RSLoRA: true}, 4},
		{LoRA{Rank: 16, Alpha: 16}, 1},
		{LoRA{Rank: 8, Alpha: 32}, 4},
		{LoRA{Rank: 2, Alpha: 1, RSLoRA: true}, 1 / math.Sqrt2},
		{LoRA{Rank: 0, Alpha: 16}, 0},
	} {
		if got := tc.l.Scale(); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v: scale %g, want %g", tc.l, got, tc.want)
		}
	}
}

func TestResolveHead(t *testing.T) {
	for _, tc := range []struct {
		head, modelType, want, err string
	}{
		{HeadAuto, "bert", HeadEncoderCLS, ""},
		{HeadAuto, "llama", HeadLMCLS, ""},
		{HeadGenerative, "qwen2", HeadGenerative, ""},
		{HeadLMCLS, "gemma", HeadLMCLS, ""},
		{HeadEncoderCLS, "bert", HeadEncoderCLS, ""},
		{HeadEncoderCLS, "llama", "", "tracker.head: encoder_cls needs an encoder"},
		{HeadGenerative, "bert", "", "tracker.head: generative needs a causal LM"},
		// Encoders hf/family registers but hf/encoder does not fine-tune (the nli judge's).
		{HeadAuto, "roberta", "", `model_type "roberta" is an encoder the tracker does not fine-tune`},
		{HeadEncoderCLS, "deberta-v2", "", `model_type "deberta-v2" is an encoder the tracker does not fine-tune`},
	} {
		c := DefaultTracker()
		c.Head = tc.head
		got, err := c.ResolveHead(tc.modelType)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s on %s: %q, %v; want %q, %q", tc.head, tc.modelType, got, err, tc.want, tc.err)
		}
	}
}

// TestPaperPretrained pins the paper's recipe for the pretrained path in configs/paper.yaml
// (issue 9 item 11): LoRA r 16, alpha 16, rsLoRA, dropout 0 on the seven projections of both
// models, max sequence 128 (tracker) and 2048 (summarizer), the paper's classification head.
func TestPaperPretrained(t *testing.T) {
	cfg, err := Load(viper.New(), "../configs/paper.yaml", pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc   string
		l      LoRA
		maxSeq int
		want   int
	}{
		{"tracker", cfg.Tracker.LoRA, cfg.Tracker.MaxSeqLen, 128},
		{"summarizer", cfg.Summarizer.LoRA, cfg.Summarizer.MaxSeqLen, 2048},
	} {
		if tc.l.Rank != 16 || tc.l.Alpha != 16 || !tc.l.RSLoRA || tc.l.Dropout != 0 || !slices.Equal(tc.l.TargetModules, LoRATargetsLlama) || tc.maxSeq != tc.want {
			t.Errorf("paper %s: lora %+v, max_seq_len %d; want r16 alpha16 rslora dropout 0 on %v, %d", tc.desc, tc.l, tc.maxSeq, LoRATargetsLlama, tc.want)
		}
	}
	// The paper's QLoRA: Unsloth's bnb-4bit base (issue 32).
	if cfg.Tracker.Train.Quantization != QuantizationNF4 || cfg.Summarizer.Train.Quantization != QuantizationNF4 {
		t.Errorf("paper: quantization %q %q, want nf4 for both", cfg.Tracker.Train.Quantization, cfg.Summarizer.Train.Quantization)
	}
	if cfg.Tracker.Head != HeadLMCLS || cfg.Tracker.Pretrained != "" || cfg.Summarizer.Pretrained != "" {
		t.Errorf("paper: head %q, pretrained %q %q; want lm_cls and no path in the profile", cfg.Tracker.Head, cfg.Tracker.Pretrained, cfg.Summarizer.Pretrained)
	}
}

// all-linear (PEFT's shorthand) is the default and resolves per family: a Phi-3 base gets its
// fused projections, where the seven Llama names used to be refused ("lora target module q_proj
// is not a phi3 layer"); an explicit list is kept as given.
func TestLoRAResolve(t *testing.T) {
	if d := DefaultLoRA(); !d.AllLinear() {
		t.Fatalf("default targets %v, want [all-linear]", d.TargetModules)
	}
	for _, tc := range []struct {
		desc, modelType string
		targets, want   []string
		err             string
	}{
		{"llama", "llama", []string{"all-linear"}, LoRATargetsLlama, ""},
		{"phi3", "phi3", []string{"all-linear"}, []string{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}, ""},
		{"bert", "bert", []string{"all-linear"}, []string{"query", "key", "value", "dense"}, ""},
		{"PEFT's case-insensitive match", "phi3", []string{"ALL-Linear"}, []string{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}, ""},
		{"explicit list kept", "phi3", []string{"q_proj"}, []string{"q_proj"}, ""},
		{"unknown family", "gpt2", []string{"all-linear"}, nil, `model_type "gpt2" is not a family of hf/family`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			l := DefaultLoRA()
			l.TargetModules = tc.targets
			got, err := l.Resolve(tc.modelType)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got.TargetModules, tc.want) || got.Rank != l.Rank {
				t.Errorf("Resolve(%s) = %+v, %v; want targets %v", tc.modelType, got, err, tc.want)
			}
		})
	}
	// A profile may write the shorthand as PEFT does, a string rather than a list.
	cfg, err := Load(viper.New(), writeYAML(t, "tracker:\n  lora:\n    target_modules: all-linear\n"), pflag.NewFlagSet("x", pflag.ContinueOnError), nil)
	if err != nil || !cfg.Tracker.LoRA.AllLinear() {
		t.Errorf("target_modules: all-linear read as %v, %v", cfg.Tracker.LoRA.TargetModules, err)
	}
}
