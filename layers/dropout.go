package layers

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	gomlxlayers "github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
)

// ShardStream is the random stream of the gradient graph of one shard of a data-parallel training
// step (model/training, Options.Shards): Dropout in that graph replays the draws of the full
// batch from State, as the unsharded step would, keeps the rows of the shard and leaves the
// advanced state in State for the step to store once all shards are done. Such a graph must not
// change any variable (its shards run at once), so it cannot advance the store's RNG variable
// the way layers.DropoutStatic does.
type ShardStream struct {
	// State is the RNG state, advanced by every Dropout of the graph.
	State *Node
	// Offset is the shard's first row in the full batch, an int32 scalar.
	Offset *Node
	// FullRows is the number of rows (examples) of the full batch.
	FullRows int
	// Masks, when not nil, are the keep masks of the graph's dropouts, in the order of the
	// Dropout calls, computed on the host from the same RNG state by the same rule
	// (DropoutKeepMasks; the shard's rows only): Dropout then multiplies by them instead of
	// drawing, and State does not move.
	Masks []*Node
	// Draws records the graph's dropouts in the order of the calls: what DropoutKeepMasks needs to
	// compute their masks.
	Draws []DropoutDraw
}

// DropoutDraw is one dropout of a shard's graph: the full batch's shape of its random draw and the
// rate.
type DropoutDraw struct {
	Dims []int
	Rate float64
}

// shardStreams maps a graph being built to its shard's stream.
var shardStreams sync.Map // *Graph -> *ShardStream

// BindShardStream makes Dropout draw from s while graph g is built, until unbind is called.
func BindShardStream(g *Graph, s *ShardStream) (unbind func()) {
	shardStreams.Store(g, s)
	return func() { shardStreams.Delete(g) }
}

// Dropout zeroes each element of x with probability rate in training graphs and scales the others
// by 1/(1-rate); outside training, or with rate <= 0, it returns x. It is the one dropout of the
// models: GoMLX's layers.DropoutStatic in an ordinary graph, and in the gradient graph of a
// sharded step (BindShardStream; axis 0 of x must then be the examples) the full batch's mask,
// drawn exactly as the unsharded step draws it, restricted to the shard's rows (or that mask made
// on the host and given to the graph, ShardStream.Masks), times the scale (up to float rounding,
// the unsharded x/(1-rate)).
func Dropout(scope *model.Scope, x *Node, rate float64) *Node {
	g := x.Graph()
	if rate <= 0 || !scope.IsTraining(g) {
		return x
	}
	s, ok := shardStreams.Load(g)
	if !ok {
		return gomlxlayers.DropoutStatic(scope, x, rate)
	}
	stream := s.(*ShardStream)
	dims := x.Shape().Dimensions
	full := append([]int{stream.FullRows}, dims[1:]...)
	stream.Draws = append(stream.Draws, DropoutDraw{Dims: full, Rate: rate})
	if stream.Masks != nil {
		i := len(stream.Draws) - 1
		if i >= len(stream.Masks) || !stream.Masks[i].Shape().Equal(x.Shape()) {
			panic(fmt.Sprintf("layers: dropout %d of shape %s has no matching host mask (%d masks)", i, x.Shape(), len(stream.Masks)))
		}
		return Mul(x, stream.Masks[i])
	}
	var u *Node
	stream.State, u = RandomUniform(stream.State, shapes.Make(dtypes.Float32, full...))
	// The shard's rows (a Gather: the Go backend has no DynamicSlice).
	rows := Add(Iota(g, shapes.Make(dtypes.Int32, dims[0], 1), 0), stream.Offset)
	u = Gather(u, rows)
	// The rule of DropoutKeepMasks: dropped where u <= rate (as GoMLX's layers.DropoutNormalize),
	// else the scale.
	keep := Where(LessOrEqual(u, Scalar(g, dtypes.Float32, rate)), ZerosLike(u), BroadcastToDims(Scalar(g, dtypes.Float32, dropoutScale(rate)), dims...))
	return Mul(x, keep)
}

// dropoutScale is the factor of the kept elements, 1/(1-rate) in float32.
func dropoutScale(rate float64) float32 { return 1 / (1 - float32(rate)) }

// DropoutKeepMasks computes on the host the masks that Dropout in shard graphs draws from the RNG
// state (the Go backend's RNGBitGenerator: math/rand/v2's PCG seeded with state[0], state[1], its
// bytes in order; GoMLX's RandomUniform of float32), for each draw in order: the full batch's
// mask, 0 where dropped and the scale elsewhere, flat. It returns the state after the draws
// (state[2] unchanged), as the graph would leave it.
func DropoutKeepMasks(state [3]uint64, draws []DropoutDraw) ([][]float32, [3]uint64, error) {
	masks := make([][]float32, len(draws))
	for i, d := range draws {
		masks[i] = make([]float32, drawSize(d))
	}
	state, err := FillDropoutKeepMasks(state, draws, masks)
	return masks, state, err
}

// FillDropoutKeepMasks is DropoutKeepMasks writing into dst[i], of the draws' sizes (buffers
// reused from step to step).
func FillDropoutKeepMasks(state [3]uint64, draws []DropoutDraw, dst [][]float32) ([3]uint64, error) {
	for i, d := range draws {
		n := drawSize(d)
		if len(dst[i]) != n {
			return state, fmt.Errorf("layers: dropout mask %d has %d values, the draw %d", i, len(dst[i]), n)
		}
		m := dst[i]
		// Dropped iff RandomUniform's value u(bits) <= rate; u is non-decreasing in bits, so iff
		// bits <= maxDropped: an integer comparison, made without a branch (the lookup's index is
		// 1 iff bits > maxDropped).
		maxDropped := uint64(dropThreshold(float32(d.Rate)))
		vals := [2]float32{0, dropoutScale(d.Rate)}
		// Each draw seeds a PCG with the state, as the backend does, and reads its bytes in order:
		// uint32 j is the low (even j) or high half of the (j/2)-th Uint64.
		rng := rand.NewPCG(state[0], state[1])
		j := 0
		for ; j+1 < n; j += 2 {
			bits := rng.Uint64()
			m[j] = vals[(maxDropped-(bits&0xffffffff))>>63]
			m[j+1] = vals[(maxDropped-(bits>>32))>>63]
		}
		if j < n {
			m[j] = vals[(maxDropped-(rng.Uint64()&0xffffffff))>>63]
		}
		// The backend reads the new state from the PCG's binary encoding as little-endian words
		// (the encoding is big-endian: the words come back byte-swapped, deterministically).
		enc, err := rng.MarshalBinary()
		if err != nil || len(enc) != 20 || string(enc[:4]) != "pcg:" {
			return state, fmt.Errorf("layers: dropout masks: unexpected PCG state encoding (%d bytes, %v)", len(enc), err)
		}
		state[0] = binary.LittleEndian.Uint64(enc[4:12])
		state[1] = binary.LittleEndian.Uint64(enc[12:20])
	}
	return state, nil
}

func drawSize(d DropoutDraw) int {
	n := 1
	for _, dim := range d.Dims {
		n *= dim
	}
	return n
}

// uniformOf is GoMLX's RandomUniform (float32) of random bits: ConvertDType, times 2^-32 (exact),
// Abs (a no-op here), then clamped below 1.
func uniformOf(bits uint32) float32 {
	const top = float32(0.99999994) // math.Nextafter32(1, 0)
	return min(float32(bits)*(1.0/(1<<32)), top)
}

// dropThreshold is the largest bits whose uniformOf is <= rate (the dropped ones: [0, threshold]),
// or -1 when none is.
func dropThreshold(rate float32) int64 {
	if uniformOf(0) > rate {
		return -1
	}
	lo, hi := int64(0), int64(math.MaxUint32) // uniformOf(lo) <= rate; find the last such
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if uniformOf(uint32(mid)) <= rate {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}
