package decoder

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
)

// packedTol is the largest difference accepted between a packed and a padded batch's float32
// loss, gradients and hidden states: the same sums in another order.
const packedTol = 1e-5

// packGolden packs the golden batch's rows into one row of their real tokens followed by pad slots
// of padding: tokens, segments, positions and labels [1, L]. A row's real tokens keep the positions
// Hidden gives them (their slots: 0, 1, ... for a right-padded row; a left-padded golden row
// starts later), and the label of its first real token is IgnoreLabel (no loss term predicts it
// from the row itself; packed, the previous example's last token would). at[b] is the packed slot
// of row b's first real token, first[b] its slot in the golden row, lens[b] their count.
func packGolden(t *testing.T, gold golden, pad int) (tokens, segments, positions, labels *tensors.Tensor, at, first, lens []int) {
	t.Helper()
	dims := gold["tokens"].Shape().Dimensions
	b, tt := dims[0], dims[1]
	tok, msk, lab := flatInt(gold["tokens"]), flatInt(gold["mask"]), flatInt(gold["labels"])
	var pt, ps, pp, pl []int32
	for r := range b {
		row := msk[r*tt : (r+1)*tt]
		f := slices.Index(row, 1)
		n := 0
		for f+n < tt && row[f+n] != 0 {
			n++
		}
		if f < 0 || slices.Contains(row[f+n:], 1) {
			t.Fatalf("golden row %d: its real tokens are not contiguous", r)
		}
		at, first, lens = append(at, len(pt)), append(first, f), append(lens, n)
		for j := f; j < f+n; j++ {
			l := lab[r*tt+j]
			if j == f {
				l = IgnoreLabel
			}
			pt, ps, pp, pl = append(pt, tok[r*tt+j]), append(ps, int32(r+1)), append(pp, int32(j)), append(pl, l)
		}
	}
	for range pad {
		pt, ps, pp, pl = append(pt, 0), append(ps, 0), append(pp, 0), append(pl, IgnoreLabel)
	}
	mk := func(v []int32) *tensors.Tensor { return tensors.FromFlatDataAndDimensions(v, 1, len(v)) }
	return mk(pt), mk(ps), mk(pp), mk(pl), at, first, lens
}

// TestPackedEqualsPadded: for every family, the golden batch's rows packed into one row (with
// padding after them) give the padded batch's causal LM loss and adapter gradients, and each real
// token's hidden state, to 1e-5: the block-diagonal causal mask, the positions restarting at 0
// (RoPE, Gemma 3's local RoPE), the sliding windows (mistral's and Gemma 2's shorter than the rows)
// and Gemma 2's soft-caps see what they see unpacked; float32 on the Go backend's fast path.
func TestPackedEqualsPadded(t *testing.T) {
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			gold := readGolden(t, fam)
			store := gomlxmodel.NewStore()
			m, err := Load(context.Background(), openSnap(t, filepath.Join("testdata", fam)), store, testLoRA, 0)
			if err != nil {
				t.Fatal(err)
			}
			setAdapters(t, fam, m)
			vars := m.LoRAVariables()
			keys := sortedKeys(vars)
			grads := func(loss *Node) []*Node {
				var wrt []*Node
				for _, k := range keys {
					wrt = append(wrt, vars[k].ValueGraph(loss.Graph()))
				}
				return append([]*Node{loss}, Gradient(loss, wrt...)...)
			}
			padded, err := gomlxmodel.NewExec(backend(t), store, func(scope *gomlxmodel.Scope, tok, msk, labels *Node) []*Node {
				h := m.Hidden(scope, tok, msk)
				return append(grads(CausalLMLoss(m.Logits(scope, h), labels)), h)
			})
			if err != nil {
				t.Fatal(err)
			}
			packed, err := gomlxmodel.NewExec(backend(t), store, func(scope *gomlxmodel.Scope, tok, seg, pos, labels *Node) []*Node {
				h := m.HiddenPacked(scope, tok, seg, pos)
				return append(grads(CausalLMLoss(m.Logits(scope, h), labels)), h)
			})
			if err != nil {
				t.Fatal(err)
			}
			want, err := padded.Exec(gold["tokens"], gold["mask"], gold["labels"])
			if err != nil {
				t.Fatal(err)
			}
			tok, seg, pos, labels, at, first, lens := packGolden(t, gold, 3)
			got, err := packed.Exec(tok, seg, pos, labels)
			if err != nil {
				t.Fatal(err)
			}
			diff := func(what string, g, w []float32) {
				t.Helper()
				if len(g) != len(w) {
					t.Fatalf("%s: %d values, want %d", what, len(g), len(w))
				}
				worst := 0.0
				for i := range g {
					worst = max(worst, math.Abs(float64(g[i]-w[i])))
				}
				if worst > packedTol {
					t.Errorf("%s: packed differs from padded by %.3g > %g", what, worst, packedTol)
				}
			}
			diff("loss", flat32(got[0]), flat32(want[0]))
			for i, k := range keys {
				diff("gradient of "+k, flat32(got[i+1]), flat32(want[i+1]))
			}
			hg, hw := flat32(got[len(keys)+1]), flat32(want[len(keys)+1])
			h, tt := m.cfg.Hidden, gold["tokens"].Shape().Dimensions[1]
			for r := range at {
				diff(fmt.Sprintf("hidden states of row %d", r), hg[at[r]*h:(at[r]+lens[r])*h], hw[(r*tt+first[r])*h:(r*tt+first[r]+lens[r])*h])
			}
		})
	}
}

// flashSlack is how much further from the decomposed bf16 attention Compute.FlashAttention may be
// than bf16 itself is from float32: both round q, k and v to bf16 but accumulate and normalise the
// softmax in their own order (cuDNN in float32 tiles; GoMLX's decomposed fallback in bf16; ours in
// float32 cast back to bf16), so the difference is bf16 rounding, of the size bf16 rounding
// makes everywhere.
const flashSlack = 2

func TestFlashAttentionParity(t *testing.T) {
	b := backend(t)
	t.Logf("backend %s: fused attention %v, its backward %v", b.Name(),
		b.Capabilities().Operations[compute.OpTypeFusedScaledDotProductAttention],
		b.Capabilities().Operations[compute.OpTypeFusedScaledDotProductAttentionVJP])
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			const rows, width = 3, 16
			lens := []int{16, 11, 6}
			var tok, msk, lab []int32
			for r := range rows {
				for j := range width {
					id := int32((r*31 + j*7 + 3) % 100)
					m, l := int32(0), int32(IgnoreLabel)
					if j < lens[r] {
						m, l = 1, id
					}
					tok, msk, lab = append(tok, id), append(msk, m), append(lab, l)
				}
			}
			in := func(v []int32) *tensors.Tensor { return tensors.FromFlatDataAndDimensions(v, rows, width) }
			run := func(c Compute) []*tensors.Tensor {
				store := gomlxmodel.NewStore()
				m, err := Load(context.Background(), openSnap(t, filepath.Join("testdata", fam)), store, testLoRA, 0)
				if err != nil {
					t.Fatal(err)
				}
				setAdapters(t, fam, m)
				m.SetCompute(c)
				vars := m.LoRAVariables()
				keys := sortedKeys(vars)
				exec, err := gomlxmodel.NewExec(b, store, func(scope *gomlxmodel.Scope, tok, msk, labels *Node) []*Node {
					h := m.Hidden(scope, tok, msk)
					loss := CausalLMLoss(m.Logits(scope, h), labels)
					var wrt []*Node
					for _, k := range keys {
						wrt = append(wrt, vars[k].ValueGraph(tok.Graph()))
					}
					return append([]*Node{h, loss}, Gradient(loss, wrt...)...)
				})
				if err != nil {
					t.Fatal(err)
				}
				out, err := exec.Exec(in(tok), in(msk), in(lab))
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			eager, flash, f32 := run(Compute{BF16: true}), run(Compute{BF16: true, FlashAttention: true}), run(Compute{})
			hidden := eager[0].Shape().Dimensions[2]
			for i := range eager {
				g, w, ref := flat32(flash[i]), flat32(eager[i]), flat32(f32[i])
				worst, bf16, scale := 0.0, 0.0, 0.0
				for j := range w {
					if i == 0 && msk[j/hidden] == 0 {
						continue // a padding query's output is never read
					}
					worst = max(worst, math.Abs(float64(g[j]-w[j])))
					bf16 = max(bf16, math.Abs(float64(w[j]-ref[j])))
					scale = max(scale, math.Abs(float64(ref[j])))
				}
				if worst > flashSlack*bf16+1e-3*scale {
					t.Errorf("output %d: flash differs from eager by %.3g, bf16 from f32 by %.3g (largest value %.3g)", i, worst, bf16, scale)
				}
			}
		})
	}
}
