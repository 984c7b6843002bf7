package pretrained

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// TestTokenizerIDsBeyondVocab: issue 22 defect 3. A snapshot whose tokenizer has more ids than
// the model's embedding rows panicked with an index out of range in scoreCausal, or trained on
// garbage embeddings; it is now refused at load with a one-line error naming tokenizer.json, for
// the causal LMs (LoadChat) and the encoder (loadEncoderCLS). A tokenizer with fewer ids than
// rows (padded vocabularies) still loads.
func TestTokenizerIDsBeyondVocab(t *testing.T) {
	root := t.TempDir()
	big := filepath.Join(root, "big")
	if err := randsnap.WriteDecoder(big, randsnap.Decoder{ModelType: "llama", Vocab: 200, Hidden: 8, Layers: 1, Heads: 2, Intermediate: 8, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(root, "small")
	if err := randsnap.WriteDecoder(small, randsnap.Decoder{ModelType: "llama", Vocab: 50, Hidden: 8, Layers: 1, Heads: 2, Intermediate: 8, Seed: 1, TokenizerDir: big}); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(small, "tokenizer.json") + `: token`
	_, err := LoadChat(small, []int{2}, 50)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "has id 199, but the model has only 50 embedding rows") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("LoadChat: error %v, want one line with %q", err, want)
	}
	// A padded vocabulary (more rows than ids) is fine; an eos id past the rows is not.
	if _, err := LoadChat(small, []int{2}, 300); err != nil {
		t.Fatalf("LoadChat with a padded vocabulary: %v", err)
	}
	if _, err := LoadChat(small, []int{400}, 300); err == nil || !strings.Contains(err.Error(), "eos_token_id 400 is outside the vocabulary (vocab_size 300)") {
		t.Fatalf("LoadChat with eos 400: error %v", err)
	}
	if _, err := LoadChat(big, []int{2}, 200); err != nil {
		t.Fatalf("LoadChat of a matching snapshot: %v", err)
	}

	enc := filepath.Join(root, "enc")
	encBig := filepath.Join(root, "encbig")
	if err := randsnap.WriteEncoder(encBig, randsnap.Encoder{Vocab: 120, Hidden: 8, Layers: 1, Heads: 2, Intermediate: 8, MaxPositions: 16, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if err := randsnap.WriteEncoder(enc, randsnap.Encoder{Vocab: 40, Hidden: 8, Layers: 1, Heads: 2, Intermediate: 8, MaxPositions: 16, Seed: 1, TokenizerDir: encBig}); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Open(enc)
	if err != nil {
		t.Fatal(err)
	}
	backend, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	_, err = loadEncoderCLS(context.Background(), backend, snap, checkpoint.DirFiles(enc), enc, config.LoRA{Rank: 2, Alpha: 4, TargetModules: []string{"query", "value"}}, 1, "x", 16, computeSettings{})
	if err == nil || !strings.Contains(err.Error(), "but "+enc+" has only 40 embedding rows") {
		t.Fatalf("loadEncoderCLS: error %v", err)
	}
}
