package decoder

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// ErrMissingTensor marks a weight the config requires that the snapshot lacks.
var ErrMissingTensor = errors.New("missing tensor")

// projection is one linear module of a layer: its Hugging Face key prefix (without ".weight"),
// module name (the LoRA target name), shape [out, in] and whether it has a bias.
type projection struct {
	key     string
	module  string
	out, in int
	bias    bool
}

// layerKey returns the key prefix of layer i.
func layerKey(i int) string { return fmt.Sprintf("model.layers.%d", i) }

// projections lists the linear modules of layer i, in a fixed order.
func (c Config) projections(i int) []projection {
	p := layerKey(i)
	q, kv := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	return []projection{
		{p + ".self_attn.q_proj", "q_proj", q, c.Hidden, c.AttentionBias},
		{p + ".self_attn.k_proj", "k_proj", kv, c.Hidden, c.AttentionBias},
		{p + ".self_attn.v_proj", "v_proj", kv, c.Hidden, c.AttentionBias},
		{p + ".self_attn.o_proj", "o_proj", c.Hidden, q, c.OProjBias},
		{p + ".mlp.gate_proj", "gate_proj", c.Intermediate, c.Hidden, c.MLPBias},
		{p + ".mlp.up_proj", "up_proj", c.Intermediate, c.Hidden, c.MLPBias},
		{p + ".mlp.down_proj", "down_proj", c.Hidden, c.Intermediate, c.MLPBias},
	}
}

// expectedTensors returns every weight the config requires, with its dimensions.
func (c Config) expectedTensors() map[string][]int {
	want := map[string][]int{
		"model.embed_tokens.weight": {c.Vocab, c.Hidden},
		"model.norm.weight":         {c.Hidden},
	}
	if !c.TieWordEmbeddings {
		want["lm_head.weight"] = []int{c.Vocab, c.Hidden}
	}
	for i := range c.Layers {
		want[layerKey(i)+".input_layernorm.weight"] = []int{c.Hidden}
		want[layerKey(i)+".post_attention_layernorm.weight"] = []int{c.Hidden}
		for _, p := range c.projections(i) {
			want[p.key+".weight"] = []int{p.out, p.in}
			if p.bias {
				want[p.key+".bias"] = []int{p.out}
			}
		}
	}
	return want
}

func load(s *snapshot.Snapshot, store *gomlxmodel.Store, lora LoRA) (*Model, error) {
	cfg, err := configOf(s)
	if err != nil {
		return nil, err
	}
	if lora.Rank < 0 {
		return nil, fmt.Errorf("lora rank %d: want 0 (full fine-tuning) or more", lora.Rank)
	}
	for _, t := range lora.targets() {
		if !slices.Contains(DefaultTargets, t) {
			return nil, fmt.Errorf("lora target module %q: want one of %v", t, DefaultTargets)
		}
	}
	want := cfg.expectedTensors()
	// Shapes and dtypes come from the headers: a wrong file fails before any weight is read.
	for _, name := range sortedKeys(want) {
		shape, ok := s.Shape(name)
		if !ok {
			return nil, fmt.Errorf("snapshot %s: %w %s (model_type %s, %d layers)", s.Dir, ErrMissingTensor, name, cfg.ModelType, cfg.Layers)
		}
		if err := snapshot.CheckShape(name, shape, want[name]...); err != nil {
			return nil, fmt.Errorf("snapshot %s: %s: %w", s.Dir, s.FileOf(name), err)
		}
		switch shape.DType {
		case dtypes.Float32, dtypes.BFloat16, dtypes.Float16, dtypes.Float64:
		default:
			return nil, fmt.Errorf("snapshot %s: %s: tensor %s has dtype %s, want a float type", s.Dir, s.FileOf(name), name, shape.DType)
		}
	}
	ts, err := s.Tensors(func(name string) bool { _, ok := want[name]; return ok })
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, lora: lora, st: store, base: map[string]*gomlxmodel.Variable{},
		a: map[string]*gomlxmodel.Variable{}, b: map[string]*gomlxmodel.Variable{}}
	frozen := lora.Rank > 0
	for _, name := range sortedKeys(want) {
		t := ts[name]
		// Float64 is never worth keeping; half types stay as stored when frozen (half the memory;
		// the graph converts them to float32), and become float32 when trained, since the
		// optimizer keeps float32 moments and updates.
		if t.DType() == dtypes.Float64 || (!frozen && t.DType() != dtypes.Float32) {
			t = toFloat32(t)
		}
		v, err := setVariable(store, BaseScope+"/"+name, t, true)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %s: %v", s.Dir, name, err)
		}
		v.SetTrainable(!frozen)
		m.base[name] = v
	}
	if lora.Rank > 0 {
		rng := rand.New(rand.NewPCG(uint64(lora.Seed), 0x10ba))
		for i := range cfg.Layers {
			for _, p := range cfg.projections(i) {
				if !lora.Targeted(p.module) {
					continue
				}
				// PEFT: nn.init.kaiming_uniform_(lora_A.weight, a=math.sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)).
				bound := 1 / math.Sqrt(float64(p.in))
				aVals := make([]float32, lora.Rank*p.in)
				for j := range aVals {
					aVals[j] = float32((2*rng.Float64() - 1) * bound)
				}
				a := tensors.FromFlatDataAndDimensions(aVals, lora.Rank, p.in)
				b := tensors.FromShape(shapes.Make(dtypes.Float32, p.out, lora.Rank))
				va, err := setVariable(store, LoRAScope+"/"+p.key+".lora_A.weight", a, false)
				if err != nil {
					return nil, err
				}
				vb, err := setVariable(store, LoRAScope+"/"+p.key+".lora_B.weight", b, false)
				if err != nil {
					return nil, err
				}
				va.SetTrainable(true)
				vb.SetTrainable(true)
				m.a[p.key], m.b[p.key] = va, vb
			}
		}
	}
	return m, nil
}

// setVariable creates the variable at path with value t. An existing variable (a store restored
// from a checkpoint before Load) must have the same shape; it takes t when overwrite is set (base
// weights) and keeps its value otherwise (trained adapters).
func setVariable(store *gomlxmodel.Store, path string, t *tensors.Tensor, overwrite bool) (*gomlxmodel.Variable, error) {
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

// toFloat32 converts a float tensor (f64, f32, bf16, f16) to a new float32 tensor on the host.
func toFloat32(t *tensors.Tensor) *tensors.Tensor {
	out := tensors.FromShape(shapes.Make(dtypes.Float32, t.Shape().Dimensions...))
	dt := t.DType()
	tensors.MustMutableFlatData(out, func(dst []float32) {
		_ = t.ConstBytes(func(b []byte) {
			for i := range dst {
				switch dt {
				case dtypes.Float32:
					dst[i] = math.Float32frombits(le32(b[4*i:]))
				case dtypes.Float64:
					dst[i] = float32(math.Float64frombits(uint64(le32(b[8*i:])) | uint64(le32(b[8*i+4:]))<<32))
				case dtypes.BFloat16:
					dst[i] = math.Float32frombits(uint32(le16(b[2*i:])) << 16)
				case dtypes.Float16:
					dst[i] = halfToFloat32(le16(b[2*i:]))
				}
			}
		})
	})
	return out
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// halfToFloat32 converts IEEE 754 binary16 bits to float32 (exactly: every half is a float32).
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: frac * 2^-24
		v := float32(frac) * float32(math.Ldexp(1, -24))
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

func (m *Model) loraVariables() map[string]*gomlxmodel.Variable {
	out := map[string]*gomlxmodel.Variable{}
	for k, v := range m.a {
		out[PEFTPrefix+k+".lora_A.weight"] = v
	}
	for k, v := range m.b {
		out[PEFTPrefix+k+".lora_B.weight"] = v
	}
	return out
}
