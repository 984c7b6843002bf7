package decoder

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/layers"
)

// bf16RelTol bounds the largest absolute difference of the bf16 logits from the float32 reference
// on the goldens, relative to the largest |logit| of the reference: bfloat16 keeps 8 significant
// bits, so each product and activation carries a relative error up to 2^-9 ≈ 2e-3, compounded over
// the layers. Measured on the go backend (TestBF16Parity's log; docs/pretrained.md): 0.5% to 2.8%.
const bf16RelTol = 0.05

// lossAndGrads runs the causal LM loss of m on the golden batch of fam and its gradients with
// respect to every trainable variable (sorted by path), with compute c.
func lossAndGrads(t *testing.T, store *gomlxmodel.Store, m *Model, gold golden, c Compute) (loss float32, names []string, grads [][]float32) {
	t.Helper()
	m.SetCompute(c)
	defer m.SetCompute(Compute{})
	var vars []*gomlxmodel.Variable
	for v := range store.IterVariables() {
		if v.Trainable {
			vars = append(vars, v)
			names = append(names, v.Path())
		}
	}
	exec, err := gomlxmodel.NewExec(backend(t), store, func(scope *gomlxmodel.Scope, tok, msk, labels *Node) []*Node {
		loss := CausalLMLoss(m.Logits(scope, m.Hidden(scope, tok, msk)), labels)
		wrt := make([]*Node, len(vars))
		for i, v := range vars {
			wrt[i] = v.ValueGraph(tok.Graph())
		}
		return append([]*Node{loss}, Gradient(loss, wrt...)...)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Exec(gold["tokens"], gold["mask"], gold["labels"])
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out[1:] {
		if o.DType() != dtypes.Float32 {
			t.Fatalf("gradient of dtype %s, want float32", o.DType())
		}
		grads = append(grads, flat32(o))
	}
	return flat32(out[0])[0], names, grads
}

// maxDiff returns the largest |a-b| and the largest |b|.
func maxDiff(a, b []float32) (worst, scale float64) {
	for i := range b {
		worst = max(worst, math.Abs(float64(a[i]-b[i])))
		scale = max(scale, math.Abs(float64(b[i])))
	}
	return worst, scale
}

// TestBF16Parity: with Compute.BF16 the logits of every family's golden (base and LoRA) stay within
// bf16Tol of PyTorch's float32 reference, the adapters and their gradients stay float32, and one
// training step's loss is close to the float32 one.
func TestBF16Parity(t *testing.T) {
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			gold := readGolden(t, fam)
			mask := flatInt(gold["mask"])
			store := gomlxmodel.NewStore()
			m, err := Load(context.Background(), openSnap(t, filepath.Join("testdata", fam)), store, testLoRA, 0)
			if err != nil {
				t.Fatal(err)
			}
			setAdapters(t, fam, m)
			m.SetCompute(Compute{BF16: true})
			hidden, logits := forward(t, store, m, gold["tokens"], gold["mask"])
			if hidden.DType() != dtypes.Float32 || logits.DType() != dtypes.Float32 {
				t.Fatalf("hidden %s, logits %s: want float32", hidden.DType(), logits.DType())
			}
			worst, scale := 0.0, 0.0
			g, w := flat32(logits), flat32(gold["lora_logits"])
			v := logits.Shape().Dimensions[2]
			for row, mk := range mask {
				if mk == 1 {
					d, s := maxDiff(g[row*v:(row+1)*v], w[row*v:(row+1)*v])
					worst, scale = max(worst, d), max(scale, s)
				}
			}
			if worst > bf16RelTol*scale {
				t.Errorf("bf16 LoRA logits: max |diff| from the float32 reference %.3g > %g x max |logit| %.3g", worst, bf16RelTol, scale)
			}
			t.Logf("bf16 LoRA logits: max |diff| from the float32 reference %.3g = %.2g%% of max |logit| %.3g", worst, 100*worst/scale, scale)
			m.SetCompute(Compute{})

			l32, names, g32 := lossAndGrads(t, store, m, gold, Compute{})
			l16, _, g16 := lossAndGrads(t, store, m, gold, Compute{BF16: true})
			if d := math.Abs(float64(l16 - l32)); d > 1e-2*math.Abs(float64(l32)) {
				t.Errorf("bf16 loss %.5f, float32 %.5f", l16, l32)
			}
			t.Logf("loss: bf16 %.6f, float32 %.6f", l16, l32)
			for i := range names {
				d, scale := maxDiff(g16[i], g32[i])
				if d > 0.1*scale+1e-6 {
					t.Errorf("%s: bf16 gradient differs from float32 by %.3g (max |grad| %.3g)", names[i], d, scale)
				}
			}
		})
	}
}

// TestGradientCheckpointing: the loss and the gradient of every adapter are the same with each
// layer checkpointed as without (float32 and bf16, every family; 1e-6 relative to the largest
// gradient), with half-precision base weights (converted inside the checkpointed layers) too, and
// with full fine-tuning.
func TestGradientCheckpointing(t *testing.T) {
	type setup struct {
		desc string
		load func(t *testing.T) (*gomlxmodel.Store, *Model, golden)
	}
	var setups []setup
	for _, fam := range families {
		setups = append(setups, setup{fam + " lora", func(t *testing.T) (*gomlxmodel.Store, *Model, golden) {
			store := gomlxmodel.NewStore()
			m, err := Load(context.Background(), openSnap(t, filepath.Join("testdata", fam)), store, testLoRA, 0)
			if err != nil {
				t.Fatal(err)
			}
			setAdapters(t, fam, m)
			return store, m, readGolden(t, fam)
		}})
	}
	setups = append(setups, setup{"llama full fine-tuning", func(t *testing.T) (*gomlxmodel.Store, *Model, golden) {
		store := gomlxmodel.NewStore()
		m, err := Load(context.Background(), openSnap(t, filepath.Join("testdata", "llama")), store, LoRA{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return store, m, readGolden(t, "llama")
	}})
	setups = append(setups, setup{"bf16 weights lora", func(t *testing.T) (*gomlxmodel.Store, *Model, golden) {
		dir := t.TempDir()
		if err := randsnap.WriteDecoder(dir, randsnap.Decoder{ModelType: "llama", Vocab: 64, Hidden: 16, Layers: 2,
			Heads: 4, KVHeads: 2, Intermediate: 32, DType: dtypes.BFloat16, Seed: 5, Std: 0.2}); err != nil {
			t.Fatal(err)
		}
		store := gomlxmodel.NewStore()
		m, err := Load(context.Background(), openSnap(t, dir), store, LoRA{Rank: 2, Alpha: 2}, 1)
		if err != nil {
			t.Fatal(err)
		}
		// Non-zero B, so that every adapter's gradient is non-zero.
		for k, v := range m.LoRAVariables() {
			shape := v.Shape()
			vals := make([]float32, shape.Size())
			for i := range vals {
				vals[i] = float32(math.Sin(float64(i+len(k)))) * 0.1
			}
			if err := v.SetValue(tensors.FromFlatDataAndDimensions(vals, shape.Dimensions...)); err != nil {
				t.Fatal(err)
			}
		}
		tokens := tensors.FromFlatDataAndDimensions([]int32{5, 9, 3, 17, 40, 2, 8, 11}, 2, 4)
		mask := tensors.FromFlatDataAndDimensions([]int32{1, 1, 1, 1, 1, 1, 1, 0}, 2, 4)
		labels := tensors.FromFlatDataAndDimensions([]int32{-100, 9, 3, 17, -100, 2, 8, -100}, 2, 4)
		return store, m, golden{"tokens": tokens, "mask": mask, "labels": labels}
	}})
	for _, s := range setups {
		for _, bf16 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s bf16 %v", s.desc, bf16), func(t *testing.T) {
				store, m, gold := s.load(t)
				l0, names, g0 := lossAndGrads(t, store, m, gold, Compute{BF16: bf16})
				l1, _, g1 := lossAndGrads(t, store, m, gold, Compute{BF16: bf16, GradientCheckpointing: true})
				if math.Abs(float64(l1-l0)) > 1e-6*(1+math.Abs(float64(l0))) {
					t.Errorf("loss %.8f with checkpoints, %.8f without", l1, l0)
				}
				zero := 0
				for i := range names {
					d, scale := maxDiff(g1[i], g0[i])
					if d > 1e-6*(1+scale) {
						t.Errorf("%s: gradient differs by %.3g with checkpoints (max |grad| %.3g)", names[i], d, scale)
					}
					if scale == 0 {
						zero++
					}
				}
				if zero == len(names) {
					t.Fatal("every gradient is zero: the comparison tests nothing")
				}
				if !slices.Equal(g0[0], g1[0]) {
					t.Logf("%s: equal within 1e-6, not bit for bit", names[0])
				}
			})
		}
	}
}

// TestFastPathGraph: on the Go backend the float32 LoRA step's graph takes the hand-written
// gradients of layers' decoder blocks (as many with gradient checkpointing as without), and it
// computes no gradient of a frozen base weight: no node of the graph, besides the weights' own
// parameters, has the shape of a 2-D base weight (a weight gradient would be one). The same walk
// over a full fine-tuning graph finds them, so the check can see what it looks for.
func TestFastPathGraph(t *testing.T) {
	// 3 x 7 tokens: no activation [21, x] has a weight's shape.
	ids := make([]int32, 21)
	ones := make([]int32, 21)
	for i := range ids {
		ids[i] = int32(i*37+5) % 128
		ones[i] = 1
	}
	ones[20] = 0 // right padding
	tokens, mask := tensors.FromFlatDataAndDimensions(ids, 3, 7), tensors.FromFlatDataAndDimensions(ones, 3, 7)
	run := func(lora LoRA, c Compute) (customGrads int64, weightShaped []string) {
		store := gomlxmodel.NewStore()
		m, err := Load(context.Background(), openSnap(t, filepath.Join("testdata", "llama")), store, lora, 0)
		if err != nil {
			t.Fatal(err)
		}
		m.SetCompute(c)
		weightShapes := map[string]bool{}
		for _, v := range m.base {
			if s := v.Shape(); s.Rank() == 2 {
				weightShapes[s.String()] = true
			}
		}
		var vars []*gomlxmodel.Variable
		for v := range store.IterVariables() {
			if v.Trainable {
				vars = append(vars, v)
			}
		}
		exec, err := gomlxmodel.NewExec(backend(t), store, func(scope *gomlxmodel.Scope, tok, msk *Node) []*Node {
			loss := CausalLMLoss(m.Logits(scope, m.Hidden(scope, tok, msk)), tok)
			wrt := make([]*Node, len(vars))
			for i, v := range vars {
				wrt[i] = v.ValueGraph(tok.Graph())
			}
			out := append([]*Node{loss}, Gradient(loss, wrt...)...)
			seen := map[*Node]bool{}
			var walk func(n *Node)
			walk = func(n *Node) {
				if seen[n] {
					return
				}
				seen[n] = true
				if n.Type() != NodeTypeParameter && weightShapes[n.Shape().String()] {
					weightShaped = append(weightShaped, n.Type().String()+" "+n.Shape().String())
				}
				for _, in := range n.Inputs() {
					walk(in)
				}
			}
			for _, o := range out {
				walk(o)
			}
			return out
		})
		if err != nil {
			t.Fatal(err)
		}
		before := layers.CustomGradients()
		if _, err := exec.Exec(tokens, mask); err != nil {
			t.Fatal(err)
		}
		return layers.CustomGradients() - before, weightShaped
	}
	n0, shaped := run(testLoRA, Compute{})
	if n0 == 0 {
		t.Fatal("the LoRA step's graph took no hand-written gradient")
	}
	if len(shaped) > 0 {
		t.Errorf("the LoRA step's graph has %d nodes shaped as a frozen weight (a weight gradient): %v", len(shaped), shaped)
	}
	n1, shaped := run(testLoRA, Compute{GradientCheckpointing: true})
	if n1 != n0 {
		t.Errorf("checkpointed: %d hand-written gradients, want %d as without checkpoints", n1, n0)
	}
	if len(shaped) > 0 {
		t.Errorf("checkpointed: %d nodes shaped as a frozen weight: %v", len(shaped), shaped)
	}
	if _, shaped := run(LoRA{}, Compute{}); len(shaped) == 0 {
		t.Error("full fine-tuning: no node shaped as a weight found: the walk cannot see weight gradients")
	}
}
