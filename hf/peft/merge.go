package peft

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// Merger folds an adapter into base weights one tensor at a time, so that a model larger than
// memory can be merged while it is streamed from its files to the output (tracksum-export). Each adapted
// weight becomes W + scale * B @ A, computed in float32 and stored in W's dtype (one rounding);
// each tensor of a module to save replaces the base's tensor of that name, or is added when the
// base has none (a classification head on a causal LM's weights).
//
// PEFT's merge_and_unload rounds the delta to a bf16/f16 W's dtype before adding it in that dtype
// (two roundings); the two results differ by at most one unit in the last place of W's dtype.
type Merger struct {
	scale float32
	pairs map[string]Pair // base key -> its LoRA
	// saved maps a base key to the name of its replacement (present in the base), added a new
	// tensor's name (absent from the base, written in addDType) to itself; read fetches either by
	// that name (from memory for an adapter, from the file for a full fine-tuning).
	saved, added map[string]string
	shapes       map[string]shapes.Shape // of the replacements and additions, by name
	read         func(name string) (*tensors.Tensor, error)
	// addDType is the dtype of the tensors added to the base: the base's most common float dtype.
	addDType dtypes.DType
}

// NewMerger matches the adapter against the base's tensors (name -> shape, e.g. from a
// snapshot's headers): every adapted module must name a base weight of shape [out, in] that fits
// its A [r, in] and B [out, r]. A module is found by its key plus ".weight", or else by the one
// base key that ends with it or that it ends with (so an adapter saved on BertModel,
// "encoder.layer.0...", merges into a BertForPreTraining file, "bert.encoder.layer.0...", and back).
func NewMerger(a *Adapter, base map[string]shapes.Shape) (*Merger, error) {
	pairs, err := a.Pairs()
	if err != nil {
		return nil, err
	}
	m := &Merger{
		scale:    float32(a.Config.Scale()),
		pairs:    map[string]Pair{},
		saved:    map[string]string{},
		added:    map[string]string{},
		shapes:   map[string]shapes.Shape{},
		addDType: commonFloat(base),
	}
	savedTensors := a.Saved()
	m.read = func(name string) (*tensors.Tensor, error) { return savedTensors[name], nil }
	for _, p := range pairs {
		key, err := resolve(base, p.Module+".weight")
		if err != nil {
			return nil, fmt.Errorf("adapter module %s: %w", p.Module, err)
		}
		if key == "" {
			return nil, fmt.Errorf("adapter module %s: the base has no weight %s.weight", p.Module, p.Module)
		}
		w := base[key]
		a, b := p.A.Shape().Dimensions, p.B.Shape().Dimensions
		if w.Rank() != 2 || !isFloat(w.DType) || w.Dimensions[0] != b[0] || w.Dimensions[1] != a[1] {
			return nil, fmt.Errorf("adapter module %s: base weight %s is %s, LoRA A %v and B %v want [%d %d]",
				p.Module, key, w, a, b, b[0], a[1])
		}
		if _, dup := m.pairs[key]; dup {
			return nil, fmt.Errorf("adapter module %s: base weight %s is adapted twice", p.Module, key)
		}
		m.pairs[key] = p
	}
	for name, t := range savedTensors {
		key, err := resolve(base, name)
		if err != nil {
			return nil, fmt.Errorf("adapter tensor %s%s: %w", Prefix, name, err)
		}
		m.shapes[name] = t.Shape()
		if key == "" {
			m.added[name] = name
			continue
		}
		if w := base[key]; !slices.Equal(w.Dimensions, t.Shape().Dimensions) {
			return nil, fmt.Errorf("adapter tensor %s%s: shape %v, base %s is %s", Prefix, name, t.Shape().Dimensions, key, w)
		}
		if _, lora := m.pairs[key]; lora {
			return nil, fmt.Errorf("adapter tensor %s%s: base weight %s has a LoRA too", Prefix, name, key)
		}
		m.saved[key] = name
	}
	return m, nil
}

// NewFullMerger is the Merger of a fully fine-tuned model (lora.rank 0): every tensor of full
// (name -> shape) replaces the base tensor it names (matched as NewMerger matches modules, with the
// same shape), or is added when the base has none (a head). read fetches a tensor of full when it
// is needed, so a file larger than memory can be merged.
func NewFullMerger(full map[string]shapes.Shape, read func(name string) (*tensors.Tensor, error), base map[string]shapes.Shape) (*Merger, error) {
	m := &Merger{pairs: map[string]Pair{}, saved: map[string]string{}, added: map[string]string{},
		shapes: full, read: read, addDType: commonFloat(base)}
	for _, name := range slices.Sorted(maps.Keys(full)) {
		s := full[name]
		key, err := resolve(base, name)
		if err != nil {
			return nil, fmt.Errorf("tensor %s: %w", name, err)
		}
		if !isFloat(s.DType) {
			return nil, fmt.Errorf("tensor %s: dtype %s is not a float", name, s.DType)
		}
		if key == "" {
			m.added[name] = name
			continue
		}
		if w := base[key]; !slices.Equal(w.Dimensions, s.Dimensions) {
			return nil, fmt.Errorf("tensor %s: shape %v, base %s is %s", name, s.Dimensions, key, w)
		}
		if _, dup := m.saved[key]; dup {
			return nil, fmt.Errorf("tensor %s: base weight %s is replaced twice", name, key)
		}
		m.saved[key] = name
	}
	return m, nil
}

// resolve finds the base key of name: name itself, else the single key one of the two ends with
// ("." + the other). "" when none; an error when several match.
func resolve(base map[string]shapes.Shape, name string) (string, error) {
	if _, ok := base[name]; ok {
		return name, nil
	}
	var found []string
	for key := range base {
		if strings.HasSuffix(key, "."+name) || strings.HasSuffix(name, "."+key) {
			found = append(found, key)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	slices.Sort(found)
	return "", fmt.Errorf("matches several base weights (%s)", strings.Join(found, ", "))
}

// commonFloat returns the most frequent float dtype among the base's tensors (float32 when none).
func commonFloat(base map[string]shapes.Shape) dtypes.DType {
	count := map[dtypes.DType]int{}
	for _, s := range base {
		if isFloat(s.DType) {
			count[s.DType]++
		}
	}
	best, n := dtypes.Float32, 0
	for _, dt := range slices.Sorted(maps.Keys(count)) {
		if count[dt] > n {
			best, n = dt, count[dt]
		}
	}
	return best
}

// Changed lists the base keys the merge replaces (adapted or saved), sorted.
func (m *Merger) Changed() []string {
	keys := slices.Collect(maps.Keys(m.pairs))
	keys = append(keys, slices.Collect(maps.Keys(m.saved))...)
	slices.Sort(keys)
	return keys
}

// Shapes returns the merged model's tensors: the base's, plus the added ones.
func (m *Merger) Shapes(base map[string]shapes.Shape) map[string]shapes.Shape {
	out := maps.Clone(base)
	for name := range m.added {
		out[name] = shapes.Make(m.addDType, m.shapes[name].Dimensions...)
	}
	return out
}

// Apply returns the merged value of the base tensor name whose value is w: w itself when the
// adapter does not touch it.
func (m *Merger) Apply(name string, w *tensors.Tensor) (*tensors.Tensor, error) {
	if src, ok := m.added[name]; ok {
		return m.fetch(src, m.addDType)
	}
	if src, ok := m.saved[name]; ok {
		return m.fetch(src, w.DType())
	}
	p, ok := m.pairs[name]
	if !ok {
		return w, nil
	}
	wf, err := toFloat32(w)
	if err != nil {
		return nil, fmt.Errorf("base weight %s: %w", name, err)
	}
	af, err := toFloat32(p.A)
	if err != nil {
		return nil, fmt.Errorf("%s%s%s: %w", Prefix, p.Module, SuffixA, err)
	}
	bf, err := toFloat32(p.B)
	if err != nil {
		return nil, fmt.Errorf("%s%s%s: %w", Prefix, p.Module, SuffixB, err)
	}
	out, in, r := w.Shape().Dimensions[0], w.Shape().Dimensions[1], p.A.Shape().Dimensions[0]
	addDelta(wf, af, bf, out, in, r, m.scale)
	return snapshot.FromFloat32(wf, w.DType(), out, in)
}

// fetch reads the replacement or addition src and converts it to dt.
func (m *Merger) fetch(src string, dt dtypes.DType) (*tensors.Tensor, error) {
	t, err := m.read(src)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", src, err)
	}
	if t == nil || !slices.Equal(t.Shape().Dimensions, m.shapes[src].Dimensions) {
		return nil, fmt.Errorf("tensor %s: missing or not of shape %v", src, m.shapes[src].Dimensions)
	}
	return convert(t, dt)
}

// Added returns the tensors the adapter adds to the base (names absent from it), in the dtype
// Shapes gives them.
func (m *Merger) Added() (map[string]*tensors.Tensor, error) {
	out := map[string]*tensors.Tensor{}
	for name := range m.added {
		t, err := m.Apply(name, nil)
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}

// addDelta adds scale * (B @ A) to w in place: w [out, in], a [r, in], b [out, r], all row-major
// float32. Rows of the output are split among the CPUs. The product is accumulated in float32 in
// k order, then scaled, as torch's (B @ A) * scale.
func addDelta(w, a, b []float32, out, in, r int, scale float32) {
	workers := min(runtime.GOMAXPROCS(0), out)
	var wg sync.WaitGroup
	rowsPer := (out + workers - 1) / workers
	for lo := 0; lo < out; lo += rowsPer {
		hi := min(lo+rowsPer, out)
		wg.Go(func() {
			delta := make([]float32, in)
			for o := lo; o < hi; o++ {
				clear(delta)
				for k := range r {
					bk := b[o*r+k]
					row := a[k*in : (k+1)*in]
					for i, av := range row {
						delta[i] += bk * av
					}
				}
				wr := w[o*in : (o+1)*in]
				for i := range wr {
					wr[i] += delta[i] * scale
				}
			}
		})
	}
	wg.Wait()
}

// Merge returns base with the adapter merged: the adapted weights and the saved tensors replaced,
// the added tensors included, every other tensor shared with base. Convenience over Merger for
// models that fit in memory.
func Merge(base map[string]*tensors.Tensor, a *Adapter) (map[string]*tensors.Tensor, error) {
	specs := map[string]shapes.Shape{}
	for k, t := range base {
		specs[k] = t.Shape()
	}
	m, err := NewMerger(a, specs)
	if err != nil {
		return nil, err
	}
	out := maps.Clone(base)
	for _, k := range m.Changed() {
		if out[k], err = m.Apply(k, base[k]); err != nil {
			return nil, err
		}
	}
	added, err := m.Added()
	if err != nil {
		return nil, err
	}
	maps.Copy(out, added)
	return out, nil
}

// toFloat32 returns a copy of a float tensor's values as float32.
func toFloat32(t *tensors.Tensor) ([]float32, error) {
	if !isFloat(t.DType()) {
		return nil, fmt.Errorf("dtype %s is not a float", t.DType())
	}
	return tensors.CopyFlatData[float32](snapshot.ToFloat32(t))
}

// convert returns t in dtype dt (t itself when it already is).
func convert(t *tensors.Tensor, dt dtypes.DType) (*tensors.Tensor, error) {
	if t.DType() == dt {
		return t, nil
	}
	v, err := toFloat32(t)
	if err != nil {
		return nil, err
	}
	return snapshot.FromFloat32(v, dt, t.Shape().Dimensions...)
}
