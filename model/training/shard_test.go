package training

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/layers"
)

// tensorSplit converts the toy task's Go-slice inputs to tensors, then splits the rows.
func tensorSplit(b Batch, n int) ([]Batch, error) {
	tb := b
	tb.Inputs = make([]any, len(b.Inputs))
	for i, in := range b.Inputs {
		x, err := tensors.FromAnyValue(in)
		if err != nil {
			return nil, err
		}
		tb.Inputs[i] = x
	}
	return SplitRows(tb, n, -1)
}

// toySteps runs the first steps of the toy task's first epoch and returns the variables.
func toySteps(t *testing.T, shards int, dropout, concurrent bool) map[string][]float32 {
	t.Helper()
	return toyStepsUpdate(t, shards, dropout, concurrent, false)
}

// toyStepsUpdate is toySteps, with the update of sharded steps forced to the graph (graphUpdate)
// instead of the host (on backends that share buffers, checked).
func toyStepsUpdate(t *testing.T, shards int, dropout, concurrent, graphUpdate bool) map[string][]float32 {
	t.Helper()
	o, store := toyOptions(t, t.TempDir(), toyLoop())
	o.Shards, o.Split = shards, tensorSplit
	if dropout {
		o.Loss = func(scope *gomlxmodel.Scope, in []*graph.Node) *graph.Node {
			return bce(logitsGraph(scope, layers.Dropout(scope, in[0], 0.3)), in[1])
		}
	}
	if err := store.SetRNGStateFromSeed(o.Seed); err != nil {
		t.Fatal(err)
	}
	st, err := NewStepper(o)
	if err != nil {
		t.Fatal(err)
	}
	if st.sharded != nil {
		st.sharded.concurrent = concurrent
		st.sharded.noHost = graphUpdate
	}
	batches, err := o.Batches(0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(batches) && i < 8; i += 2 {
		if _, err := st.Step(batches[i:i+2], 0.1); err != nil {
			t.Fatal(err)
		}
	}
	if st.sharded != nil && !graphUpdate && o.Backend.HasSharedBuffers() && st.sharded.host == nil {
		t.Fatal("the sharded update did not run on the host")
	}
	return variables(t, store)
}

// TestShardedStep checks that sharded steps (with grad accumulation 2) end with the variables of
// unsharded steps up to float rounding, dropout included, and that running the shards concurrently
// or one after the other gives the same bits.
func TestShardedStep(t *testing.T) {
	full := toySteps(t, 1, false, false)
	fullDropout := toySteps(t, 1, true, false)
	tests := []struct {
		desc       string
		shards     int
		dropout    bool
		concurrent bool
		want       map[string][]float32
		tol        float64
	}{
		{desc: "2 shards equal the full batch", shards: 2, concurrent: true, want: full, tol: 1e-5},
		{desc: "3 uneven shards equal the full batch", shards: 3, concurrent: true, want: full, tol: 1e-5},
		{desc: "2 shards one after the other", shards: 2, want: full, tol: 1e-5},
		{desc: "dropout: 2 shards equal the full batch", shards: 2, dropout: true, concurrent: true, want: fullDropout, tol: 1e-5},
		{desc: "dropout: 3 uneven shards equal the full batch", shards: 3, dropout: true, concurrent: true, want: fullDropout, tol: 1e-5},
		{desc: "dropout: concurrent and sequential shards are bit-identical", shards: 2, dropout: true, want: toySteps(t, 2, true, true), tol: 0},
		{desc: "dropout: update on the host equals the update graph", shards: 2, dropout: true, concurrent: true, want: toyStepsUpdate(t, 2, true, true, true), tol: 1e-6},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got := toySteps(t, tc.shards, tc.dropout, tc.concurrent)
			compareVars(t, got, tc.want, tc.tol)
		})
	}
	t.Run("dropout changes the result", func(t *testing.T) {
		for name, w := range full {
			for i := range w {
				if fullDropout[name][i] != w[i] {
					return
				}
			}
		}
		t.Error("dropout changed nothing")
	})
}

func compareVars(t *testing.T, got, want map[string][]float32, tol float64) {
	t.Helper()
	for name, w := range want {
		if strings.Contains(name, "/accum/") {
			continue // gradient accumulators exist only without shards
		}
		g, ok := got[name]
		if !ok || len(g) != len(w) {
			t.Fatalf("%s: %d values, want %d", name, len(g), len(w))
		}
		for i := range w {
			if math.Abs(float64(g[i]-w[i])) > tol {
				t.Fatalf("%s[%d] = %v, want %v (tolerance %g)", name, i, g[i], w[i], tol)
			}
		}
	}
}

func TestSplitRows(t *testing.T) {
	ids := tensors.FromValue([][]int32{{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}})
	w := tensors.FromValue([]float32{1, 3, 1, 1, 2})
	tests := []struct {
		desc    string
		n       int
		rows    []int
		weights []float64
	}{
		{desc: "two shards, first one larger", n: 2, rows: []int{3, 2}, weights: []float64{5, 3}},
		{desc: "more shards than rows", n: 9, rows: []int{1, 1, 1, 1, 1}, weights: []float64{1, 3, 1, 1, 2}},
		{desc: "one shard", n: 1, rows: []int{5}, weights: []float64{8}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			shards, err := SplitRows(Batch{Inputs: []any{ids, w}, Examples: 5, Tokens: 11}, tc.n, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(shards) != len(tc.rows) {
				t.Fatalf("%d shards, want %d", len(shards), len(tc.rows))
			}
			next, tokens := int32(1), 0
			for i, s := range shards {
				got := tensors.MustCopyFlatData[int32](s.Inputs[0].(*tensors.Tensor))
				if s.Examples != tc.rows[i] || len(got) != 2*tc.rows[i] || s.Weight != tc.weights[i] {
					t.Errorf("shard %d: %d examples, ids %v, weight %v; want %d rows, weight %v", i, s.Examples, got, s.Weight, tc.rows[i], tc.weights[i])
				}
				for _, id := range got {
					if id != next {
						t.Errorf("shard %d: ids %v, want consecutive from %d", i, got, next)
						break
					}
					next++
				}
				tokens += s.Tokens
			}
			if tokens != 11 {
				t.Errorf("tokens sum to %d, want 11", tokens)
			}
		})
	}
	if _, err := SplitRows(Batch{Inputs: []any{ids, tensors.FromValue([]float32{1})}}, 2, -1); err == nil {
		t.Error("inputs with different rows: no error")
	}
	if _, err := SplitRows(Batch{Inputs: []any{[]int{1, 2}}}, 2, -1); err == nil {
		t.Error("Go slice input: no error")
	}
}
