package layers

import (
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/model"
)

// TestDropoutKeepMasks checks that the masks made on the host are those the shard graphs draw
// (RandomUniform from the same state, dropped where u <= rate), draw after draw, odd sizes
// included, and that the host leaves the RNG state where the graph leaves it.
func TestDropoutKeepMasks(t *testing.T) {
	backend, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	draws := []DropoutDraw{{Dims: []int{4, 3, 8}, Rate: 0.2}, {Dims: []int{5, 3}, Rate: 0.5}, {Dims: []int{2, 7}, Rate: 0.1}}
	state := [3]uint64{0x1234_5678_9abc_def0, 42, 7}
	exec := MustNewExec(backend, func(st *Node) []*Node {
		outs := []*Node{}
		for _, d := range draws {
			var u *Node
			st, u = RandomUniform(st, shapes.Make(dtypes.Float32, d.Dims...))
			g := u.Graph()
			keep := Where(LessOrEqual(u, Scalar(g, dtypes.Float32, d.Rate)), ZerosLike(u), BroadcastToDims(Scalar(g, dtypes.Float32, dropoutScale(d.Rate)), d.Dims...))
			outs = append(outs, keep)
		}
		return append(outs, st)
	})
	outs := exec.MustExec(tensors.FromFlatDataAndDimensions(state[:], 3))
	masks, after, err := DropoutKeepMasks(state, draws)
	if err != nil {
		t.Fatal(err)
	}
	for i := range draws {
		want := tensors.MustCopyFlatData[float32](outs[i])
		if len(masks[i]) != len(want) {
			t.Fatalf("draw %d: %d values, want %d", i, len(masks[i]), len(want))
		}
		dropped := 0
		for j := range want {
			if masks[i][j] != want[j] {
				t.Fatalf("draw %d element %d: %v, graph %v", i, j, masks[i][j], want[j])
			}
			if want[j] == 0 {
				dropped++
			}
		}
		if dropped == 0 || dropped == len(want) {
			t.Errorf("draw %d: %d of %d dropped", i, dropped, len(want))
		}
	}
	gotState := tensors.MustCopyFlatData[uint64](outs[len(draws)])
	if [2]uint64(gotState[:2]) != [2]uint64(after[:2]) || after[2] != state[2] {
		t.Errorf("state after the draws: host %v, graph %v", after, gotState)
	}
}
