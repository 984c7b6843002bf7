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
)

// TestInferFlagAllocationCaps: issue 22 defect 11. infer --max-length 1e9 sized a key mask and
// a KV cache of a billion slots (a fatal 4 GB allocation); --beam-size 100000 ran out of memory.
// The answer is now capped by the model's context (max_position_embeddings) minus the prompt, a
// prompt filling the context is an error, and a beam that cannot fit is refused before anything
// is allocated.
func TestInferFlagAllocationCaps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "llm")
	if err := randsnap.WriteDecoder(dir, randsnap.Decoder{ModelType: "llama", Vocab: 50, Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1,
		Intermediate: 24, Seed: 3, Extra: map[string]any{"max_position_embeddings": 80}}); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	backend, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	lm, err := loadCausalLM(context.Background(), backend, snap, config.LoRA{Rank: 2, Alpha: 4, TargetModules: []string{"q_proj"}}, 1, false, computeSettings{})
	if err != nil {
		t.Fatal(err)
	}
	// An end token that random weights all but never pick: the answer runs to its cap.
	g, err := newGenerator(lm, []int32{49})
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int32{1, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	for _, o := range []GenOptions{{BeamSize: 1, MaxNewTokens: 1_000_000_000}, {BeamSize: 2, MaxNewTokens: 1_000_000_000},
		{Temperature: 1, TopP: 1, MaxNewTokens: 1_000_000_000, Seed: 1}} {
		out, err := g.Generate([][]int32{prompt}, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if n := len(out[0]); n > 80-len(prompt) {
			t.Errorf("%+v: %d answer tokens past the context of 80 with a prompt of %d", o, n, len(prompt))
		}
	}
	long := make([]int32, 80)
	if _, err := g.Generate([][]int32{long}, GenOptions{BeamSize: 1, MaxNewTokens: 5}); err == nil ||
		!strings.Contains(err.Error(), "a prompt of 80 tokens leaves no room for an answer in the model's context of 80 (max_position_embeddings)") {
		t.Errorf("a prompt filling the context: error %v", err)
	}
	if _, err := g.Generate([][]int32{prompt}, GenOptions{BeamSize: 100000, MaxNewTokens: 20}); err == nil ||
		!strings.Contains(err.Error(), "beam size 100000 is larger than the vocabulary (50 tokens)") {
		t.Errorf("beam 100000: error %v", err)
	}
	if _, err := g.Generate(make([][]int32, 2_000_000), GenOptions{BeamSize: 50, MaxNewTokens: 60}); err == nil ||
		!strings.Contains(err.Error(), "beam size 50 over 2000000 prompts needs about") {
		t.Errorf("a search larger than memory: error %v", err)
	}
}
