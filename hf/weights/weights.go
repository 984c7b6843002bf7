// Package weights is the loading that hf/decoder and hf/encoder share: a snapshot's tensors checked
// from their headers against the shapes the backbone expects, its weights made store variables
// (frozen or trainable), and the LoRA adapters of its linear layers created under PEFT's names.
// The backbones differ in which tensors they expect and which layers they adapt; how a weight or
// an adapter becomes a variable is written once here.
package weights

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// CheckRank refuses a negative LoRA rank (0 is full fine-tuning).
func CheckRank(rank int) error {
	if rank < 0 {
		return fmt.Errorf("lora rank %d: want 0 (full fine-tuning) or more", rank)
	}
	return nil
}

// Finder returns the key in the snapshot of an expected tensor (name) and its header's shape;
// not ok, the key to name as missing.
type Finder func(name string) (key string, shape shapes.Shape, ok bool)

// CheckHeaders checks that s holds every tensor of want, under the key find gives (nil: its own
// name), with its dimensions and a float dtype, and returns the keys found by name. Shapes and
// dtypes come from the headers: a wrong file fails before any weight is read. modelType and layers
// make a missing tensor's error say what was expected.
func CheckHeaders(s *snapshot.Snapshot, want map[string][]int, find Finder, modelType string, layers int) (map[string]string, error) {
	if find == nil {
		find = func(name string) (string, shapes.Shape, bool) { shape, ok := s.Shape(name); return name, shape, ok }
	}
	keys := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		key, shape, ok := find(name)
		if !ok {
			return nil, fmt.Errorf("snapshot %s: %w %s (model_type %s, %d layers)", s.Dir, snapshot.ErrMissingTensor, key, modelType, layers)
		}
		if err := snapshot.CheckShape(key, shape, want[name]...); err != nil {
			return nil, fmt.Errorf("snapshot %s: %s: %w", s.Dir, s.FileOf(key), err)
		}
		switch shape.DType {
		case dtypes.Float32, dtypes.BFloat16, dtypes.Float16, dtypes.Float64:
		default:
			return nil, fmt.Errorf("snapshot %s: %s: tensor %s has dtype %s, want a float type", s.Dir, s.FileOf(key), key, shape.DType)
		}
		keys[name] = key
	}
	return keys, nil
}

// SetBase makes the variables scope/key of the snapshot's tensors ts, in the order of keys (the
// store's order of creation): non-trainable when frozen (a LoRA base, absent from the optimizer
// state), trainable otherwise. A value already in the store (a checkpoint restored before the
// load) is overwritten: the base is the snapshot's.
func SetBase(store *gomlxmodel.Store, scope string, s *snapshot.Snapshot, keys []string, ts map[string]*tensors.Tensor, frozen bool) (map[string]*gomlxmodel.Variable, error) {
	out := make(map[string]*gomlxmodel.Variable, len(keys))
	for _, key := range keys {
		t := ts[key]
		// Float64 is never worth keeping; half types stay as stored when frozen (half the memory;
		// the graph converts them to float32), and become float32 when trained, since the
		// optimizer keeps float32 moments and updates.
		if t.DType() == dtypes.Float64 || (!frozen && t.DType() != dtypes.Float32) {
			t = snapshot.ToFloat32(t)
		}
		v, err := SetVariable(store, scope+"/"+key, t, true)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %s: %v", s.Dir, key, err)
		}
		v.SetTrainable(!frozen)
		out[key] = v
	}
	return out, nil
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

// Linear is a linear module to adapt: its Hugging Face key without ".weight" and its weight's
// shape [Out, In].
type Linear struct {
	Key     string
	Out, In int
}

// Adapter is the LoRA pair of one linear module: A [rank, in] and B [out, rank].
type Adapter struct {
	A, B *gomlxmodel.Variable
}

// Adapters are a model's adapters by module key ("model.layers.0.self_attn.q_proj").
type Adapters map[string]Adapter

// NewAdapters creates the adapters of the linears, in their order, drawn from the stream of seed
// and the backbone's stream constant (newLoRA).
func NewAdapters(store *gomlxmodel.Store, scope string, rank int, seed int64, stream uint64, linears []Linear) (Adapters, error) {
	out := Adapters{}
	rng := rand.New(rand.NewPCG(uint64(seed), stream))
	for _, l := range linears {
		a, b, err := newLoRA(store, scope, l.Key, rank, l.In, l.Out, rng)
		if err != nil {
			return nil, err
		}
		out[l.Key] = Adapter{a, b}
	}
	return out, nil
}

// Variables returns the adapters' variables by their PEFT key
// ("base_model.model.<module>.lora_A.weight" -> A, "...lora_B.weight" -> B).
func (ad Adapters) Variables() map[string]*gomlxmodel.Variable {
	out := map[string]*gomlxmodel.Variable{}
	for k, v := range ad {
		out[peft.Prefix+k+peft.SuffixA] = v.A
		out[peft.Prefix+k+peft.SuffixB] = v.B
	}
	return out
}

// newLoRA creates the trainable float32 adapter of the linear layer module (its Hugging Face key
// without ".weight") of shape [out, in]: scope/module.lora_A.weight [rank, in] drawn as PEFT's
// kaiming_uniform_(a=sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)), from rng, and
// scope/module.lora_B.weight [out, rank] zero, so that the adapted layer starts as the base. In a
// store restored from a checkpoint the existing values are kept.
func newLoRA(store *gomlxmodel.Store, scope, module string, rank, in, out int, rng *rand.Rand) (a, b *gomlxmodel.Variable, err error) {
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
