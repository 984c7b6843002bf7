package pretrained

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model"
)

// tinyLM loads a random 1-layer Llama with LoRA whose B matrices are not zero (so the adapters
// change the output), for graph checks.
func tinyLM(t *testing.T) *causalLM { t.Helper(); return tinyLMWith(t, false) }

// tinyLMWith is tinyLM, with the lm_cls head when withHead.
func tinyLMWith(t *testing.T, withHead bool) *causalLM {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "llm")
	if err := randsnap.WriteDecoder(dir, randsnap.Decoder{ModelType: "llama", Vocab: 50, Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 24, Seed: 3}); err != nil {
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
	m, err := loadCausalLM(context.Background(), backend, snap, config.LoRA{Rank: 2, Alpha: 4, TargetModules: []string{"q_proj", "v_proj"}}, 1, withHead, computeSettings{})
	if err != nil {
		t.Fatal(err)
	}
	for key, v := range m.dec.LoRAVariables() {
		if v.Shape().Dimensions[1] == 2 { // B [out, r]
			vals := make([]float32, v.Shape().Size())
			for i := range vals {
				vals[i] = float32(math.Sin(float64(i+len(key)))) * 0.1
			}
			if err := v.SetValue(tensors.FromFlatDataAndDimensions(vals, v.Shape().Dimensions...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return m
}

// TestAnswerLossMatchesCausalLMLoss: the answer loss over gathered positions equals hf/decoder's
// CausalLMLoss (transformers' loss, parity-tested there) with the prompt's labels set to -100,
// on a right-padded batch of two examples of different lengths, with the answer positions
// rounded up (the summarizer's) or fixed at the longest answer (the generative tracker's).
func TestAnswerLossMatchesCausalLMLoss(t *testing.T) {
	m := tinyLM(t)
	exs := []Example{
		AnswerExample([]int32{1, 5, 9, 13, 17}, []int32{21, 22, 2}),
		AnswerExample([]int32{1, 6, 7}, []int32{30, 31, 32, 33, 2}),
	}
	for _, tc := range []struct{ fixedK, wantK int }{{0, 8}, {5, 5}} {
		t.Run(fmt.Sprintf("fixedK=%d", tc.fixedK), func(t *testing.T) { answerLossCase(t, m, exs, tc.fixedK, tc.wantK) })
	}
}

func answerLossCase(t *testing.T, m *causalLM, exs []Example, fixedK, wantK int) {
	b := answerBatch(exs, 0, fixedK)
	if k := b.Inputs[2].(*tensors.Tensor).Shape().Dimensions[1]; k != wantK {
		t.Fatalf("%d answer positions, want %d", k, wantK)
	}
	tokens := b.Inputs[0].(*tensors.Tensor)
	tl := tokens.Shape().Dimensions[1]
	labels := make([]int32, len(exs)*tl)
	for i, e := range exs {
		for j := range tl {
			labels[i*tl+j] = decoder.IgnoreLabel
			if j < len(e.Labels) {
				labels[i*tl+j] = e.Labels[j]
			}
		}
	}
	exec, err := gomlxmodel.NewExec(m.backend, m.store, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
		ours := m.answerLoss(scope, in[:5])
		hidden := m.dec.Hidden(scope, in[0], maskOf(in[1]))
		ref := decoder.CausalLMLoss(m.dec.Logits(scope, hidden), in[5])
		return []*Node{ours, ref}
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Call(append(b.Inputs, tensors.FromFlatDataAndDimensions(labels, len(exs), tl))...)
	if err != nil {
		t.Fatal(err)
	}
	ours, ref := tensors.ToScalar[float32](out[0]), tensors.ToScalar[float32](out[1])
	t.Logf("answer loss %g, CausalLMLoss %g", ours, ref)
	if math.Abs(float64(ours-ref)) > 1e-5 || ours <= 0 {
		t.Errorf("answer loss %g, CausalLMLoss %g", ours, ref)
	}
}

// TestYesNoScoreMatchesSoftmax: the yes/no scorer's renormalised P(yes) equals the full softmax's
// p(yes) / (p(yes) + p(no)) at the last real token, whatever the padding after it.
func TestYesNoScoreMatchesSoftmax(t *testing.T) {
	m := tinyLM(t)
	const yes, no = 11, 12
	sc, err := m.yesNoScorer(yes, no)
	if err != nil {
		t.Fatal(err)
	}
	exs := []Example{{Tokens: []int32{1, 4, 8, 15}}, {Tokens: []int32{1, 3}}}
	got, err := scoreCausal(sc, exs, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	full, err := gomlxmodel.NewExec(m.backend, m.store, func(scope *gomlxmodel.Scope, tokens *Node) *Node {
		return Softmax(m.dec.Logits(scope, m.dec.Hidden(scope, tokens, OnesLike(ConvertDType(tokens, dtypes.Float32)))), -1)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range exs {
		out, err := full.Call(tensors.FromFlatDataAndDimensions(e.Tokens, 1, len(e.Tokens)))
		if err != nil {
			t.Fatal(err)
		}
		p := tensors.MustCopyFlatData[float32](out[0])
		v := 50
		last := p[(len(e.Tokens)-1)*v:]
		want := last[yes] / (last[yes] + last[no])
		if math.Abs(float64(got[i]-want)) > 1e-5 {
			t.Errorf("example %d: P(yes) %g, softmax gives %g", i, got[i], want)
		}
	}
}
