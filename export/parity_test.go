package export

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/tensorio"
	"github.com/tracksum/tracksum/model"
)

// TestExportReloadsToMergedLogits is issue 9 item 9's "the merged export reloads to the same
// logits": for each family of hf/decoder's parity checkpoints (random weights and a rank-4 rsLoRA
// adapter with B != 0, written in PEFT's layout by tools/hfparity/decoder.py with PyTorch), the
// adapter is read by peft.Read (files another writer made), exported, and the export loaded as a
// plain snapshot by hf/decoder gives PyTorch's logits of the merged model to 1e-4.
func TestExportReloadsToMergedLogits(t *testing.T) {
	backend, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range family.Names(family.CausalLM) {
		t.Run(fam, func(t *testing.T) {
			src := filepath.Join("..", "decoder", "testdata", fam)
			if _, err := os.Stat(filepath.Join(src, "golden.safetensors")); err != nil {
				t.Skipf("%s: no parity checkpoint (hf/decoder's testdata)", src)
			}
			root := t.TempDir()
			baseDir, ck, out := filepath.Join(root, "base"), filepath.Join(root, "ck"), filepath.Join(root, "out")
			os.MkdirAll(baseDir, 0o755)
			for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
				if err := copyFile(filepath.Join(src, f), filepath.Join(baseDir, f)); err != nil {
					t.Fatal(err)
				}
			}
			snap, err := snapshot.Open(baseDir)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := peft.WriteBaseRef(context.Background(), ck, snap); err != nil {
				t.Fatal(err)
			}
			a, err := peft.Read(src)
			if err != nil {
				t.Fatalf("peft.Read of the PyTorch-written adapter: %v", err)
			}
			if err := peft.Write(filepath.Join(ck, peft.AdapterDir), a); err != nil {
				t.Fatal(err)
			}
			if _, err := Export(context.Background(), Options{Checkpoint: ck, Out: out}); err != nil {
				t.Fatal(err)
			}
			merged, err := snapshot.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			store := gomlxmodel.NewStore()
			m, err := decoder.Load(context.Background(), merged, store, decoder.LoRA{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			gold, err := tensorio.ReadTensors(filepath.Join(src, "golden.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			exec, err := gomlxmodel.NewExec(backend, store, func(scope *gomlxmodel.Scope, tok, msk *Node) *Node {
				return m.Logits(scope, m.Hidden(scope, tok, msk))
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := exec.Exec(gold["tokens"], gold["mask"])
			if err != nil {
				t.Fatal(err)
			}
			got := tensors.MustCopyFlatData[float32](res[0])
			want := tensors.MustCopyFlatData[float32](gold["merged_logits"])
			base := tensors.MustCopyFlatData[float32](gold["logits"])
			mask := tensors.MustCopyFlatData[int32](gold["mask"])
			vocab := gold["merged_logits"].Shape().Dimensions[2]
			worst, moved := 0.0, 0.0
			for row, keep := range mask {
				if keep == 0 {
					continue
				}
				for j := range vocab {
					i := row*vocab + j
					worst = max(worst, math.Abs(float64(got[i]-want[i])))
					moved = max(moved, math.Abs(float64(want[i]-base[i])))
				}
			}
			if worst > 1e-4 {
				t.Errorf("merged export's logits: max |diff| %.3g from PyTorch's merged model > 1e-4", worst)
			}
			if moved < 1e-3 {
				t.Errorf("the adapter barely changes the logits (%.3g): the test would not see a missing merge", moved)
			}
			t.Logf("max |diff| %.2g (the adapter moves the logits by up to %.2g)", worst, moved)
		})
	}
}
