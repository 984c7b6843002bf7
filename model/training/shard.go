package training

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"sync"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/model"
)

// Data parallelism on a CPU (Options.Shards). The pure-Go backend runs most ops of a graph on one
// core (its parallel op scheduler deadlocked in the SIMD build), so a training step uses about one
// core. A sharded step cuts each micro-batch into shards, runs the gradient graph of every shard
// on its own goroutine, then combines the gradients in a fixed order (Σ coefficient_s ·
// gradient_s, s = 0, 1, ...) and applies one AdamW update in a separate graph. The combined
// gradient is the full batch's up to float rounding, and it is the same whether the shards ran
// concurrently or one after the other.
//
// Randomness: the gradient graphs must not change any variable (two of them run at once), so
// dropout cannot advance the store's RNG variable there. Each shard draws from its own stream,
// split from the store's RNG state by shard index; the update graph then advances the store's
// state. Losses use Dropout, which does the right thing in both kinds of graphs.

// shardRNG maps a gradient graph being built to its shard's random stream.
var shardRNG sync.Map // *graph.Graph -> *rngStream

type rngStream struct{ state *graph.Node }

// Dropout zeroes each element of x with probability rate in training graphs and scales the others
// by 1/(1-rate) (layers.DropoutStatic); outside training it returns x. In the gradient graph of a
// sharded step (Options.Shards) it draws from the shard's own random stream instead of the store's
// RNG variable. Losses trained with Shards > 1 must use it instead of layers.Dropout.
func Dropout(scope *gomlxmodel.Scope, x *graph.Node, rate float64) *graph.Node {
	g := x.Graph()
	if rate <= 0 || !scope.IsTraining(g) {
		return x
	}
	s, ok := shardRNG.Load(g)
	if !ok {
		return layers.DropoutStatic(scope, x, rate)
	}
	stream := s.(*rngStream)
	var u *graph.Node
	stream.state, u = graph.RandomUniform(stream.state, shapes.Make(dtypes.Float32, x.Shape().Dimensions...))
	drop := graph.LessOrEqual(u, graph.Scalar(g, dtypes.Float32, rate))
	kept := graph.Where(drop, graph.ZerosLike(x), x)
	return graph.DivScalar(kept, 1-rate)
}

// SplitRows cuts a batch whose inputs are all tensors with the same axis-0 size (the examples)
// into at most n contiguous shards of nearly equal size (the first ones one row larger). When
// weightInput >= 0, that input is a float32 vector of per-example loss weights and each shard's
// Weight is the sum of its weights (the normaliser of a weighted-mean loss); otherwise Weight is
// the shard's number of examples. Tokens are shared out in proportion to the rows (they only feed
// throughput figures).
func SplitRows(b Batch, n, weightInput int) ([]Batch, error) {
	if len(b.Inputs) == 0 {
		return nil, fmt.Errorf("training: split of a batch without inputs")
	}
	ts := make([]*tensors.Tensor, len(b.Inputs))
	rows := -1
	for i, in := range b.Inputs {
		t, ok := in.(*tensors.Tensor)
		if !ok || t.Shape().Rank() == 0 {
			return nil, fmt.Errorf("training: split: input %d is %T, want a tensor of rank >= 1", i, in)
		}
		if rows >= 0 && t.Shape().Dimensions[0] != rows {
			return nil, fmt.Errorf("training: split: input %d has %d rows, input 0 has %d", i, t.Shape().Dimensions[0], rows)
		}
		rows = t.Shape().Dimensions[0]
		ts[i] = t
	}
	n = max(1, min(n, rows))
	out := make([]Batch, 0, n)
	start := 0
	for s := range n {
		size := rows / n
		if s < rows%n {
			size++
		}
		shard := Batch{Inputs: make([]any, len(ts)), Examples: size, Weight: float64(size)}
		for i, t := range ts {
			dims := t.Shape().Clone().Dimensions
			dims[0] = size
			part := tensors.FromShape(shapes.Make(t.DType(), dims...))
			rowBytes := int(t.Shape().Memory()) / rows
			var err error
			t.ConstBytes(func(src []byte) {
				err = part.MutableBytes(func(dst []byte) {
					copy(dst, src[start*rowBytes:(start+size)*rowBytes])
				})
			})
			if err != nil {
				return nil, fmt.Errorf("training: split: %w", err)
			}
			shard.Inputs[i] = part
		}
		if weightInput >= 0 {
			if ts[weightInput].DType() != dtypes.Float32 {
				return nil, fmt.Errorf("training: split: weight input %d is %s, want float32", weightInput, ts[weightInput].DType())
			}
			var w float64
			for _, x := range tensors.MustCopyFlatData[float32](shard.Inputs[weightInput].(*tensors.Tensor)) {
				w += float64(x)
			}
			shard.Weight = w
		}
		shard.Tokens = b.Tokens * size / rows
		out = append(out, shard)
		start += size
	}
	// Give the rounding remainder of Tokens to the first shard.
	total := 0
	for _, sh := range out {
		total += sh.Tokens
	}
	out[0].Tokens += b.Tokens - total
	return out, nil
}

// shardedStepper runs the optimizer steps of a Stepper with Options.Shards > 1.
type shardedStepper struct {
	o                   *Options
	gradExec, applyExec *gomlxmodel.Exec
	concurrent          bool

	mu   sync.Mutex
	vars []*gomlxmodel.Variable // trainable variables, in the order of the gradient outputs
	seen map[string]bool        // input shapes whose gradient graph is compiled
}

func newShardedStepper(o *Options) (*shardedStepper, error) {
	if o.Split == nil {
		return nil, fmt.Errorf("training: Options.Shards = %d needs Options.Split", o.Shards)
	}
	if o.Store.GetVariable(rngPath) == nil {
		if err := o.Store.SetRNGStateFromSeed(o.Seed); err != nil {
			return nil, fmt.Errorf("training: seed: %w", err)
		}
	}
	s := &shardedStepper{o: o, seen: map[string]bool{}, concurrent: runtime.GOMAXPROCS(0) > 1}
	if s.concurrent {
		// Two executions at once must not share the Go backend's worker pool: its fan-out
		// (Saturate) waits on one condition variable and can miss wake-ups when two matmuls fan
		// out together. Each shard's execution then runs on its own goroutine, one core each.
		model.SetGoParallelism(o.Backend, 0)
	}
	var err error
	if s.gradExec, err = gomlxmodel.NewExec(o.Backend, o.Store, s.gradGraph); err != nil {
		return nil, fmt.Errorf("training: %w", err)
	}
	s.gradExec.SetMaxCache(-1)
	if s.applyExec, err = gomlxmodel.NewExec(o.Backend, o.Store, s.applyGraph); err != nil {
		return nil, fmt.Errorf("training: %w", err)
	}
	s.applyExec.SetMaxCache(-1)
	return s, nil
}

var rngPath = gomlxmodel.JoinPath("/", gomlxmodel.RNGStateVariableName)

// gradGraph: inputs are the shard index (int32 scalar) then the shard's inputs; outputs are the
// loss and the gradient of every trainable model variable. It changes no variable.
func (s *shardedStepper) gradGraph(root *gomlxmodel.Scope, inputs []*graph.Node) []*graph.Node {
	g := inputs[0].Graph()
	store := root.Store()
	store.SetTraining(g, true)
	// The shard's stream: split the store's state Shards times and pick the shard's piece.
	state := store.GetVariable(rngPath).NodeValue(g)
	idx := inputs[0]
	var mine *graph.Node
	for i := range s.o.Shards {
		var piece *graph.Node
		state, piece = graph.RNGStateSplit(state)
		if mine == nil {
			mine = piece
			continue
		}
		is := graph.BroadcastToDims(graph.Equal(idx, graph.Scalar(g, dtypes.Int32, i)), piece.Shape().Dimensions...)
		mine = graph.Where(is, piece, mine)
	}
	shardRNG.Store(g, &rngStream{state: mine})
	defer shardRNG.Delete(g)

	loss := s.o.Loss(store.Scope(model.ModelScope), inputs[1:])
	if loss.Rank() != 0 {
		panic(fmt.Sprintf("training: LossFn must return a scalar, got shape %s", loss.Shape()))
	}
	var vars []*gomlxmodel.Variable
	var nodes []*graph.Node
	for v := range store.IterVariables() {
		if v.ChangedInGraph(g) {
			panic(fmt.Sprintf("training: with Options.Shards > 1 the loss must not change variables, but it changes %s (draw dropout with training.Dropout)", v.Path()))
		}
		if v.Trainable && strings.HasPrefix(v.Path(), model.ModelScope+"/") && v.InUseByGraph(g) {
			vars = append(vars, v)
			nodes = append(nodes, v.NodeValue(g))
		}
	}
	s.mu.Lock()
	if s.vars == nil {
		s.vars = vars
	} else if !sameVars(s.vars, vars) {
		s.mu.Unlock()
		panic("training: the loss graphs of different batch shapes use different trainable variables; Options.Shards > 1 needs the same ones")
	}
	s.mu.Unlock()
	grads := graph.Gradient(graph.ConvertDType(loss, dtypes.Float32), nodes...)
	return append([]*graph.Node{loss}, grads...)
}

func sameVars(a, b []*gomlxmodel.Variable) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// applyGraph: inputs are the learning rate, the combination coefficients [k] and the k gradient
// sets (shard-major, each in the order of s.vars); it combines them, clips, applies AdamW and
// advances the store's RNG state. Output: the global gradient norm.
func (s *shardedStepper) applyGraph(root *gomlxmodel.Scope, inputs []*graph.Node) []*graph.Node {
	g := inputs[0].Graph()
	store := root.Store()
	lr, coef, sets := inputs[0], inputs[1], inputs[2:]
	nv := len(s.vars)
	k := len(sets) / nv
	grads := make([]*graph.Node, nv)
	for sh := range k {
		c := graph.Slice(coef, graph.AxisElem(sh))
		c = graph.Reshape(c)
		for i := range nv {
			term := graph.Mul(sets[sh*nv+i], graph.ConvertDType(c, sets[sh*nv+i].DType()))
			if grads[i] == nil {
				grads[i] = term
			} else {
				grads[i] = graph.Add(grads[i], term)
			}
		}
	}
	rng := store.GetVariable(rngPath)
	next, _ := graph.RNGStateSplit(rng.NodeValue(g))
	rng.SetNodeValue(next)
	return []*graph.Node{s.o.update(store.Scope(OptimizerScope), g, s.vars, grads, lr)}
}

// step runs one optimizer step over the micro-batches of group.
func (s *shardedStepper) step(group []Batch, lr float64) (float64, error) {
	type result struct {
		outs []*tensors.Tensor
		err  error
	}
	var coefs []float32
	var sets []any
	var lossSum float64
	for _, b := range group {
		shards, err := s.o.Split(b, s.o.Shards)
		if err != nil {
			return 0, err
		}
		if len(shards) == 0 {
			return 0, fmt.Errorf("training: Split returned no shard")
		}
		var total float64
		for i := range shards {
			if shards[i].Weight <= 0 {
				shards[i].Weight = float64(shards[i].Examples)
			}
			total += shards[i].Weight
		}
		results := make([]result, len(shards))
		run := func(i int) {
			args := append([]any{int32(i)}, shards[i].Inputs...)
			results[i].outs, results[i].err = s.gradExec.Call(args...)
		}
		keys := make([]string, len(shards))
		compiled := true
		for i, sh := range shards {
			keys[i] = shapeKey(sh.Inputs)
			compiled = compiled && s.seen[keys[i]]
		}
		if s.concurrent && compiled {
			var wg sync.WaitGroup
			for i := 1; i < len(shards); i++ {
				wg.Go(func() { run(i) })
			}
			run(0)
			wg.Wait()
		} else {
			// New shapes build graphs (and maybe variables) in the store: one at a time.
			for i := range shards {
				run(i)
				s.seen[keys[i]] = true
			}
		}
		var loss float64
		for i, r := range results {
			if r.err != nil {
				return 0, r.err
			}
			c := shards[i].Weight / total
			loss += c * float64(tensors.ToScalar[float32](r.outs[0]))
			coefs = append(coefs, float32(c/float64(len(group))))
			for _, t := range r.outs[1:] {
				sets = append(sets, t)
			}
		}
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return 0, fmt.Errorf("loss is %v (lower the learning rate?)", loss)
		}
		lossSum += loss
	}
	args := append([]any{float32(lr), coefs}, sets...)
	outs, err := s.applyExec.Call(args...)
	if err != nil {
		return 0, err
	}
	for _, t := range append(outs, anyTensors(sets)...) {
		_ = t.FinalizeAll()
	}
	return lossSum / float64(len(group)), nil
}

func anyTensors(xs []any) []*tensors.Tensor {
	out := make([]*tensors.Tensor, len(xs))
	for i, x := range xs {
		out[i] = x.(*tensors.Tensor)
	}
	return out
}

// shapeKey identifies the compiled graph a shard's inputs select.
func shapeKey(inputs []any) string {
	var sb strings.Builder
	for _, in := range inputs {
		if t, ok := in.(*tensors.Tensor); ok {
			sb.WriteString(t.Shape().String())
		} else if v := reflect.ValueOf(in); v.Kind() == reflect.Slice {
			fmt.Fprintf(&sb, "%T[%d]", in, v.Len())
		} else {
			fmt.Fprintf(&sb, "%T", in)
		}
		sb.WriteByte(';')
	}
	return sb.String()
}
