package encoder

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/tensorio"
)

// tinyEncoder is a random BERT snapshot small enough for error tests.
func tinyEncoder() randsnap.Encoder {
	return randsnap.Encoder{Vocab: 60, Hidden: 8, Layers: 2, Heads: 2, Intermediate: 16, MaxPositions: 16,
		Prefix: "bert.", Pooler: true, Seed: 7}
}

// editWeights rewrites dir/model.safetensors through edit.
func editWeights(t *testing.T, dir string, edit func(map[string]*tensors.Tensor)) {
	t.Helper()
	path := filepath.Join(dir, snapshot.WeightsFile)
	ts, err := tensorio.ReadTensors(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(ts)
	if err := tensorio.WriteTensors(path, ts); err != nil {
		t.Fatal(err)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		enc     func(e *randsnap.Encoder)
		edit    func(ts map[string]*tensors.Tensor)
		lora    LoRA
		want    string
		wantErr error
	}{
		{desc: "missing tensor", edit: func(ts map[string]*tensors.Tensor) { delete(ts, "bert.encoder.layer.1.output.dense.weight") },
			want: "missing tensor bert.encoder.layer.1.output.dense.weight (model_type bert, 2 layers)", wantErr: snapshot.ErrMissingTensor},
		{desc: "not a BERT checkpoint", edit: func(ts map[string]*tensors.Tensor) {
			ts["bert.embeddings.word_embeddings_typo.weight"] = ts["bert.embeddings.word_embeddings.weight"]
			delete(ts, "bert.embeddings.word_embeddings.weight")
		}, want: "not a BERT checkpoint", wantErr: snapshot.ErrMissingTensor},
		{desc: "shape mismatch", enc: func(e *randsnap.Encoder) { e.Extra = map[string]any{"intermediate_size": 12} },
			want: "model.safetensors: bert.encoder.layer.0.intermediate.dense.bias: shape [16], want [12]", wantErr: snapshot.ErrShape},
		{desc: "a billion layers (issue 22 defect 2)", enc: func(e *randsnap.Encoder) { e.Extra = map[string]any{"num_hidden_layers": 1000000000} },
			want: "num_hidden_layers = 1000000000 is beyond any real model"},
		{desc: "more layers than the weights (issue 22 defect 2)", enc: func(e *randsnap.Encoder) { e.Extra = map[string]any{"num_hidden_layers": 3} },
			want: "num_hidden_layers = 3, but the weights hold 2 layers (bert.encoder.layer.*)"},
		{desc: "fewer layers than the weights (issue 22)", enc: func(e *randsnap.Encoder) { e.Extra = map[string]any{"num_hidden_layers": 1} },
			want: "num_hidden_layers = 1, but the weights hold 2 layers (bert.encoder.layer.*): the extra layers would be ignored"},
		{desc: "vocab mismatch", enc: func(e *randsnap.Encoder) { e.Extra = map[string]any{"vocab_size": 61} },
			want: "bert.embeddings.word_embeddings.weight: shape [60 8], want [61 8]", wantErr: snapshot.ErrShape},
		{desc: "integer weights", edit: func(ts map[string]*tensors.Tensor) {
			ts["bert.embeddings.LayerNorm.bias"] = tensors.FromFlatDataAndDimensions(make([]int32, 8), 8)
		}, want: "tensor bert.embeddings.LayerNorm.bias has dtype Int32, want a float type"},
		{desc: "non-finite weight", edit: func(ts map[string]*tensors.Tensor) {
			v := make([]float32, 8)
			v[3] = float32(math.Inf(-1))
			ts["bert.encoder.layer.0.output.LayerNorm.bias"] = tensors.FromFlatDataAndDimensions(v, 8)
		}, want: "model.safetensors: tensor bert.encoder.layer.0.output.LayerNorm.bias: value 3 is -Inf", wantErr: snapshot.ErrNonFinite},
		{desc: "heads do not divide hidden", enc: func(e *randsnap.Encoder) { e.Extra = map[string]any{"num_attention_heads": 3} },
			want: "config.json: hidden_size = 8 is not a multiple of num_attention_heads = 3"},
		{desc: "unsupported activation", enc: func(e *randsnap.Encoder) { e.Extra = map[string]any{"hidden_act": "quick_gelu"} },
			want: `config.json: hidden_act "quick_gelu" is not supported`},
		{desc: "relative positions", enc: func(e *randsnap.Encoder) { e.Extra = map[string]any{"position_embedding_type": "relative_key"} },
			want: `config.json: position_embedding_type "relative_key" is not supported (only absolute)`},
		{desc: "decoder", enc: func(e *randsnap.Encoder) { e.Extra = map[string]any{"is_decoder": true} },
			want: "config.json: is_decoder is true"},
		{desc: "bad config value", enc: func(e *randsnap.Encoder) { e.Extra = map[string]any{"layer_norm_eps": "small"} },
			want: `config.json: layer_norm_eps = "small", want a number`},
		{desc: "unknown target module", lora: LoRA{Rank: 2, Alpha: 2, TargetModules: []string{"query", "qkv"}},
			want: `lora target module "qkv" is not a BERT linear layer (BERT: dense, query, key, value, attention.output.dense, intermediate.dense, output.dense; or the Llama names q_proj,`},
		{desc: "targets select nothing", lora: LoRA{Rank: 2, Alpha: 2, TargetModules: []string{"gate_proj"}},
			want: "lora target modules [gate_proj] select no linear layer of"},
		{desc: "negative rank", lora: LoRA{Rank: -1}, want: "lora rank -1: want 0 (full fine-tuning) or more"},
		{desc: "pad id outside the vocabulary", enc: func(e *randsnap.Encoder) { e.Extra = map[string]any{"pad_token_id": 60} },
			want: "config.json: pad_token_id = 60 is outside the vocabulary (vocab_size 60)"},
		{desc: "roberta: no position past the padding id", enc: func(e *randsnap.Encoder) {
			e.ModelType, e.Prefix, e.Pooler, e.Vocab, e.MaxPositions = "roberta", "roberta.", false, 300, 2
		}, want: "config.json: max_position_embeddings = 2 leaves no position after pad_token_id = 1"},
		{desc: "roberta: a misshaped classification head", enc: func(e *randsnap.Encoder) {
			e.ModelType, e.Prefix, e.Pooler, e.Vocab, e.Labels = "roberta", "roberta.", false, 300, []string{"entailment", "not_entailment"}
		}, edit: func(ts map[string]*tensors.Tensor) {
			ts["classifier.dense.weight"] = tensors.FromFlatDataAndDimensions(make([]float32, 8*4), 4, 8)
		}, want: "classifier.dense/out_proj shapes [4 8] [8] [2 8] [2] do not fit hidden_size 8"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			e := tinyEncoder()
			if tc.enc != nil {
				tc.enc(&e)
			}
			if err := randsnap.WriteEncoder(dir, e); err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				editWeights(t, dir, tc.edit)
			}
			s, err := snapshot.Open(dir)
			if err == nil {
				_, err = Load(context.Background(), s, gomlxmodel.NewStore(), tc.lora, 0)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, tc.want)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %q is not %v", err, tc.wantErr)
			}
		})
	}
}

// TestConfigOfOtherModelType: a decoder snapshot is not an encoder.
func TestConfigOfOtherModelType(t *testing.T) {
	dir := t.TempDir()
	if err := randsnap.WriteDecoder(dir, randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 8, Layers: 1, Heads: 2, Intermediate: 16}); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Load(context.Background(), s, gomlxmodel.NewStore(), LoRA{}, 0)
	if err == nil || !strings.Contains(err.Error(), `config.json: model_type "llama" is not an encoder of this package (supported: `+strings.Join(family.Names(family.Encoder), ", ")+`)`) {
		t.Fatalf("error %v", err)
	}
}

// TestGammaBetaNames: LayerNorm weights under TensorFlow-era names (gamma, beta), as old BioBERT
// conversions have them, load under their own keys and give the same output.
func TestGammaBetaNames(t *testing.T) {
	dirs := [2]string{t.TempDir(), t.TempDir()}
	for _, dir := range dirs {
		if err := randsnap.WriteEncoder(dir, tinyEncoder()); err != nil {
			t.Fatal(err)
		}
	}
	editWeights(t, dirs[1], func(ts map[string]*tensors.Tensor) {
		for name, v := range ts {
			if strings.HasSuffix(name, "LayerNorm.weight") {
				delete(ts, name)
				ts[strings.TrimSuffix(name, "weight")+"gamma"] = v
			} else if strings.HasSuffix(name, "LayerNorm.bias") {
				delete(ts, name)
				ts[strings.TrimSuffix(name, "bias")+"beta"] = v
			}
		}
	})
	g := &goldenFile{
		IDs:              [][]int32{{2, 10, 11, 3, 20, 3}},
		TokenTypes:       [][]int32{{0, 0, 0, 0, 1, 1}},
		Mask:             [][]float32{{1, 1, 1, 1, 1, 1}},
		Labels:           []float32{1},
		ClassifierWeight: make([]float32, 8),
		ClassifierBias:   []float32{0},
	}
	var hidden [2][]float32
	for i, dir := range dirs {
		s, err := snapshot.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		store := gomlxmodel.NewStore()
		m, err := Load(context.Background(), s, store, LoRA{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if _, ok := m.BaseVariables()["bert.embeddings.LayerNorm.gamma"]; !ok {
				t.Fatal("gamma weight not loaded under its own key")
			}
		}
		setHead(t, m, g)
		hidden[i] = run(t, m, store, g, nil).hidden
	}
	for i := range hidden[0] {
		if hidden[0][i] != hidden[1][i] {
			t.Fatalf("hidden[%d] = %g with gamma/beta names, %g with weight/bias", i, hidden[1][i], hidden[0][i])
		}
	}
}

// TestRestoredAdaptersKept: Load into a store that already holds adapters and a head (a resumed
// checkpoint) keeps their values and reloads the base weights.
func TestRestoredAdaptersKept(t *testing.T) {
	dir := t.TempDir()
	if err := randsnap.WriteEncoder(dir, tinyEncoder()); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := gomlxmodel.NewStore()
	lora := LoRA{Rank: 2, Alpha: 4}
	m, err := Load(context.Background(), s, store, lora, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AddClassifier(2, 5); err != nil {
		t.Fatal(err)
	}
	key := peft.Prefix + "bert.encoder.layer.1.attention.self.value.lora_B.weight"
	trained := tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 8, 2)
	if err := m.LoRAVariables()[key].SetValue(trained); err != nil {
		t.Fatal(err)
	}
	head := tensors.MustCopyFlatData[float32](m.HeadVariables()["classifier.weight"].MustValue())
	m2, err := Load(context.Background(), s, store, LoRA{Rank: 2, Alpha: 4}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.AddClassifier(2, 6); err != nil {
		t.Fatal(err)
	}
	got := tensors.MustCopyFlatData[float32](m2.LoRAVariables()[key].MustValue())
	if got[15] != 16 {
		t.Fatalf("restored lora_B = %v, want the trained values", got)
	}
	if h := tensors.MustCopyFlatData[float32](m2.HeadVariables()["classifier.weight"].MustValue()); h[0] != head[0] {
		t.Fatalf("restored head changed: %g, want %g", h[0], head[0])
	}
	if err := m2.AddClassifier(3, 0); err == nil || !strings.Contains(err.Error(), "exists with shape") {
		t.Fatalf("AddClassifier with another label count: %v", err)
	}
	if m2.HeadVariables()["classifier.weight"].DType() != dtypes.Float32 {
		t.Fatal("head not float32")
	}
}

// TestTargets: target_modules select BERT's linear layers as PEFT's suffix matching does, and the
// Llama names of the config's default select the layers of the same role.
func TestTargets(t *testing.T) {
	dir := t.TempDir()
	if err := randsnap.WriteEncoder(dir, tinyEncoder()); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	layer0 := func(mods ...string) []string {
		var out []string
		for _, m := range mods {
			out = append(out, "bert.encoder.layer.0."+m)
		}
		return out
	}
	for _, tc := range []struct {
		desc    string
		targets []string
		count   int      // adapted modules (2 layers + the pooler)
		layer0  []string // the adapted modules of layer 0, sorted
	}{
		{"default: every linear layer", nil, 13, layer0("attention.output.dense", "attention.self.key", "attention.self.query",
			"attention.self.value", "intermediate.dense", "output.dense")},
		{"the config's Llama names", config.LoRATargetsLlama, 12, layer0("attention.output.dense", "attention.self.key",
			"attention.self.query", "attention.self.value", "intermediate.dense", "output.dense")},
		{"q_proj and v_proj", []string{"q_proj", "v_proj"}, 4, layer0("attention.self.query", "attention.self.value")},
		{"output.dense suffix-matches attention.output.dense too", []string{"output.dense"}, 4, layer0("attention.output.dense", "output.dense")},
		{"intermediate.dense", []string{"intermediate.dense"}, 2, layer0("intermediate.dense")},
		{"dense includes the pooler", []string{"dense"}, 7, layer0("attention.output.dense", "intermediate.dense", "output.dense")},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			m, err := Load(context.Background(), s, gomlxmodel.NewStore(), LoRA{Rank: 2, Alpha: 2, TargetModules: tc.targets}, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for mod := range m.adapters {
				if strings.HasPrefix(mod, "bert.encoder.layer.0.") {
					got = append(got, mod)
				}
			}
			slices.Sort(got)
			if len(m.adapters) != tc.count || !slices.Equal(got, tc.layer0) {
				t.Fatalf("%d adapted modules, layer 0: %v; want %d, %v", len(m.adapters), got, tc.count, tc.layer0)
			}
		})
	}
}
