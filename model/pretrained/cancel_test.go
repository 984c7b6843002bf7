package pretrained

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// TestLoadingHonoursCancel: issue 22 rough edge "SIGTERM is not honoured during snapshot
// loading". The commands' context (cancelled by SIGINT/SIGTERM in internal/cli) did not reach the
// weight readers, so train, infer and export read the whole base before noticing. Both backbones
// must give up at once with an error wrapping context.Canceled, which cli turns into "interrupted"
// and exit 130 or 143.
func TestLoadingHonoursCancel(t *testing.T) {
	root := t.TempDir()
	dec, enc := filepath.Join(root, "dec"), filepath.Join(root, "enc")
	if err := randsnap.WriteDecoder(dec, randsnap.Decoder{ModelType: "llama", Vocab: 50, Hidden: 16, Layers: 2, Heads: 2, KVHeads: 1, Intermediate: 24, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if err := randsnap.WriteEncoder(enc, randsnap.Encoder{Vocab: 40, Hidden: 8, Layers: 2, Heads: 2, Intermediate: 8, MaxPositions: 16, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	backend, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		desc string
		dir  string
		load func(s *snapshot.Snapshot) error
	}{
		{"causal LM", dec, func(s *snapshot.Snapshot) error {
			_, err := loadCausalLM(ctx, backend, s, config.LoRA{Rank: 2, Alpha: 4, TargetModules: []string{"q_proj"}}, 1, false, computeSettings{})
			return err
		}},
		{"encoder", enc, func(s *snapshot.Snapshot) error {
			_, err := loadEncoderCLS(ctx, backend, s, checkpoint.DirFiles(enc), enc, config.LoRA{Rank: 2, Alpha: 4, TargetModules: []string{"query"}}, 1, "x", 16, computeSettings{})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			s, err := snapshot.Open(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = tc.load(s)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("load with a cancelled context: error %v, want one wrapping context.Canceled", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to stop", d)
			}
		})
	}
}
