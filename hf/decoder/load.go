package decoder

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/decoder/layout"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/quant"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// projection is one linear module of a layer (hf/decoder/layout).
type projection = layout.Projection

// projection returns layer i's module named module ("q_proj", "qkv_proj", ...).
func (c Config) projection(i int, module string) projection {
	for _, p := range c.Projections(i) {
		if p.Module == module {
			return p
		}
	}
	panic(fmt.Sprintf("decoder: %s has no %s", c.ModelType, module))
}

// packed returns the weights QuantNF4 holds as codes: the layers' projections whose size is a
// multiple of the block.
func (c Config) packed() map[string]bool {
	out := map[string]bool{}
	for i := range c.Layers {
		for _, p := range c.Projections(i) {
			if (p.Out*p.In)%quant.BlockSize == 0 {
				out[p.Key+".weight"] = true
			}
		}
	}
	return out
}

func load(ctx context.Context, s *snapshot.Snapshot, store *gomlxmodel.Store, lora LoRA, seed int64, quantization string) (*Model, error) {
	cfg, err := configOf(s)
	if err != nil {
		return nil, err
	}
	if err := checkLoRA(cfg, lora, quantization); err != nil {
		return nil, err
	}
	want := cfg.Tensors()
	if err := checkHeaders(s, cfg, want); err != nil {
		return nil, err
	}
	pack := map[string]bool{}
	if quantization == QuantNF4 {
		pack = cfg.packed()
	}
	ts, err := s.Tensors(ctx, func(name string) bool { _, ok := want[name]; return ok && !pack[name] })
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, lora: lora, st: store, base: map[string]*gomlxmodel.Variable{},
		a: map[string]*gomlxmodel.Variable{}, b: map[string]*gomlxmodel.Variable{}, packed: map[string]packedWeight{}}
	if err := m.loadPacked(ctx, s, pack); err != nil {
		return nil, err
	}
	frozen := lora.Rank > 0
	for _, name := range sortedKeys(want) {
		if pack[name] {
			continue
		}
		t := ts[name]
		// Float64 is never worth keeping; half types stay as stored when frozen (half the memory;
		// the graph converts them to float32), and become float32 when trained, since the
		// optimizer keeps float32 moments and updates.
		if t.DType() == dtypes.Float64 || (!frozen && t.DType() != dtypes.Float32) {
			t = snapshot.ToFloat32(t)
		}
		v, err := SetVariable(store, BaseScope+"/"+name, t, true)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %s: %v", s.Dir, name, err)
		}
		v.SetTrainable(!frozen)
		m.base[name] = v
	}
	if lora.Rank > 0 {
		if err := m.newAdapters(seed); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// checkLoRA refuses adapter and quantization settings that cannot apply to cfg.
func checkLoRA(cfg Config, lora LoRA, quantization string) error {
	if lora.Rank < 0 {
		return fmt.Errorf("lora rank %d: want 0 (full fine-tuning) or more", lora.Rank)
	}
	switch quantization {
	case QuantNone, "":
	case QuantNF4:
		if lora.Rank == 0 {
			return fmt.Errorf("quantization nf4 needs a frozen base (lora rank > 0): NF4 codes cannot be trained")
		}
	default:
		return fmt.Errorf("quantization %q: want none or nf4", quantization)
	}
	for _, t := range lora.TargetModules {
		if !slices.Contains(cfg.LoRATargets, t) {
			return fmt.Errorf("lora target module %q is not a %s layer: set tracker.lora.target_modules or summarizer.lora.target_modules to some of %v", t, cfg.ModelType, cfg.LoRATargets)
		}
	}
	return nil
}

// checkHeaders checks that s holds every tensor of want with its shape and a float dtype. Shapes
// and dtypes come from the headers: a wrong file fails before any weight is read.
func checkHeaders(s *snapshot.Snapshot, cfg Config, want map[string][]int) error {
	for _, name := range sortedKeys(want) {
		shape, ok := s.Shape(name)
		if !ok {
			return fmt.Errorf("snapshot %s: %w %s (model_type %s, %d layers)", s.Dir, snapshot.ErrMissingTensor, name, cfg.ModelType, cfg.Layers)
		}
		if err := snapshot.CheckShape(name, shape, want[name]...); err != nil {
			return fmt.Errorf("snapshot %s: %s: %w", s.Dir, s.FileOf(name), err)
		}
		switch shape.DType {
		case dtypes.Float32, dtypes.BFloat16, dtypes.Float16, dtypes.Float64:
		default:
			return fmt.Errorf("snapshot %s: %s: tensor %s has dtype %s, want a float type", s.Dir, s.FileOf(name), name, shape.DType)
		}
	}
	return nil
}

// loadPacked reads the weights to hold as NF4 (pack) into m.packed. The projections to pack are
// read a layer at a time: a dense base quantized on load never holds more than one layer's
// projections unpacked.
func (m *Model) loadPacked(ctx context.Context, s *snapshot.Snapshot, pack map[string]bool) error {
	for i := range m.cfg.Layers {
		if len(pack) == 0 {
			break
		}
		inLayer := func(name string) bool { return pack[name] && strings.HasPrefix(name, layout.LayerKey(i)+".") }
		dense, err := s.Tensors(ctx, func(name string) bool { return inLayer(name) && !s.IsQuantized(name) })
		if err != nil {
			return err
		}
		codes, err := s.PackedNF4(ctx, inLayer)
		if err != nil {
			return err
		}
		for _, p := range m.cfg.Projections(i) {
			name := p.Key + ".weight"
			if !pack[name] {
				continue
			}
			if m.packed[name], err = m.setPacked(s, name, dense[name], codes[name]); err != nil {
				return err
			}
		}
	}
	return nil
}

// newAdapters creates the adapters of every targeted projection (NewLoRA), drawn from the seed's
// stream layer by layer.
func (m *Model) newAdapters(seed int64) error {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x10ba))
	for i := range m.cfg.Layers {
		for _, p := range m.cfg.Projections(i) {
			if !m.cfg.targeted(m.lora, p.Module) {
				continue
			}
			va, vb, err := NewLoRA(m.st, LoRAScope, p.Key, m.lora.Rank, p.In, p.Out, rng)
			if err != nil {
				return err
			}
			m.a[p.Key], m.b[p.Key] = va, vb
		}
	}
	return nil
}

// NewLoRA creates the trainable float32 adapter of the linear layer module (its Hugging Face key
// without ".weight") of shape [out, in]: scope/module.lora_A.weight [rank, in] drawn as PEFT's
// kaiming_uniform_(a=sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)), from rng, and
// scope/module.lora_B.weight [out, rank] zero, so that the adapted layer starts as the base. In a
// store restored from a checkpoint the existing values are kept. hf/encoder adapts its layers
// with it too.
func NewLoRA(store *gomlxmodel.Store, scope, module string, rank, in, out int, rng *rand.Rand) (a, b *gomlxmodel.Variable, err error) {
	bound := 1 / math.Sqrt(float64(in))
	aVals := make([]float32, rank*in)
	for j := range aVals {
		aVals[j] = float32((2*rng.Float64() - 1) * bound)
	}
	if a, err = SetVariable(store, scope+"/"+module+peft.SuffixA, tensors.FromFlatDataAndDimensions(aVals, rank, in), false); err != nil {
		return nil, nil, err
	}
	if b, err = SetVariable(store, scope+"/"+module+peft.SuffixB, tensors.FromShape(shapes.Make(dtypes.Float32, out, rank)), false); err != nil {
		return nil, nil, err
	}
	a.SetTrainable(true)
	b.SetTrainable(true)
	return a, b, nil
}

// SetVariable creates the variable at path with value t. An existing variable (a store restored
// from a checkpoint before Load) must have the same shape; it takes t when overwrite is set (base
// weights) and keeps its value otherwise (trained adapters and heads).
func SetVariable(store *gomlxmodel.Store, path string, t *tensors.Tensor, overwrite bool) (*gomlxmodel.Variable, error) {
	if v := store.GetVariable(path); v != nil {
		if !v.Shape().Equal(t.Shape()) {
			return nil, fmt.Errorf("variable %s exists with shape %s, want %s", path, v.Shape(), t.Shape())
		}
		if overwrite {
			if err := v.SetValue(t); err != nil {
				return nil, fmt.Errorf("variable %s: %w", path, err)
			}
		}
		return v, nil
	}
	v, err := store.CreateVariable(path, t)
	if err != nil {
		return nil, fmt.Errorf("variable %s: %w", path, err)
	}
	return v, nil
}

func (m *Model) loraVariables() map[string]*gomlxmodel.Variable {
	out := map[string]*gomlxmodel.Variable{}
	for k, v := range m.a {
		out[peft.Prefix+k+peft.SuffixA] = v
	}
	for k, v := range m.b {
		out[peft.Prefix+k+peft.SuffixB] = v
	}
	return out
}
