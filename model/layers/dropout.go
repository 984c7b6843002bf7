package layers

import (
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
// drawn exactly as the unsharded step draws it, restricted to the shard's rows.
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
	var u *Node
	stream.State, u = RandomUniform(stream.State, shapes.Make(dtypes.Float32, full...))
	// The shard's rows (a Gather: the Go backend has no DynamicSlice).
	rows := Add(Iota(g, shapes.Make(dtypes.Int32, dims[0], 1), 0), stream.Offset)
	u = Gather(u, rows)
	// The same operations as GoMLX's layers.DropoutNormalize, so that the values match bit for bit.
	r := Scalar(g, dtypes.Float32, rate)
	kept := Where(LessOrEqual(u, BroadcastToDims(r, dims...)), ZerosLike(x), x)
	return Div(kept, ConvertDType(OneMinus(r), x.DType()))
}
