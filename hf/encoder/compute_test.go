package encoder

import (
	"context"
	"math"
	"testing"

	gomlxmodel "github.com/gomlx/gomlx/ml/model"
)

// bf16RelTol bounds the bf16 encoder's largest difference from the float32 reference, relative to
// the reference's largest magnitude (see hf/decoder's bf16RelTol; measured: TestBF16Parity's log).
const bf16RelTol = 0.05

// loraModel loads the golden snapshot with the golden's adapters and classifier, and returns it
// with the store paths of every trainable variable.
func loraModel(t *testing.T, g *goldenFile) (*Model, *gomlxmodel.Store, []string) {
	t.Helper()
	store := gomlxmodel.NewStore()
	m, err := Load(context.Background(), openGolden(t), store, LoRA{Rank: g.LoRA.Rank, Alpha: g.LoRA.Alpha, RSLoRA: g.LoRA.RSLoRA, TargetModules: g.LoRA.Targets}, 0)
	if err != nil {
		t.Fatal(err)
	}
	loadAdapter(t, m)
	setHead(t, m, g)
	var paths []string
	for v := range store.IterVariables() {
		if v.Trainable {
			paths = append(paths, v.Path())
		}
	}
	return m, store, paths
}

// relDiff returns the largest |got - want| relative to the largest |want|.
func relDiff(got []float32, want []float64) float64 {
	worst, scale := 0.0, 0.0
	for i := range want {
		worst = math.Max(worst, math.Abs(float64(got[i])-want[i]))
		scale = math.Max(scale, math.Abs(want[i]))
	}
	return worst / scale
}

// TestBF16Parity: with Compute.BF16 the encoder's hidden states, pooled output and logits stay within
// bf16RelTol of the float32 reference, and its loss and gradients (float32) close to float32's.
func TestBF16Parity(t *testing.T) {
	g := readGolden(t)
	m, store, paths := loraModel(t, g)
	o32 := run(t, m, store, g, paths)
	m.SetCompute(Compute{BF16: true})
	o16 := run(t, m, store, g, paths)
	for _, c := range []struct {
		what string
		got  []float32
		want []float64
	}{{"hidden", o16.hidden, g.LoRA.Hidden}, {"pooled", o16.pooled, g.LoRA.Pooled}, {"logits", o16.logits, g.LoRA.Logits}} {
		d := relDiff(c.got, c.want)
		t.Logf("bf16 %s: max |diff| from the float32 reference %.2g%% of its max", c.what, 100*d)
		if d > bf16RelTol {
			t.Errorf("bf16 %s: max |diff| %.3g of the reference's max, more than %g", c.what, d, bf16RelTol)
		}
	}
	if d := math.Abs(float64(o16.loss - o32.loss)); d > 1e-2*math.Abs(float64(o32.loss)) {
		t.Errorf("bf16 loss %.5f, float32 %.5f", o16.loss, o32.loss)
	}
	for _, p := range paths {
		want := make([]float64, len(o32.grads[p]))
		for i, v := range o32.grads[p] {
			want[i] = float64(v)
		}
		if d := relDiff(o16.grads[p], want); d > 0.1 {
			t.Errorf("%s: bf16 gradient differs from float32's by %.3g of its max", p, d)
		}
	}
}

// TestGradientCheckpointing: the loss and every trainable variable's gradient are the same with each
// layer checkpointed as without (1e-6 relative to the largest gradient), in float32 and bf16.
func TestGradientCheckpointing(t *testing.T) {
	g := readGolden(t)
	for _, bf16 := range []bool{false, true} {
		m, store, paths := loraModel(t, g)
		m.SetCompute(Compute{BF16: bf16})
		o0 := run(t, m, store, g, paths)
		m.SetCompute(Compute{BF16: bf16, GradientCheckpointing: true})
		o1 := run(t, m, store, g, paths)
		if math.Abs(float64(o1.loss-o0.loss)) > 1e-6*(1+math.Abs(float64(o0.loss))) {
			t.Errorf("bf16 %v: loss %.8f with checkpoints, %.8f without", bf16, o1.loss, o0.loss)
		}
		nonzero := false
		for _, p := range paths {
			worst, scale := 0.0, 0.0
			for i, w := range o0.grads[p] {
				worst = math.Max(worst, math.Abs(float64(o1.grads[p][i]-w)))
				scale = math.Max(scale, math.Abs(float64(w)))
			}
			nonzero = nonzero || scale > 0
			if worst > 1e-6*(1+scale) {
				t.Errorf("bf16 %v: %s: gradient differs by %.3g with checkpoints (max |grad| %.3g)", bf16, p, worst, scale)
			}
		}
		if !nonzero {
			t.Fatal("every gradient is zero: the comparison tests nothing")
		}
	}
}
