package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/hf/snapshot"
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
