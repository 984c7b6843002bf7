package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/tensorio"
)

func defaults(out string) options {
	return options{out: out, modelType: "llama", dtype: "bfloat16", hidden: 16, layers: 1, heads: 2, kvHeads: 1, intermediate: 32, seed: 1}
}

// TestWriteWithTokenizer: a copied tokenizer sizes the vocabulary and sets the special ids of
// config.json and generation_config.json; the snapshot opens.
func TestWriteWithTokenizer(t *testing.T) {
	o := defaults(filepath.Join(t.TempDir(), "snap"))
	o.tokenizer = filepath.Join("..", "..", "hf", "decoder", "testdata", "llama") // <unk> <s> </s> + 26 tokens: 29 ids
	if err := write(o); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(o.out)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"config.json", "generation_config.json"} {
		var c map[string]any
		b, err := os.ReadFile(filepath.Join(o.out, file))
		if err == nil {
			err = json.Unmarshal(b, &c)
		}
		if err != nil {
			t.Fatal(err)
		}
		if c["bos_token_id"] != 1.0 || len(c["eos_token_id"].([]any)) != 1 || c["eos_token_id"].([]any)[0] != 2.0 {
			t.Errorf("%s: bos %v eos %v, want 1 and [2]", file, c["bos_token_id"], c["eos_token_id"])
		}
	}
	if v := s.Config["vocab_size"]; v != 29.0 {
		t.Errorf("vocab_size %v, want the tokenizer's 29 ids", v)
	}
	if rs, _ := s.Config["rope_scaling"].(map[string]any); rs["rope_type"] != "llama3" {
		t.Errorf("rope_scaling %v, want Llama 3.1's", s.Config["rope_scaling"])
	}
}

// TestWriteNLI: --model-type bert|roberta|deberta-v2 with --labels writes a sequence-classification
// snapshot with id2label that opens and carries its head.
func TestWriteNLI(t *testing.T) {
	for _, mt := range []string{"bert", "roberta", "deberta-v2"} {
		o := defaults(filepath.Join(t.TempDir(), mt))
		o.modelType, o.labels = mt, []string{"contradiction", "neutral", "entailment"}
		if err := write(o); err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.Open(o.out)
		if err != nil {
			t.Fatal(err)
		}
		head := "classifier.weight"
		if mt == "roberta" {
			head = "classifier.out_proj.weight"
		}
		if sh, ok := s.Shape(head); !ok || sh.Dimensions[0] != 3 {
			t.Errorf("%s: %s %v", mt, head, sh)
		}
		if id2, _ := s.Config["id2label"].(map[string]any); id2["2"] != "entailment" {
			t.Errorf("%s: id2label %v", mt, s.Config["id2label"])
		}
	}
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	taken := filepath.Join(dir, "taken")
	if err := write(defaults(taken)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc string
		edit func(o *options)
		want string
	}{
		{"dtype", func(o *options) { o.dtype = "int8" }, `--dtype "int8"`},
		{"heads", func(o *options) { o.heads = 3 }, "not a multiple of --heads"},
		{"kv heads", func(o *options) { o.kvHeads = 3; o.heads = 4 }, "must be positive and divide --heads"},
		{"model type", func(o *options) { o.modelType = "t5" }, `model type "t5"`},
		{"tokenizer", func(o *options) { o.tokenizer = filepath.Join(dir, "none") }, "tokenizer.json"},
		{"vocab below the tokenizer", func(o *options) {
			o.tokenizer, o.vocab = filepath.Join("..", "..", "hf", "decoder", "testdata", "llama"), 10
		}, "smaller than the tokenizer's 29 ids"},
		{"existing output", func(o *options) { o.out = taken }, "use --overwrite"},
		{"labels on a causal LM", func(o *options) { o.labels = []string{"entailment", "not_entailment"} }, "--labels: only the encoders"},
		{"quantize", func(o *options) { o.quantize = "int8" }, `--quantize "int8": want nf4`},
		{"quantize an encoder", func(o *options) { o.quantize, o.modelType = "nf4", "bert" }, "--quantize: only the causal LMs"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			o := defaults(filepath.Join(dir, tc.desc))
			tc.edit(&o)
			err := write(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
			if o.out != taken {
				if _, err := os.Stat(o.out); err == nil {
					t.Errorf("%s was written despite the error", o.out)
				}
			}
		})
	}
}

// TestWriteNF4: --quantize nf4 writes the seven projections of each layer in bitsandbytes' 4-bit
// layout (packed U8 [n/2, 1], U8 absmax codes, nested absmax and maps, the quant_state JSON),
// the rest as it was, and a quantization_config; the snapshot opens showing the unquantized
// tensors.
func TestWriteNF4(t *testing.T) {
	o := defaults(filepath.Join(t.TempDir(), "snap"))
	o.quantize = "nf4"
	if err := write(o); err != nil {
		t.Fatal(err)
	}
	header, err := tensorio.ReadSafetensorsHeader(filepath.Join(o.out, snapshot.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	q := "model.layers.0.self_attn.q_proj.weight" // [16, 16]: 256 values, 4 blocks of 64
	for name, want := range map[string]string{
		q: "(Uint8)[128, 1]", q + ".absmax": "(Uint8)[4]", q + ".quant_map": "(Float32)[16]",
		q + ".nested_absmax": "(Float32)[1]", q + ".nested_quant_map": "(Float32)[256]",
		"model.embed_tokens.weight": "(BFloat16)[300, 16]", "model.layers.0.input_layernorm.weight": "(BFloat16)[16]",
	} {
		if e, ok := header[name]; !ok || e.Shape.String() != want {
			t.Errorf("%s: %v (present %v), want %s", name, e.Shape, ok, want)
		}
	}
	quantized := 0
	for name := range header {
		if strings.HasSuffix(name, ".quant_state.bitsandbytes__nf4") {
			quantized++
		}
	}
	if quantized != 7 {
		t.Errorf("%d quantized tensors, want the 7 projections", quantized)
	}
	s, err := snapshot.Open(o.out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Quant == nil || s.Quant.QuantType != "nf4" || !s.Quant.DoubleQuant || s.Quant.ComputeDType != dtypes.BFloat16 {
		t.Errorf("quantization_config read as %+v", s.Quant)
	}
	if sh, _ := s.Shape(q); sh.String() != "(BFloat16)[16, 16]" {
		t.Errorf("%s shows as %s, want (BFloat16)[16 16]", q, sh)
	}
	if n := len(s.Names()); n != 3+9 {
		t.Errorf("%d tensors listed, want 12: %v", n, s.Names())
	}
	if _, err := s.Tensors(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}
