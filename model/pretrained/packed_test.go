package pretrained

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model/training"
)

// packExamples are n examples of random lengths (prompt 2..maxPrompt tokens, answer 1..4) over a
// vocabulary of 50, with targets and weights as the trackers' (pos_weight 3 on the positives).
func packExamples(n, maxPrompt int, seed uint64) []Example {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]Example, n)
	for i := range out {
		prompt := make([]int32, 2+r.IntN(maxPrompt-1))
		for j := range prompt {
			prompt[j] = int32(1 + r.IntN(49))
		}
		answer := make([]int32, 1+r.IntN(4))
		for j := range answer {
			answer[j] = int32(1 + r.IntN(49))
		}
		e := AnswerExample(prompt, answer)
		e.Weight = 1
		if r.IntN(3) == 0 {
			e.Target, e.Weight = 1, 3
		}
		out[i] = e
	}
	return out
}

// TestPackedLossEqualsPadded: a batch packed into rows (TASK.train.packing) gives the padded
// batch's loss and adapter (and lm_cls head) gradients to 1e-5, for the answer loss (generative
// tracker, summarizer) and the classification loss (lm_cls): the same terms, the same weighted
// mean, each example attending to itself at its own positions.
func TestPackedLossEqualsPadded(t *testing.T) {
	m := tinyLMWith(t, true)
	exs := packExamples(9, 20, 1)
	sh := packShape{rowLen: 32}
	for _, tc := range []struct {
		desc          string
		cls           bool
		padded        training.Batch
		paddedLoss    func(*gomlxmodel.Scope, []*Node) *Node
		packedLossFor func(*gomlxmodel.Scope, []*Node) *Node
	}{
		{"answer loss", false, answerBatch(exs, 0, 0), m.answerLoss, m.packedAnswerLoss},
		{"lm_cls loss", true, clsBatch(exs, 0), m.clsLoss, m.packedClsLoss},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			packed := packedBatch(exs, 0, sh, tc.cls)
			if rows := packed.Inputs[0].(*tensors.Tensor).Shape().Dimensions[0]; rows >= len(exs) {
				t.Fatalf("%d examples packed into %d rows", len(exs), rows)
			}
			if packed.Tokens != tc.padded.Tokens || packed.Examples != tc.padded.Examples {
				t.Errorf("packed batch counts %d tokens, %d examples; padded %d, %d", packed.Tokens, packed.Examples, tc.padded.Tokens, tc.padded.Examples)
			}
			run := func(loss func(*gomlxmodel.Scope, []*Node) *Node, b training.Batch) [][]float32 {
				var vars []*gomlxmodel.Variable
				for v := range m.store.IterVariables() {
					if v.Trainable && m.trained(v.Path()) {
						vars = append(vars, v)
					}
				}
				exec, err := gomlxmodel.NewExec(m.backend, m.store, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
					l := loss(scope, in)
					var wrt []*Node
					for _, v := range vars {
						wrt = append(wrt, v.ValueGraph(l.Graph()))
					}
					return append([]*Node{l}, Gradient(l, wrt...)...)
				})
				if err != nil {
					t.Fatal(err)
				}
				out, err := exec.Call(b.Inputs...)
				if err != nil {
					t.Fatal(err)
				}
				var flat [][]float32
				for _, o := range out {
					flat = append(flat, tensors.MustCopyFlatData[float32](o))
				}
				return flat
			}
			want, got := run(tc.paddedLoss, tc.padded), run(tc.packedLossFor, packed)
			if want[0][0] <= 0 {
				t.Fatalf("padded loss %g", want[0][0])
			}
			for i := range want {
				worst := 0.0
				for j := range want[i] {
					worst = max(worst, math.Abs(float64(got[i][j]-want[i][j])))
				}
				if worst > 1e-5 {
					t.Errorf("output %d (0: loss, then gradients): packed differs from padded by %.3g", i, worst)
				}
			}
		})
	}
}

// TestPackedBatchesOneShape: every packed batch of a run, over all its epochs and the short last
// batch of each, has the one shape planPacking gives (one compiled program per row length on a
// backend that compiles per shape), holds each example's tokens once at positions from 0, and
// fewer rows than examples.
func TestPackedBatchesOneShape(t *testing.T) {
	exs := packExamples(203, 60, 2)
	loop := config.DefaultTrainLoop()
	loop.BatchSize, loop.Epochs = 16, 3
	sh := planPacking(exs, loop, 5, 64)
	if sh.rowLen != 64 || sh.rows >= loop.BatchSize {
		t.Fatalf("plan %+v: want rows of 64 tokens, fewer rows than the batch's %d examples", sh, loop.BatchSize)
	}
	for _, cls := range []bool{false, true} {
		var shapes []string
		for epoch := range loop.Epochs {
			for _, b := range epochBatches(exs, loop.BatchSize, 5, epoch, func(c []Example) training.Batch { return packedBatch(c, 0, sh, cls) }) {
				var dims []string
				for _, in := range b.Inputs {
					dims = append(dims, fmt.Sprint(in.(*tensors.Tensor).Shape().Dimensions))
				}
				shapes = append(shapes, fmt.Sprint(dims))
				tok := tensors.MustCopyFlatData[int32](b.Inputs[0].(*tensors.Tensor))
				seg := tensors.MustCopyFlatData[int32](b.Inputs[1].(*tensors.Tensor))
				pos := tensors.MustCopyFlatData[int32](b.Inputs[2].(*tensors.Tensor))
				n, starts := 0, 0
				for i := range tok {
					if seg[i] != 0 {
						n++
						if pos[i] == 0 {
							starts++
						}
					}
				}
				if n != b.Tokens || starts != b.Examples {
					t.Fatalf("a batch of %d examples (%d tokens) holds %d tokens starting %d examples", b.Examples, b.Tokens, n, starts)
				}
			}
		}
		slices.Sort(shapes)
		if shapes = slices.Compact(shapes); len(shapes) != 1 {
			t.Errorf("cls %v: %d batch shapes: %v", cls, len(shapes), shapes)
		}
	}
}
