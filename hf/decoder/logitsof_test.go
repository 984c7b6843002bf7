package decoder

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
)

// TestLogitsOf: the logits of a few vocabulary entries, computed from those rows of the head only,
// are Logits' columns of them, in float32 and bf16, for every family (tied embeddings and gemma2's
// final soft-cap included).
func TestLogitsOf(t *testing.T) {
	for _, fam := range families {
		for _, bf16 := range []bool{false, true} {
			name := fam + "/f32"
			if bf16 {
				name = fam + "/bf16"
			}
			t.Run(name, func(t *testing.T) {
				gold := readGolden(t, fam)
				store := gomlxmodel.NewStore()
				m, err := Load(context.Background(), openSnap(t, filepath.Join("testdata", fam)), store, LoRA{}, 0)
				if err != nil {
					t.Fatal(err)
				}
				m.SetCompute(Compute{BF16: bf16})
				v := m.Config().Vocab
				ids := []int{v - 1, 3, 0}
				exec, err := gomlxmodel.NewExec(backend(t), store, func(scope *gomlxmodel.Scope, tok, msk *Node) []*Node {
					h := m.Hidden(scope, tok, msk)
					return []*Node{m.Logits(scope, h), m.LogitsOf(h, ids)}
				})
				if err != nil {
					t.Fatal(err)
				}
				out, err := exec.Exec(gold["tokens"], gold["mask"])
				if err != nil {
					t.Fatal(err)
				}
				full, got := flat32(out[0]), flat32(out[1])
				if want := len(full) / v * len(ids); len(got) != want {
					t.Fatalf("%d logits, want %d", len(got), want)
				}
				for r := range len(full) / v {
					for j, id := range ids {
						if a, b := got[r*len(ids)+j], full[r*v+id]; math.Abs(float64(a-b)) > 1e-5*(1+math.Abs(float64(b))) {
							t.Fatalf("row %d, id %d: %g, Logits gives %g", r, id, a, b)
						}
					}
				}
			})
		}
	}
}
