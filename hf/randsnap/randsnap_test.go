package randsnap

import (
	"bytes"
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/hf/tokenizer"
)

func tiny(modelType string, dt dtypes.DType) Decoder {
	return Decoder{ModelType: modelType, Vocab: 64, Hidden: 16, Layers: 2, Heads: 4, KVHeads: 2,
		Intermediate: 32, Tied: modelType == "gemma", DType: dt, Seed: 7}
}

func nf4(d Decoder) Decoder {
	d.Quantize = "nf4"
	return d
}

// TestWriteDecoder: every family and dtype opens as a snapshot with the written shapes and dtype,
// its tokenizer loads, and the same seed writes the same bytes.
func TestWriteDecoder(t *testing.T) {
	cases := []struct {
		desc      string
		d         Decoder
		wantNames int
	}{
		{"llama f32", tiny("llama", dtypes.Float32), 3 + 2*9},
		{"mistral bf16", tiny("mistral", dtypes.BFloat16), 3 + 2*9},
		{"qwen2 f16 biases", tiny("qwen2", dtypes.Float16), 3 + 2*12},
		{"gemma tied", tiny("gemma", dtypes.InvalidDType), 2 + 2*9},
		{"llama nf4", nf4(tiny("llama", dtypes.BFloat16)), 3 + 2*9},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			if err := WriteDecoder(dir, tc.d); err != nil {
				t.Fatal(err)
			}
			s, err := snapshot.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(s.Names()); got != tc.wantNames {
				t.Errorf("%d tensors, want %d: %v", got, tc.wantNames, s.Names())
			}
			want := tc.d.DType
			if want == dtypes.InvalidDType {
				want = dtypes.Float32
			}
			sh, ok := s.Shape("model.layers.1.self_attn.k_proj.weight")
			if !ok || sh.DType != want || sh.Dimensions[0] != 2*4 || sh.Dimensions[1] != 16 {
				t.Errorf("k_proj shape %v (found %v), want %s [8 16]", sh, ok, want)
			}
			if _, err := s.Tensors(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			tok, err := tokenizer.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range tok.Encode("hello", true) {
				if id < 0 || id >= tc.d.Vocab {
					t.Errorf("token id %d outside the vocabulary of %d", id, tc.d.Vocab)
				}
			}
			dir2 := t.TempDir()
			if err := WriteDecoder(dir2, tc.d); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"model.safetensors", "config.json", "tokenizer.json"} {
				a, _ := os.ReadFile(filepath.Join(dir, f))
				b, _ := os.ReadFile(filepath.Join(dir2, f))
				if !bytes.Equal(a, b) {
					t.Errorf("%s differs between two writes with the same seed", f)
				}
			}
		})
	}
}

func TestWriteDecoderErrors(t *testing.T) {
	cases := []struct {
		desc string
		d    Decoder
	}{
		{"unknown model type", Decoder{ModelType: "gpt2", Vocab: 8, Hidden: 8, Layers: 1, Heads: 1, Intermediate: 8}},
		{"zero size", Decoder{ModelType: "llama", Vocab: 8, Hidden: 0, Layers: 1, Heads: 1, Intermediate: 8}},
		{"int dtype", Decoder{ModelType: "llama", Vocab: 8, Hidden: 8, Layers: 1, Heads: 1, Intermediate: 8, DType: dtypes.Int32}},
		{"quantize", Decoder{ModelType: "llama", Vocab: 8, Hidden: 8, Layers: 1, Heads: 1, Intermediate: 8, Quantize: "int8"}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			if err := WriteDecoder(t.TempDir(), tc.d); err == nil {
				t.Error("no error")
			}
		})
	}
}

// The biases config.json turns on (through Extra) are written: the tensors are hf/decoder's list
// for the config as written, so a llama with attention_bias and mlp_bias loads.
func TestDecoderBiasesFollowConfig(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		extra map[string]any
		want  []string // bias tensors of layer 0
	}{
		{"none", nil, nil},
		{"attention_bias", map[string]any{"attention_bias": true}, []string{"k_proj", "o_proj", "q_proj", "v_proj"}},
		{"mlp_bias", map[string]any{"mlp_bias": true}, []string{"down_proj", "gate_proj", "up_proj"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			d := Decoder{ModelType: "llama", Vocab: 300, Hidden: 32, Layers: 1, Heads: 4, KVHeads: 2, Intermediate: 64, Seed: 1, Extra: tc.extra}
			if err := WriteDecoder(dir, d); err != nil {
				t.Fatal(err)
			}
			snap, err := snapshot.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, name := range snap.Names() {
				if strings.HasSuffix(name, ".bias") {
					got = append(got, path.Ext(strings.TrimSuffix(name, ".bias"))[1:]) // the module name
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("bias tensors of %v: %v, want %v", tc.extra, got, tc.want)
			}
			if _, err := decoder.Load(context.Background(), snap, gomlxmodel.NewStore(), decoder.LoRA{}, 1); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A random snapshot of every registered causal family loads in hf/decoder's shape check: the
// registry's tensor list and config keys agree with the graph's; so does its NF4 layout (the
// fused projections of phi3 quantized too).
func TestEveryFamilyLoads(t *testing.T) {
	for _, fam := range family.Names(family.CausalLM) {
		for _, q := range []string{"", "nf4"} {
			t.Run(fam+q, func(t *testing.T) {
				dir := t.TempDir()
				d := Decoder{ModelType: fam, Vocab: 300, Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, Intermediate: 64, SlidingWindow: 4, Seed: 1, Quantize: q}
				if err := WriteDecoder(dir, d); err != nil {
					t.Fatal(err)
				}
				snap, err := snapshot.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := decoder.Load(context.Background(), snap, gomlxmodel.NewStore(), decoder.LoRA{Rank: 2, Alpha: 4}, 1); err != nil {
					t.Fatalf("%s: %v", fam, err)
				}
			})
		}
	}
}
