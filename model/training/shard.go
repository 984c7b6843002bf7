package training

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/layers"
	"github.com/tracksum/tracksum/model"
)

// Data parallelism on a CPU (Options.Shards). The pure-Go backend runs most ops of a graph on one
// core (its parallel op scheduler deadlocked in the SIMD build), so a training step uses about one
// core. A sharded step cuts each micro-batch into shards, runs the gradient graph of every shard
// on its own goroutine, then combines the gradients in a fixed order (Σ coefficient_s ·
// gradient_s, s = 0, 1, ...) and applies one AdamW update, on the host when the backend shares
// its buffers with Go (hostadam.go), else in a separate graph. The combined
// gradient is the full batch's up to float rounding, and it is the same whether the shards ran
// concurrently or one after the other.
//
// Randomness: the gradient graphs must not change any variable (two of them run at once), so
// dropout cannot advance the store's RNG variable there. Instead every shard replays the draws the
// unsharded step would make — same RNG state, masks of the full batch's shape — and keeps the rows
// of its slice; the gradient graph returns the final RNG state, which the stepper stores in the
// variable once the shards are done. The
// dropout masks are therefore exactly those of the unsharded step, and a sharded run differs from
// an unsharded one only by float rounding. Losses use layers.Dropout (layers), which does
// the right thing in both kinds of graphs; the stepper binds each shard's stream to its gradient
// graph (layers.BindShardStream).

// DataParallelShards is the number of data-parallel shards of each training batch (Options.Shards)
// that suits backend: 2 on the pure-Go backend, whose op scheduler uses one core per execution, so
// that two cores compute the two halves' gradients at once; 1 (no sharding) on XLA, which
// parallelises inside ops. The shard count, not the machine, fixes the arithmetic: a 1-core
// machine runs the two halves one after the other and gets the same numbers.
func DataParallelShards(backend compute.Backend) int {
	if backend.String() == "go" {
		return 2
	}
	return 1
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

	// Dropout masks made on the host (see step): the dropouts of each shard graph (by the shape
	// key of its inputs without masks), recorded when it is first built, and the number of data
	// inputs of a shard (the gradient graph's inputs after them are masks).
	draws      map[string][]layers.DropoutDraw
	lastDraws  []layers.DropoutDraw
	dataInputs int
	maskBuf    [][]float32 // the full batch's masks, reused

	host   *hostAdamW // the update on the host, once the variables are known
	noHost bool       // the update runs as a graph (applyExec)
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
	s := &shardedStepper{o: o, seen: map[string]bool{}, draws: map[string][]layers.DropoutDraw{}, concurrent: runtime.GOMAXPROCS(0) > 1}
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

// gradGraph: inputs are the shard's first row in the full batch (int32 scalar), a placeholder
// whose length is the full batch's number of rows, then the shard's inputs (s.dataInputs of them),
// then optionally the keep masks of its dropouts (made on the host); outputs are the loss, the RNG
// state after the micro-batch's draws (from the store's state, read only; unchanged with masks)
// and the gradient of every trainable model variable. It changes no variable, and it leaves the
// graph's dropouts in s.lastDraws.
func (s *shardedStepper) gradGraph(root *gomlxmodel.Scope, inputs []*graph.Node) []*graph.Node {
	g := inputs[0].Graph()
	store := root.Store()
	store.SetTraining(g, true)
	stream := &layers.ShardStream{State: store.GetVariable(rngPath).NodeValue(g), Offset: inputs[0], FullRows: inputs[1].Shape().Dimensions[0]}
	defer layers.BindShardStream(g, stream)()
	inputs = inputs[2:]
	if masks := inputs[s.dataInputs:]; len(masks) > 0 {
		stream.Masks = masks
	}
	inputs = inputs[:s.dataInputs]
	loss := s.o.Loss(store.Scope(model.ModelScope), inputs)
	if stream.Masks != nil && len(stream.Draws) != len(stream.Masks) {
		panic(fmt.Sprintf("training: the shard graph has %d dropouts but was given %d masks", len(stream.Draws), len(stream.Masks)))
	}
	if loss.Rank() != 0 {
		panic(fmt.Sprintf("training: LossFn must return a scalar, got shape %s", loss.Shape()))
	}
	var vars []*gomlxmodel.Variable
	var nodes []*graph.Node
	for v := range store.IterVariables() {
		if v.ChangedInGraph(g) {
			panic(fmt.Sprintf("training: with Options.Shards > 1 the loss must not change variables, but it changes %s (draw dropout with layers.Dropout of layers)", v.Path()))
		}
		if v.Trainable && strings.HasPrefix(v.Path(), model.ModelScope+"/") && v.InUseByGraph(g) {
			vars = append(vars, v)
			nodes = append(nodes, v.NodeValue(g))
		}
	}
	s.mu.Lock()
	s.lastDraws = stream.Draws
	if s.vars == nil {
		s.vars = vars
	} else if !sameVars(s.vars, vars) {
		s.mu.Unlock()
		panic("training: the loss graphs of different batch shapes use different trainable variables; Options.Shards > 1 needs the same ones")
	}
	s.mu.Unlock()
	grads := graph.Gradient(graph.ConvertDType(loss, dtypes.Float32), nodes...)
	return append([]*graph.Node{loss, stream.State}, grads...)
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
// sets (shard-major, each in the order of s.vars); it combines them, clips and applies AdamW.
// Output: the global gradient norm.
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
	return []*graph.Node{s.o.update(store.Scope(OptimizerScope), g, s.vars, grads, lr)}
}

// step runs one optimizer step over the micro-batches of group.
//
// Dropout: the first time a shard's input shapes are seen, its graph draws the full batch's
// dropout masks from the RNG state and keeps its rows (layers.Dropout), and building it records
// the draws. From then on the masks are made on the host from the same state by the same rule
// (layers.DropoutKeepMasks, the same values) and passed in, each shard getting its rows: the Go
// backend's generator fills byte by byte and every shard drew the full batch's masks, ~10% of a
// tracker step.
func (s *shardedStepper) step(group []Batch, lr float64) (float64, error) {
	acc := &stepAcc{}
	defer func() {
		for _, t := range acc.owned {
			_ = t.FinalizeAll()
		}
	}()
	var lossSum float64
	for _, b := range group {
		loss, err := s.microStep(b, len(group), acc)
		if err != nil {
			return 0, err
		}
		lossSum += loss
	}
	if err := s.apply(lr, acc.coefs, acc.sets); err != nil {
		return 0, err
	}
	return lossSum / float64(len(group)), nil
}

// stepAcc gathers what a step's micro-batches leave for the update: each shard's gradient
// coefficient and its gradients, and the tensors (outputs and masks) to release after it.
type stepAcc struct {
	coefs []float32
	sets  []any
	owned []*tensors.Tensor
}

// shardResult is one shard's gradient call: the loss, the RNG state after its draws, then the
// gradients.
type shardResult struct {
	outs []*tensors.Tensor
	err  error
}

// microStep runs the gradient graphs of one micro-batch's shards (one of groupLen), adds their
// coefficients and gradients to acc, advances the store's RNG and returns the batch's loss.
func (s *shardedStepper) microStep(b Batch, groupLen int, acc *stepAcc) (float64, error) {
	shards, total, err := s.split(b)
	if err != nil {
		return 0, err
	}
	args, baseKeys, err := s.shardArgs(b, shards)
	if err != nil {
		return 0, err
	}
	newState, hostMasks, err := s.hostMasks(shards, baseKeys, args)
	if err != nil {
		return 0, err
	}
	results := s.runShards(args, baseKeys, hostMasks, acc)
	var loss float64
	for i, r := range results {
		if r.err != nil {
			return 0, r.err
		}
		c := shards[i].Weight / total
		loss += c * float64(tensors.ToScalar[float32](r.outs[0]))
		acc.coefs = append(acc.coefs, float32(c/float64(groupLen)))
		for _, t := range r.outs[2:] {
			acc.sets = append(acc.sets, t)
		}
		acc.owned = append(acc.owned, r.outs[0])
		acc.owned = append(acc.owned, r.outs[2:]...)
		if i > 0 || hostMasks {
			acc.owned = append(acc.owned, r.outs[1])
		}
	}
	// Every shard made the same draws: advance the store's RNG as the unsharded step would,
	// before the next micro-batch.
	state := results[0].outs[1]
	if hostMasks {
		state = tensors.FromFlatDataAndDimensions(newState[:], 3)
	}
	if err := s.o.Store.GetVariable(rngPath).SetValue(state); err != nil {
		return 0, fmt.Errorf("training: RNG state: %w", err)
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return 0, fmt.Errorf("loss is %v (lower the learning rate?)", loss)
	}
	return loss, nil
}

// split splits b into its shards, giving a shard without a weight its number of examples, and
// returns them with their total weight (the loss and the gradients are the weighted mean).
func (s *shardedStepper) split(b Batch) ([]Batch, float64, error) {
	shards, err := s.o.Split(b, s.o.Shards)
	if err != nil {
		return nil, 0, err
	}
	if len(shards) == 0 {
		return nil, 0, fmt.Errorf("training: Split returned no shard")
	}
	var total float64
	for i := range shards {
		if shards[i].Weight <= 0 {
			shards[i].Weight = float64(shards[i].Examples)
		}
		total += shards[i].Weight
	}
	return shards, total, nil
}

// shardArgs returns each shard's arguments to the gradient graph (its offset in b, a placeholder
// of b's size, its inputs; the masks come after, from hostMasks) and their shape keys without
// masks, which the dropouts' draws are recorded by; it checks that the shards cover b.
func (s *shardedStepper) shardArgs(b Batch, shards []Batch) (args [][]any, baseKeys []string, err error) {
	s.dataInputs = len(shards[0].Inputs)
	args = make([][]any, len(shards))
	baseKeys = make([]string, len(shards))
	placeholder := make([]uint8, b.Examples)
	offset := 0
	for i, sh := range shards {
		if len(sh.Inputs) != s.dataInputs {
			return nil, nil, fmt.Errorf("training: shard %d has %d inputs, shard 0 has %d", i, len(sh.Inputs), s.dataInputs)
		}
		args[i] = append([]any{int32(offset), placeholder}, sh.Inputs...)
		offset += sh.Examples
		baseKeys[i] = shapeKey(args[i])
	}
	if offset != b.Examples {
		return nil, nil, fmt.Errorf("training: Split returned shards of %d examples in all, the batch has %d", offset, b.Examples)
	}
	return args, baseKeys, nil
}

// runShards calls the gradient graph on each shard's args, concurrently once every shard's shapes
// have been compiled; the first call of new shapes builds a graph, and records its dropouts' draws
// unless hostMasks (the masks were made on the host). The masks go to acc.owned.
func (s *shardedStepper) runShards(args [][]any, baseKeys []string, hostMasks bool, acc *stepAcc) []shardResult {
	results := make([]shardResult, len(args))
	keys := make([]string, len(args)) // the shard graphs' input shapes, masks included
	compiled := true
	for i := range args {
		keys[i] = shapeKey(args[i])
		compiled = compiled && s.seen[keys[i]]
		for _, m := range args[i][2+s.dataInputs:] {
			acc.owned = append(acc.owned, m.(*tensors.Tensor))
		}
	}
	run := func(i int) {
		results[i].outs, results[i].err = s.gradExec.Call(args[i]...)
	}
	if s.concurrent && compiled {
		var wg sync.WaitGroup
		for i := 1; i < len(args); i++ {
			wg.Go(func() { run(i) })
		}
		run(0)
		wg.Wait()
		return results
	}
	// New shapes build graphs (and maybe variables) in the store: one at a time.
	for i := range args {
		s.lastDraws = nil
		run(i)
		s.seen[keys[i]] = true
		if !hostMasks && s.lastDraws != nil && results[i].err == nil {
			s.draws[baseKeys[i]] = s.lastDraws
		}
	}
	return results
}

// hostMasks appends to each shard's args the keep masks of its dropouts, made on the host from the
// store's RNG state, when every shard's graph has been built once (its draws are recorded); it
// returns the RNG state after the draws and whether it did.
func (s *shardedStepper) hostMasks(shards []Batch, baseKeys []string, args [][]any) (state [3]uint64, ok bool, err error) {
	var draws []layers.DropoutDraw
	for i, key := range baseKeys {
		d, known := s.draws[key]
		if !known {
			return state, false, nil
		}
		if i == 0 {
			draws = d
		}
	}
	if len(draws) == 0 {
		return state, false, nil // nothing drawn: the graph is the same
	}
	v, err := s.o.Store.GetVariable(rngPath).Value()
	if err != nil {
		return state, false, fmt.Errorf("training: RNG state: %w", err)
	}
	flat := tensors.MustCopyFlatData[uint64](v)
	if len(flat) != 3 {
		return state, false, fmt.Errorf("training: RNG state has %d values, want 3", len(flat))
	}
	if len(s.maskBuf) < len(draws) {
		s.maskBuf = append(s.maskBuf, make([][]float32, len(draws)-len(s.maskBuf))...)
	}
	masks := s.maskBuf[:len(draws)]
	for j, d := range draws {
		n := 1
		for _, dim := range d.Dims {
			n *= dim
		}
		if cap(masks[j]) < n {
			masks[j] = make([]float32, n)
		}
		masks[j] = masks[j][:n]
	}
	state, err = layers.FillDropoutKeepMasks([3]uint64(flat), draws, masks)
	if err != nil {
		return state, false, err
	}
	made := make([][]any, len(shards)) // the shards' masks, appended to args once all are made
	release := func() {
		for _, ts := range made {
			for _, t := range ts {
				_ = t.(*tensors.Tensor).FinalizeAll()
			}
		}
	}
	offset := 0
	for i, sh := range shards {
		for j, d := range draws {
			rowSize := len(masks[j]) / d.Dims[0]
			dims := append([]int{sh.Examples}, d.Dims[1:]...)
			t, err := tensors.FromShapeForBackend(s.o.Backend, 0, shapes.Make(dtypes.Float32, dims...))
			if err != nil {
				release()
				return state, false, fmt.Errorf("training: dropout mask: %w", err)
			}
			made[i] = append(made[i], t)
			if err := t.MutableFlatData(func(f any) {
				copy(f.([]float32), masks[j][offset*rowSize:(offset+sh.Examples)*rowSize])
			}); err != nil {
				release()
				return state, false, fmt.Errorf("training: dropout mask: %w", err)
			}
		}
		offset += sh.Examples
	}
	for i := range shards {
		args[i] = append(args[i], made[i]...)
	}
	return state, true, nil
}

// apply combines the gradient sets, clips and applies AdamW: on the host when the backend shares
// its buffers with Go (hostAdamW), else with the update graph.
func (s *shardedStepper) apply(lr float64, coefs []float32, sets []any) error {
	if s.host == nil && !s.noHost && canUpdateOnHost(s.o, s.vars) {
		var err error
		if s.host, err = newHostAdamW(s.o, s.vars); err != nil {
			return err
		}
	}
	if s.host == nil {
		s.noHost = true
		outs, err := s.applyExec.Call(append([]any{float32(lr), coefs}, sets...)...)
		if err != nil {
			return err
		}
		for _, t := range outs {
			_ = t.FinalizeAll()
		}
		return nil
	}
	ts := make([]*tensors.Tensor, len(sets))
	for i, t := range sets {
		ts[i] = t.(*tensors.Tensor)
	}
	return s.host.apply(s.vars, lr, coefs, ts)
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
