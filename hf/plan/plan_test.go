package plan_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/plan"
	"github.com/tracksum/tracksum/hf/snapshot"
)

var update = flag.Bool("update", false, "rewrite the golden plans in testdata/")

// llama31 opens the Llama-3.1-8B config fixture (config.json only, placeholder tokenizer files).
func llama31(t *testing.T) decoder.Config {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "llama-3.1-8b", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"config.json": b, "tokenizer.json": []byte("{}"), "tokenizer_config.json": []byte("{}")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := snapshot.OpenConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := decoder.ConfigOf(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The figures a user can check by hand for the paper's recipe on Llama-3.1-8B (issue 19):
// 8,030,261,248 base parameters, 16.06 GB (14.96 GiB) of bf16 weights, 41,943,040 LoRA
// parameters (r16 on the seven projections of 32 layers), + 4,096 for lm_cls's score weight.
func TestPlanLlama31Paper(t *testing.T) {
	c := llama31(t)
	cases := []struct {
		desc       string
		headParams int64
		trainable  int64
	}{
		{"generative", 0, 41_943_040},
		{"lm_cls", 4096, 41_947_136},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			p, err := plan.Compute(plan.Inputs{Config: c, WeightDType: "bfloat16", LoRA: config.DefaultLoRA(), HeadParams: tc.headParams,
				Batch: 32, SeqLen: 128, AnswerTokens: 8, GradAccumulation: 2, Precision: plan.BF16, Section: "tracker"})
			if err != nil {
				t.Fatal(err)
			}
			if p.BaseParams != 8_030_261_248 {
				t.Errorf("base parameters %d, want 8,030,261,248", p.BaseParams)
			}
			if p.TrainableParams != tc.trainable {
				t.Errorf("trainable %d, want %d", p.TrainableParams, tc.trainable)
			}
			if got := plan.Bytes(p.BaseWeights); got != "16.06 GB (14.96 GiB)" {
				t.Errorf("base weights %s, want 16.06 GB (14.96 GiB)", got)
			}
		})
	}
}

// The 4-bit base of the paper's QLoRA on Llama-3.1-8B, by hand (issue 32): the seven projections
// of 32 layers hold 6,979,321,856 of the 8,030,261,248 parameters: 3,489,660,928 bytes of codes
// (half a byte each), 109,051,904 of 8-bit absmax (one per 64) and 1,703,936 of float32 scales
// (one per 256 absmax); the other 1,050,939,392 stay bf16 (2,101,878,784 bytes). One layer's
// projections, dequantized into bf16 while it computes: 218,103,808 x 2 bytes.
func TestPlanNF4Llama31(t *testing.T) {
	p, err := plan.Compute(plan.Inputs{Config: llama31(t), WeightDType: "bfloat16", LoRA: config.DefaultLoRA(), Batch: 32, SeqLen: 128, AnswerTokens: 8,
		GradAccumulation: 2, Precision: plan.BF16, Quantization: config.QuantizationNF4, Section: "tracker"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc      string
		got, want int64
	}{
		{"quantized parameters", p.QuantizedParams, 6_979_321_856},
		{"codes", p.Codes, 3_489_660_928},
		{"absmax", p.Absmax, 109_051_904 + 1_703_936},
		{"base weights", p.BaseWeights, 3_489_660_928 + 110_755_840 + 2_101_878_784},
		{"trainable", p.TrainableParams, 41_943_040},
		{"dequantized layer", p.Configured().Dequantized, 2 * 218_103_808},
	} {
		if tc.got != tc.want {
			t.Errorf("%s %s, want %s", tc.desc, plan.Count(tc.got), plan.Count(tc.want))
		}
	}
	if got := plan.Bytes(p.BaseWeights); got != "5.70 GB (5.31 GiB)" {
		t.Errorf("base weights %s, want 5.70 GB", got)
	}
	// A 4-bit base is frozen: full fine-tuning of it is refused; an unknown value is refused.
	for _, tc := range []struct {
		desc string
		in   plan.Inputs
		want string
	}{
		{"full fine-tuning", plan.Inputs{LoRA: config.LoRA{Rank: 0, Alpha: 16}, Quantization: config.QuantizationNF4}, "quantization nf4 needs adapters (lora.rank > 0)"},
		{"unknown", plan.Inputs{LoRA: config.DefaultLoRA(), Quantization: "int4"}, `quantization "int4", want none or nf4`},
	} {
		in := tc.in
		in.Config, in.Batch, in.SeqLen, in.GradAccumulation, in.Precision = llama31(t), 1, 128, 1, plan.BF16
		if _, err := plan.Compute(in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.desc, err, tc.want)
		}
	}
}

// The printed plans of the paper's two recipes, golden (regenerate: go test ./hf/plan -update).
func TestPlanGolden(t *testing.T) {
	c := llama31(t)
	cases := []struct {
		name string
		in   plan.Inputs
	}{
		{"tracker-generative", plan.Inputs{Batch: 32, SeqLen: 128, AnswerTokens: 8, Section: "tracker"}},
		{"tracker-lm_cls", plan.Inputs{Batch: 32, SeqLen: 128, HeadParams: 4096, Section: "tracker"}},
		{"summarizer", plan.Inputs{Batch: 16, SeqLen: 2048, AnswerTokens: 256, Section: "summarizer"}},
		{"summarizer-f32-checkpointing", plan.Inputs{Batch: 16, SeqLen: 2048, AnswerTokens: 256, Section: "summarizer", Precision: plan.F32, Checkpointing: true}},
		{"full-finetuning", plan.Inputs{Batch: 8, SeqLen: 512, AnswerTokens: 8, Section: "tracker", LoRA: config.LoRA{Rank: 0, Alpha: 16}}},
		// Issue 32: the paper's QLoRA recipes (configs/paper.yaml: nf4, lm_cls, checkpointing off)
		// on the 24 GB and 48 GB cards: the plan says whether they fit and, if not, the
		// checkpointing and micro-batches that do.
		{"tracker-nf4-24GiB", plan.Inputs{Batch: 32, SeqLen: 128, HeadParams: 4096, Section: "tracker", Quantization: config.QuantizationNF4, DeviceMemory: 24 << 30}},
		{"tracker-nf4-48GiB", plan.Inputs{Batch: 32, SeqLen: 128, HeadParams: 4096, Section: "tracker", Quantization: config.QuantizationNF4, DeviceMemory: 48 << 30}},
		{"summarizer-nf4-24GiB", plan.Inputs{Batch: 16, SeqLen: 2048, AnswerTokens: 256, Section: "summarizer", Quantization: config.QuantizationNF4, DeviceMemory: 24 << 30}},
		{"summarizer-nf4-48GiB", plan.Inputs{Batch: 16, SeqLen: 2048, AnswerTokens: 256, Section: "summarizer", Quantization: config.QuantizationNF4, DeviceMemory: 48 << 30}},
		// With flash attention (train.attention auto on a CUDA card, bf16): no [B, Heads, T, T]
		// probabilities or mask, so the summarizer's micro-batch of 16 fits 48 GiB with checkpointing.
		{"summarizer-flash", plan.Inputs{Batch: 16, SeqLen: 2048, AnswerTokens: 256, Section: "summarizer", Attention: plan.Flash}},
		{"summarizer-nf4-flash-24GiB", plan.Inputs{Batch: 16, SeqLen: 2048, AnswerTokens: 256, Section: "summarizer", Quantization: config.QuantizationNF4,
			Attention: plan.Flash, DeviceMemory: 24 << 30}},
		{"summarizer-nf4-flash-48GiB", plan.Inputs{Batch: 16, SeqLen: 2048, AnswerTokens: 256, Section: "summarizer", Quantization: config.QuantizationNF4,
			Attention: plan.Flash, DeviceMemory: 48 << 30}},
		{"tracker-nf4-flash-24GiB", plan.Inputs{Batch: 32, SeqLen: 128, HeadParams: 4096, Section: "tracker", Quantization: config.QuantizationNF4,
			Attention: plan.Flash, DeviceMemory: 24 << 30}},
		{"summarizer-nf4-f32-checkpointing", plan.Inputs{Batch: 16, SeqLen: 2048, AnswerTokens: 256, Section: "summarizer", Quantization: config.QuantizationNF4,
			Precision: plan.F32, Checkpointing: true, DeviceMemory: 141 << 30}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Config, in.WeightDType, in.GradAccumulation = c, "bfloat16", 2
			if in.DeviceMemory == 0 {
				in.DeviceMemory = 80 << 30
			}
			if in.Precision == "" {
				in.Precision = plan.BF16
			}
			if in.LoRA.Alpha == 0 {
				in.LoRA = config.DefaultLoRA()
			}
			p, err := plan.Compute(in)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := p.Write(&b); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "llama-3.1-8b", tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != string(want) {
				t.Errorf("plan differs from %s:\n%s", path, b.String())
			}
		})
	}
}

// Every size is printed with its unit, decimal and binary side by side.
func TestPlanUnitsNamed(t *testing.T) {
	if got := plan.Bytes(16_060_522_496); got != "16.06 GB (14.96 GiB)" {
		t.Errorf("Bytes = %q", got)
	}
	if got := plan.Count(8030261248); got != "8,030,261,248" {
		t.Errorf("Count = %q", got)
	}
}

// Absurd values are refused by Compute with a one-line error naming the key, before anything
// is sized.
func TestPlanRefusesAbsurdValues(t *testing.T) {
	c := llama31(t)
	cases := []struct {
		desc string
		mod  func(*plan.Inputs)
		want string
	}{
		{"layers", func(in *plan.Inputs) { in.Config.Layers = 1_000_000_000 }, "num_hidden_layers = 1000000000"},
		{"vocab", func(in *plan.Inputs) { in.Config.Vocab = 1 << 40 }, "vocab_size"},
		{"batch", func(in *plan.Inputs) { in.Batch = 0 }, "batch_size = 0"},
		{"seq", func(in *plan.Inputs) { in.SeqLen = 1 << 30 }, "max_seq_len"},
		{"answer", func(in *plan.Inputs) { in.AnswerTokens = 200 }, "answer tokens = 200"},
		{"precision", func(in *plan.Inputs) { in.Precision = "fp8" }, `precision "fp8"`},
		{"dtype", func(in *plan.Inputs) { in.WeightDType = "int4" }, `weight dtype "int4"`},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			in := plan.Inputs{Config: c, LoRA: config.DefaultLoRA(), Batch: 32, SeqLen: 128, AnswerTokens: 8, GradAccumulation: 1, Precision: plan.BF16}
			tc.mod(&in)
			_, err := plan.Compute(in)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line with %q", err, tc.want)
			}
		})
	}
}

// TestPlanLimitsAreTheDecoders: issue 35 item 8: --plan refused sizes that hf/decoder loads
// (num_hidden_layers 4,096 against 1,024, vocab_size 8,388,608 against 4,194,304). A config at
// hf/decoder's limits is planned; one past them is refused by both.
func TestPlanLimitsAreTheDecoders(t *testing.T) {
	for _, tc := range []struct {
		desc string
		mod  func(*decoder.Config)
		want string // "" when planned
	}{
		{"layers at the limit", func(c *decoder.Config) { c.Layers = decoder.MaxLayers }, ""},
		{"vocab at the limit", func(c *decoder.Config) { c.Vocab = decoder.MaxVocab }, ""},
		{"heads at the limit", func(c *decoder.Config) { c.Heads, c.KVHeads, c.HeadDim = decoder.MaxHeads, decoder.MaxHeads, 2 }, ""},
		{"layers past it", func(c *decoder.Config) { c.Layers = decoder.MaxLayers + 1 }, "num_hidden_layers = 4097, want 1..4096"},
		{"vocab past it", func(c *decoder.Config) { c.Vocab = decoder.MaxVocab + 1 }, "vocab_size = 8388609, want 1..8388608"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := llama31(t)
			tc.mod(&c)
			in := plan.Inputs{Config: c, LoRA: config.DefaultLoRA(), Batch: 1, SeqLen: 128, AnswerTokens: 8, GradAccumulation: 1, Precision: plan.BF16}
			_, err := plan.Compute(in)
			if tc.want == "" && err != nil {
				t.Errorf("refused: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// The advice is the first change that fits: checkpointing, then bf16, then a smaller micro-batch
// with the same examples per optimizer step.
func TestPlanAdvice(t *testing.T) {
	c := llama31(t)
	cases := []struct {
		desc   string
		in     plan.Inputs
		memory int64
		want   string
	}{
		{"checkpointing", plan.Inputs{Precision: plan.BF16, Batch: 16, SeqLen: 2048, AnswerTokens: 256}, 80 << 30, "summarizer.train.gradient_checkpointing: true"},
		{"smaller batch", plan.Inputs{Precision: plan.BF16, Checkpointing: true, Batch: 16, SeqLen: 2048, AnswerTokens: 256}, 40 << 30, "summarizer.train.batch_size: 4 with summarizer.train.grad_accumulation: 8"},
		{"nothing fits", plan.Inputs{Precision: plan.BF16, Checkpointing: true, Batch: 1, SeqLen: 64, AnswerTokens: 8}, 8 << 30, "no setting of this recipe fits"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			in := tc.in
			in.Config, in.LoRA, in.GradAccumulation, in.DeviceMemory, in.Section = c, config.DefaultLoRA(), 2, tc.memory, "summarizer"
			p, err := plan.Compute(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Advice(); !strings.Contains(got, tc.want) {
				t.Errorf("advice %q, want %q", got, tc.want)
			}
		})
	}
}
