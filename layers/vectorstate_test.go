package layers

import (
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/model"
)

// TestCleanVectorStateIsExact checks that CleanVectorState changes neither values nor gradients:
// the copy it adds on the pure-Go backend is exact, so softmaxes through it stay bit for bit.
func TestCleanVectorStateIsExact(t *testing.T) {
	backend, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dims := range [][]int{{3, 5}, {7, 2000}, {2, 4, 300}} {
		x, r := randomTensor(rng, dims...), randomTensor(rng, dims...)
		run := func(clean bool) (*tensors.Tensor, *tensors.Tensor) {
			out := MustExecOnceN(backend, func(x, r *Node) []*Node {
				y := x
				if clean {
					y = CleanVectorState(x)
				}
				y = SoftmaxLast(y)
				return []*Node{y, Gradient(ReduceAllSum(Mul(y, r)), x)[0]}
			}, x, r)
			return out[0], out[1]
		}
		y0, g0 := run(false)
		y1, g1 := run(true)
		if !y0.Equal(y1) || !g0.Equal(g1) {
			t.Errorf("%v: values or gradients differ through CleanVectorState", dims)
		}
	}
}

// BenchmarkSoftmaxAfterProduct times a softmax over [7, 2000] scores computed by a product (the
// summarizer's output layer at a decoding step), with and without CleanVectorState between the two,
// and the product alone; ns/value is per score:
//
//	GOEXPERIMENT=simd go test ./layers -run '^$' -bench SoftmaxAfterProduct
func BenchmarkSoftmaxAfterProduct(b *testing.B) {
	backend, _, err := model.Backend()
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	s, w := randomTensor(rng, 7, 256), randomTensor(rng, 256, 2000)
	for _, c := range []struct {
		name string
		f    func(x *Node) *Node
	}{
		{"product", func(x *Node) *Node { return x }},
		{"product+softmax", func(x *Node) *Node { return BackendFusedSoftmax(x, 1) }},
		{"product+clean+softmax", func(x *Node) *Node { return BackendFusedSoftmax(CleanVectorState(x), 1) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := MustNewExec(backend, func(s, w *Node) *Node { return c.f(Product(s, w)) })
			e.MustExec(s, w)[0].FinalizeAll()
			b.ResetTimer()
			for range b.N {
				e.MustExec(s, w)[0].FinalizeAll()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*7*2000), "ns/value")
		})
	}
}
