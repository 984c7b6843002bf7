package pretrained

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model"
)

// BenchmarkGenerate measures greedy generation of 64 new tokens from 8 prompts of 48 tokens on a
// random 4-layer Llama (hidden 256), decoded one prompt per call (batch 1) or all together (batch
// 8, one batched step per token). It reports generated tokens per second and per CPU-second; its
// PyTorch anchor on the same shapes is tools/hfparity/bench_generate_torch.py (transformers'
// generate loop with a KV cache, written from its code):
//
//	go test ./model/pretrained -run '^$' -bench Generate -benchtime 2x
//	/usr/bin/python3 tools/hfparity/bench_generate_torch.py --threads 1
func BenchmarkGenerate(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "llm")
	if err := randsnap.WriteDecoder(dir, randsnap.Decoder{ModelType: "llama", Vocab: 2000, Hidden: 256, Layers: 4, Heads: 8, KVHeads: 4, Intermediate: 704, Seed: 3}); err != nil {
		b.Fatal(err)
	}
	snap, err := snapshot.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	backend, _, err := model.Backend()
	if err != nil {
		b.Fatal(err)
	}
	lm, err := loadCausalLM(context.Background(), backend, snap, config.LoRA{Rank: 8, Alpha: 16, TargetModules: []string{"q_proj", "v_proj"}}, 1, false, computeSettings{})
	if err != nil {
		b.Fatal(err)
	}
	// A random model rarely picks the end token; tokens/s counts the tokens actually generated.
	g, err := newGenerator(lm, []int32{1999})
	if err != nil {
		b.Fatal(err)
	}
	prompts := make([][]int32, 8)
	for i := range prompts {
		prompts[i] = make([]int32, 48)
		for j := range prompts[i] {
			prompts[i][j] = int32((i*97 + j*31) % 1990)
		}
	}
	o := GenOptions{BeamSize: 1, MaxNewTokens: 64, NoRepeatNgram: 0}
	for _, batch := range []int{1, 8} {
		b.Run(fmt.Sprintf("batch%d", batch), func(b *testing.B) {
			// Warm the graph caches once, outside the timing.
			if _, err := g.Generate(prompts[:batch], o); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu0 := processCPUSeconds()
			tokens := 0
			for range b.N {
				for lo := 0; lo < len(prompts); lo += batch {
					out, err := g.Generate(prompts[lo:lo+batch], o)
					if err != nil {
						b.Fatal(err)
					}
					for _, t := range out {
						tokens += len(t)
					}
				}
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
			if cpu := processCPUSeconds() - cpu0; cpu > 0 {
				b.ReportMetric(float64(tokens)/cpu, "tokens/CPU-s")
			}
		})
	}
}
