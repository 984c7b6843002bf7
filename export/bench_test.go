package export

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// BenchmarkExport135M times tracksum-export of a SmolLM2-135M-shaped random bf16 snapshot (30
// layers, hidden 576, vocab 49152) with rank-16 adapters on all 210 projections:
//
//	GOEXPERIMENT=simd go test ./export -run '^$' -bench Export135M -benchtime 1x
func BenchmarkExport135M(b *testing.B) {
	root := b.TempDir()
	baseDir, ck := filepath.Join(root, "base"), filepath.Join(root, "ck")
	d := randsnap.Decoder{ModelType: "llama", Vocab: 49152, Hidden: 576, Layers: 30, Heads: 9, KVHeads: 3,
		Intermediate: 1536, Tied: true, DType: dtypes.BFloat16, Seed: 1}
	if err := randsnap.WriteDecoder(baseDir, d); err != nil {
		b.Fatal(err)
	}
	snap, err := snapshot.Open(baseDir)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := peft.WriteBaseRef(context.Background(), ck, snap); err != nil {
		b.Fatal(err)
	}
	l := config.DefaultLoRA()
	a := &peft.Adapter{Config: peft.NewConfig(l, peft.TaskCausalLM, snap.Dir, nil), Tensors: map[string]*tensors.Tensor{}}
	r := rand.New(rand.NewPCG(1, 2))
	for _, name := range snap.Names() {
		module, ok := strings.CutSuffix(name, ".weight")
		if !ok || !slices.Contains(l.TargetModules, module[strings.LastIndex(module, ".")+1:]) {
			continue
		}
		s, _ := snap.Shape(name)
		a.Tensors[peft.Prefix+module+peft.SuffixA] = randMat(r, l.Rank, s.Dimensions[1])
		a.Tensors[peft.Prefix+module+peft.SuffixB] = randMat(r, s.Dimensions[0], l.Rank)
	}
	if err := peft.Write(filepath.Join(ck, peft.AdapterDir), a); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := Export(context.Background(), Options{Checkpoint: ck, Out: filepath.Join(root, "out", string(rune('a'+i)))}); err != nil {
			b.Fatal(err)
		}
	}
}
