package encoder

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// FuzzConfig feeds arbitrary config.json files, of every family, to a tiny snapshot's weights:
// reading the config (decoder.ConfigOf or ConfigOf by model_type) and, when it is accepted,
// loading the model must return a one-line error or a model; never panic, and never size
// anything by the config before it is checked against the weights (issue 22: a billion layers).
//
//	GOEXPERIMENT=simd go test ./hf/encoder -run '^$' -fuzz '^FuzzConfig$' -fuzztime 60s
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		`{"model_type":"llama","vocab_size":50,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":8}`,
		`{"model_type":"llama","vocab_size":50,"hidden_size":8,"num_hidden_layers":1000000000,"num_attention_heads":2,"intermediate_size":8}`,
		`{"model_type":"qwen2","vocab_size":50,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":8,"rms_norm_eps":0}`,
		`{"model_type":"gemma","vocab_size":50,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":8,"head_dim":-2}`,
		`{"model_type":"mistral","vocab_size":50,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":8,"sliding_window":null,"rope_theta":-1}`,
		`{"model_type":"llama","vocab_size":50,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":8,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":1,"original_max_position_embeddings":4}}`,
		`{"model_type":"bert","vocab_size":60,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":16,"max_position_embeddings":16}`,
		`{"model_type":"bert","num_hidden_layers":1e9,"layer_norm_eps":0}`,
		`{"model_type":"deberta-v2","vocab_size":60,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":16,"max_position_embeddings":16,"relative_attention":true,"position_buckets":8,"pos_att_type":["p2c","c2p"],"share_att_key":true,"norm_rel_ebd":"layer_norm","position_biased_input":false,"type_vocab_size":0}`,
		`{"model_type":"deberta-v2","vocab_size":60,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":16,"relative_attention":true,"position_buckets":8,"max_relative_positions":5,"pos_att_type":"p2c|c2p|p2p"}`,
	} {
		f.Add(s)
	}
	base := f.TempDir()
	if err := randsnap.WriteDecoder(filepath.Join(base, "dec"), randsnap.Decoder{ModelType: "llama", Vocab: 50, Hidden: 8, Layers: 1, Heads: 2, Intermediate: 8, Seed: 1}); err != nil {
		f.Fatal(err)
	}
	if err := randsnap.WriteEncoder(filepath.Join(base, "enc"), randsnap.Encoder{Vocab: 60, Hidden: 8, Layers: 1, Heads: 2, Intermediate: 16, MaxPositions: 16, Seed: 1}); err != nil {
		f.Fatal(err)
	}
	if err := randsnap.WriteEncoder(filepath.Join(base, "deb"), randsnap.Encoder{ModelType: "deberta-v2", Prefix: "deberta.", Vocab: 60, Hidden: 8,
		Layers: 1, Heads: 2, Intermediate: 16, MaxPositions: 16, Labels: []string{"entailment", "not_entailment"}, Seed: 1}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, config string) {
		dir := t.TempDir()
		src := filepath.Join(base, "dec")
		switch {
		case strings.Contains(config, `"bert"`):
			src = filepath.Join(base, "enc")
		case strings.Contains(config, `"deberta-v2"`):
			src = filepath.Join(base, "deb")
		}
		for _, name := range []string{snapshot.WeightsFile, snapshot.TokenizerFile, snapshot.TokenizerConfigFile} {
			if err := os.Symlink(filepath.Join(src, name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, snapshot.ConfigFile), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		oneLine := func(err error) {
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		}
		s, err := snapshot.Open(dir)
		if err != nil {
			oneLine(err)
			return
		}
		if fam, _ := family.Lookup(s.ModelType); fam.Kind == family.Encoder {
			if _, err := ConfigOf(s); err != nil {
				oneLine(err)
				return
			}
			_, err = Load(context.Background(), s, gomlxmodel.NewStore(), LoRA{}, 1)
			oneLine(err)
			return
		}
		if _, err := decoder.ConfigOf(s); err != nil {
			oneLine(err)
			return
		}
		_, err = decoder.Load(context.Background(), s, gomlxmodel.NewStore(), decoder.LoRA{}, 1)
		oneLine(err)
	})
}
