package training

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
)

// The update of a sharded step on the host (backends with shared buffers: the pure-Go backend).
//
// As a graph, the update (combine the shards' gradients, clip to the global norm, AdamW) is about
// 17 elementwise passes over every parameter, each a separate op of the Go backend at ~1 ns per
// element, and it runs on one core between the steps' gradient graphs: with the 1M-parameter
// token table of the tracker it was ~13% of the CPU time and ~25% of the wall time of a 2-shard
// step. Here it is two fused loops (sum of squares, then combine + clip + AdamW in one pass),
// split over the cores, writing the variables in place: the store holds them in buffers shared
// with the backend, so the next gradient graphs read the new values without a copy.
//
// The arithmetic is the graph's (Options.update and adamW), in float32 in the same order, except
// the global norm, summed here in float64: results agree to float rounding. The optimizer state
// lives in the same store variables (/optimizer/m/..., /optimizer/v/..., /optimizer/step), so
// saving and resuming are unchanged.

// hostAdamW holds the per-variable state of the host update.
type hostAdamW struct {
	o       *Options
	m, v    []*gomlxmodel.Variable // first and second moments, in the order of the trainable variables
	step    *gomlxmodel.Variable
	workers int
}

// canUpdateOnHost reports whether the variables can be updated on the host: float32 only, and a
// backend whose buffers are host memory shared with Go.
func canUpdateOnHost(o *Options, vars []*gomlxmodel.Variable) bool {
	if !o.Backend.HasSharedBuffers() {
		return false
	}
	for _, v := range vars {
		if v.DType() != dtypes.Float32 {
			return false
		}
	}
	return true
}

// optimizerVariable returns the optimizer variable at path, created with zeros of shape like when
// missing (a new run; a resumed one loaded it).
func optimizerVariable(store *gomlxmodel.Store, path string, like *gomlxmodel.Variable) (*gomlxmodel.Variable, error) {
	if v := store.GetVariable(path); v != nil {
		return v, nil
	}
	v, err := store.CreateVariable(path, tensors.FromShape(like.Shape()))
	if err != nil {
		return nil, err
	}
	v.SetTrainable(false)
	return v, nil
}

func newHostAdamW(o *Options, vars []*gomlxmodel.Variable) (*hostAdamW, error) {
	h := &hostAdamW{o: o, workers: max(1, min(runtime.GOMAXPROCS(0), 8))}
	for _, v := range vars {
		name := escape(v.Path())
		m, err := optimizerVariable(o.Store, gomlxmodel.JoinPath(OptimizerScope, "m", name), v)
		if err != nil {
			return nil, fmt.Errorf("training: optimizer state: %w", err)
		}
		s, err := optimizerVariable(o.Store, gomlxmodel.JoinPath(OptimizerScope, "v", name), v)
		if err != nil {
			return nil, fmt.Errorf("training: optimizer state: %w", err)
		}
		h.m, h.v = append(h.m, m), append(h.v, s)
	}
	step := gomlxmodel.JoinPath(OptimizerScope, "step")
	if h.step = o.Store.GetVariable(step); h.step == nil {
		var err error
		if h.step, err = o.Store.CreateVariable(step, tensors.FromValue(float32(0))); err != nil {
			return nil, fmt.Errorf("training: optimizer state: %w", err)
		}
		h.step.SetTrainable(false)
	}
	return h, nil
}

// sharedFlat returns the float32 data of v, first moving its value into a buffer shared with the
// backend when it is not one already (once per variable, or after something replaced its value,
// e.g. loading a checkpoint), so that writes reach the next executions without a transfer.
func (h *hostAdamW) sharedFlat(v *gomlxmodel.Variable) ([]float32, error) {
	t, err := v.Value()
	if err != nil {
		return nil, err
	}
	if !t.IsShared() {
		shared, err := tensors.FromShapeForBackend(h.o.Backend, 0, t.Shape())
		if err != nil {
			return nil, err
		}
		if !shared.IsShared() {
			return nil, fmt.Errorf("backend %s gave no shared buffer", h.o.Backend.Name())
		}
		var cerr error
		if err := t.ConstFlatData(func(src any) {
			cerr = shared.MutableFlatData(func(dst any) { copy(dst.([]float32), src.([]float32)) })
		}); err != nil {
			return nil, err
		}
		if cerr != nil {
			return nil, cerr
		}
		if err := v.SetValue(shared); err != nil {
			return nil, err
		}
		t = shared
	}
	var flat []float32
	err = t.MutableFlatData(func(f any) { flat = f.([]float32) })
	return flat, err
}

// localFlat returns the float32 data of an optimizer variable, which only the host reads.
func localFlat(v *gomlxmodel.Variable) ([]float32, error) {
	t, err := v.Value()
	if err != nil {
		return nil, err
	}
	var flat []float32
	err = t.MutableFlatData(func(f any) { flat = f.([]float32) })
	return flat, err
}

// apply runs one optimizer step: the gradient of variable i is Σ_k coefs[k] · sets[k*nv+i], with
// nv = len(vars).
func (h *hostAdamW) apply(vars []*gomlxmodel.Variable, lr float64, coefs []float32, sets []*tensors.Tensor) error {
	d, err := h.flats(vars, coefs, sets)
	if err != nil {
		return err
	}
	scale := h.clipScale(d)

	// Pass 2: combine, clip and apply AdamW (the constants as adamW computes them).
	loop := h.o.Loop
	stepT, err := h.step.Value()
	if err != nil {
		return err
	}
	t := tensors.ToScalar[float32](stepT) + 1
	b1, b2 := float32(loop.Beta1), float32(loop.Beta2)
	lr32 := float32(lr)
	corr1 := 1 - float32(math.Pow(float64(b1), float64(t)))
	corr2 := 1 - float32(math.Pow(float64(b2), float64(t)))
	sqrtCorr2 := float32(math.Sqrt(float64(corr2)))
	stepSize := lr32 * sqrtCorr2 / corr1
	shrink := 1 - lr32*float32(loop.WeightDecay)
	eps := sqrtCorr2 * float32(loop.Epsilon)
	oneMinusB1, oneMinusB2 := float32(1-loop.Beta1), float32(1-loop.Beta2)
	h.run(func(part int) {
		buf := make([]float32, 0, 4096)
		for i, v := range vars {
			wShrink := float32(1)
			if loop.WeightDecay > 0 && v.Shape().Rank() >= 2 {
				wShrink = shrink
			}
			lo, hi := h.part(len(d.w[i]), part)
			for ; lo < hi; lo += cap(buf) {
				end := min(hi, lo+cap(buf))
				c := combine(buf, d.g, d.coefs, d.nv, i, lo, end, scale)
				wi, mi, si := d.w[i][lo:end], d.m[i][lo:end], d.s[i][lo:end]
				if !adamSIMD(c, wi, mi, si, b1, b2, oneMinusB1, oneMinusB2, wShrink, eps, stepSize) {
					adamScalar(c, wi, mi, si, b1, b2, oneMinusB1, oneMinusB2, wShrink, eps, stepSize)
				}
			}
		}
	})
	return h.step.SetValue(tensors.FromValue(t))
}

// adamData is one step's host view of the float32 data: the variables w, the moments m and s,
// the shards' gradients g (shard k's of variable i at k*nv+i) and their coefficients.
type adamData struct {
	w, m, s, g [][]float32
	coefs      []float32
	nv         int
}

// flats reads the data of one step (adamData), checking that every variable has one gradient
// per shard, of its size.
func (h *hostAdamW) flats(vars []*gomlxmodel.Variable, coefs []float32, sets []*tensors.Tensor) (*adamData, error) {
	nv := len(vars)
	k := len(coefs)
	if len(sets) != k*nv {
		return nil, fmt.Errorf("training: %d gradients for %d variables x %d shards", len(sets), nv, k)
	}
	d := &adamData{
		w: make([][]float32, nv), m: make([][]float32, nv), s: make([][]float32, nv),
		g: make([][]float32, len(sets)), coefs: coefs, nv: nv,
	}
	for i, v := range vars {
		var err error
		if d.w[i], err = h.sharedFlat(v); err != nil {
			return nil, fmt.Errorf("training: variable %s: %w", v.Path(), err)
		}
		if d.m[i], err = localFlat(h.m[i]); err != nil {
			return nil, fmt.Errorf("training: optimizer state of %s: %w", v.Path(), err)
		}
		if d.s[i], err = localFlat(h.v[i]); err != nil {
			return nil, fmt.Errorf("training: optimizer state of %s: %w", v.Path(), err)
		}
	}
	for j, t := range sets {
		if err := t.ConstFlatData(func(f any) { d.g[j] = f.([]float32) }); err != nil {
			return nil, fmt.Errorf("training: gradient: %w", err)
		}
		if len(d.g[j]) != len(d.w[j%nv]) {
			return nil, fmt.Errorf("training: gradient of %s has %d values, want %d", vars[j%nv].Path(), len(d.g[j]), len(d.w[j%nv]))
		}
	}
	return d, nil
}

// part is the slice [lo, hi) of n values that worker part takes: each worker takes the same
// slice of every variable, so the work is even whatever the sizes.
func (h *hostAdamW) part(n, part int) (int, int) {
	return n * part / h.workers, n * (part + 1) / h.workers
}

// run calls fn for every worker's part, concurrently, and waits for them.
func (h *hostAdamW) run(fn func(part int)) {
	var wg sync.WaitGroup
	for p := 1; p < h.workers; p++ {
		wg.Go(func() { fn(p) })
	}
	fn(0)
	wg.Wait()
}

// clipScale is pass 1 of a step: the factor clipping the combined gradient to the loop's
// ClipNorm (1 without one), from its squared global norm summed per worker part, then in order.
func (h *hostAdamW) clipScale(d *adamData) float32 {
	sums := make([]float64, h.workers)
	h.run(func(part int) {
		var sum float64
		buf := make([]float32, 0, 4096)
		for i := range d.nv {
			lo, hi := h.part(len(d.w[i]), part)
			for ; lo < hi; lo += cap(buf) {
				c := combine(buf, d.g, d.coefs, d.nv, i, lo, min(hi, lo+cap(buf)), 1)
				part32, ok := sumSquaresSIMD(c)
				if !ok {
					for _, x := range c {
						part32 += x * x
					}
				}
				sum += float64(part32)
			}
		}
		sums[part] = sum
	})
	var sum float64
	for _, x := range sums {
		sum += x
	}
	norm := float32(math.Sqrt(sum))
	scale := float32(1)
	if loop := h.o.Loop; loop.ClipNorm > 0 {
		scale = min(1, float32(loop.ClipNorm)/(norm+1e-6))
	}
	return scale
}

// adamScalar is the AdamW step of one chunk: c the clipped combined gradient, w the variable, m
// and s the moments (all updated in place).
func adamScalar(c, w, m, s []float32, b1, b2, oneMinusB1, oneMinusB2, wShrink, eps, stepSize float32) {
	w, m, s = w[:len(c)], m[:len(c)], s[:len(c)]
	for j, cj := range c {
		mj := m[j]*b1 + cj*oneMinusB1
		sj := s[j]*b2 + (cj*cj)*oneMinusB2
		m[j], s[j] = mj, sj
		// Multiplying by 1 when there is no decay is exact.
		w[j] = w[j]*wShrink - mj/(float32(math.Sqrt(float64(sj)))+eps)*stepSize
	}
}

// combine writes into buf the elements lo..end of the combined gradient of variable i, Σ_k coefs[k]
// · g[k*nv+i], times scale (the products and sums in the order of the update graph), and returns
// them.
func combine(buf []float32, g [][]float32, coefs []float32, nv, i, lo, end int, scale float32) []float32 {
	out := buf[:end-lo]
	g0 := g[i][lo:end]
	g0 = g0[:len(out)]
	c0 := coefs[0]
	if len(coefs) == 2 {
		g1 := g[nv+i][lo:end]
		g1 = g1[:len(out)]
		c1 := coefs[1]
		if combine2SIMD(out, g0, g1, c0, c1, scale) {
			return out
		}
		for j := range out {
			out[j] = (g0[j]*c0 + g1[j]*c1) * scale
		}
		return out
	}
	for j := range out {
		out[j] = g0[j] * c0
	}
	for sh := 1; sh < len(coefs); sh++ {
		gs := g[sh*nv+i][lo:end]
		gs = gs[:len(out)]
		cs := coefs[sh]
		for j := range out {
			out[j] += gs[j] * cs
		}
	}
	if scale != 1 {
		for j := range out {
			out[j] *= scale
		}
	}
	return out
}
