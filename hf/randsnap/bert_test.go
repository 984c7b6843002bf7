package randsnap

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/encoder"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/hf/tokenizer"
)

// TestWriteEncoder: a random BERT snapshot opens with hf/snapshot, has BERT's keys under the
// chosen prefix and dtype, its WordPiece tokenizer loads, and the same seed gives the same bytes.
func TestWriteEncoder(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		prefix string
		pooler bool
		dtype  dtypes.DType
	}{
		{"BertForMaskedLM layout, float32", "bert.", false, dtypes.Float32},
		{"BertModel layout with pooler, bf16", "", true, dtypes.BFloat16},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			e := Encoder{Vocab: 120, Hidden: 16, Layers: 2, Heads: 2, Intermediate: 32, MaxPositions: 24,
				Prefix: tc.prefix, Pooler: tc.pooler, DType: tc.dtype, Seed: 4}
			dirs := [2]string{t.TempDir(), t.TempDir()}
			for _, dir := range dirs {
				if err := WriteEncoder(dir, e); err != nil {
					t.Fatal(err)
				}
			}
			s, err := snapshot.Open(dirs[0])
			if err != nil {
				t.Fatal(err)
			}
			if s.ModelType != "bert" {
				t.Fatalf("model_type %q", s.ModelType)
			}
			sh, ok := s.Shape(tc.prefix + "encoder.layer.1.intermediate.dense.weight")
			if !ok || sh.DType != tc.dtype || sh.Dimensions[0] != 32 || sh.Dimensions[1] != 16 {
				t.Fatalf("intermediate.dense.weight: %s, %v", sh, ok)
			}
			if _, ok := s.Shape(tc.prefix + "pooler.dense.weight"); ok != tc.pooler {
				t.Fatalf("pooler present = %v, want %v", ok, tc.pooler)
			}
			if _, err := s.Tensors(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			tok, err := tokenizer.Load(dirs[0])
			if err != nil {
				t.Fatal(err)
			}
			if ids := tok.Encode("ab", true); len(ids) != 4 || ids[0] != 2 || ids[3] != 3 {
				t.Fatalf("Encode(ab) = %v, want [CLS] a ##b [SEP]", ids)
			}
			for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
				a, err1 := os.ReadFile(filepath.Join(dirs[0], name))
				b, err2 := os.ReadFile(filepath.Join(dirs[1], name))
				if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
					t.Fatalf("%s differs between two writes with the same seed (%v, %v)", name, err1, err2)
				}
			}
		})
	}
}

// TestWriteEncoderDeberta: a random DeBERTa-v3-shaped NLI snapshot loads in hf/encoder (relative
// attention with buckets, no absolute positions nor token types, ContextPooler and classifier),
// and its Unigram tokenizer gives [CLS] ▁a b [SEP] for "ab".
func TestWriteEncoderDeberta(t *testing.T) {
	dir := t.TempDir()
	e := Encoder{ModelType: "deberta-v2", Prefix: "deberta.", Vocab: 120, Hidden: 16, Layers: 2, Heads: 2, Intermediate: 32,
		MaxPositions: 64, Labels: []string{"contradiction", "entailment", "neutral"}, Seed: 5}
	_, m := writeAndLoad(t, dir, e)
	c := m.Config()
	if !c.Disentangled || c.PositionBiasedInput || c.TypeVocab != 0 || c.PositionBuckets != 32 || !c.ShareAttKey || m.SavedLabels() != 3 || !m.HasPooler() {
		t.Fatalf("config %+v, labels %d, pooler %v", c, m.SavedLabels(), m.HasPooler())
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := tok.CheckFits(c.Vocab, dir); err != nil {
		t.Fatal(err)
	}
	if ids := tok.Encode("ab", true); !slices.Equal(ids, []int{1, 5, 8, 2}) {
		t.Fatalf("Encode(ab) = %v, want [CLS] ▁a b [SEP] = [1 5 8 2]", ids)
	}
}

// TestEveryEncoderFamilyLoads: for every encoder family of hf/family, bare and as a sequence
// classifier, randsnap writes exactly the tensors hf/encoder loads (its layout's list), plus the
// classification head it starts from: nothing missing, nothing unread.
func TestEveryEncoderFamilyLoads(t *testing.T) {
	for _, modelType := range family.Names(family.Encoder) {
		f, _ := family.Lookup(modelType)
		for _, tc := range []struct {
			desc   string
			prefix string
			labels []string
		}{
			{"bare", "", nil},
			{"classifier", f.KeyPrefix, []string{"no", "yes"}},
		} {
			t.Run(modelType+"/"+tc.desc, func(t *testing.T) {
				dir := t.TempDir()
				e := Encoder{ModelType: modelType, Prefix: tc.prefix, Vocab: 60, Hidden: 8, Layers: 2, Heads: 2, Intermediate: 16,
					MaxPositions: 32, Labels: tc.labels, Pooler: modelType == "bert", Seed: 3}
				s, m := writeAndLoad(t, dir, e)
				base := m.BaseVariables()
				for _, name := range s.Names() {
					if _, ok := base[name]; !ok && !strings.HasPrefix(name, "classifier.") {
						t.Errorf("%s is written but not loaded", name)
					}
				}
				if n := m.SavedLabels(); n != len(tc.labels) {
					t.Errorf("saved head of %d labels, want %d", n, len(tc.labels))
				}
			})
		}
	}
}

// writeAndLoad writes e to dir and loads it with hf/encoder.
func writeAndLoad(t *testing.T, dir string, e Encoder) (*snapshot.Snapshot, *encoder.Model) {
	t.Helper()
	if err := WriteEncoder(dir, e); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := encoder.Load(context.Background(), s, gomlxmodel.NewStore(), encoder.LoRA{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}
