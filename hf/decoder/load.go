package decoder

import (
	"context"
	"fmt"
	"slices"
	"strings"

	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/decoder/layout"
	"github.com/tracksum/tracksum/hf/quant"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/hf/weights"
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
	if _, err := weights.CheckHeaders(s, want, nil, cfg.ModelType, cfg.Layers); err != nil {
		return nil, err
	}
	pack := map[string]bool{}
	if quantization == QuantNF4 {
		pack = cfg.packed()
	}
	var dense []string
	for _, name := range sortedKeys(want) {
		if !pack[name] {
			dense = append(dense, name)
		}
	}
	ts, err := s.Tensors(ctx, func(name string) bool { _, ok := want[name]; return ok && !pack[name] })
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, lora: lora, st: store, packed: map[string]packedWeight{}}
	if err := m.loadPacked(ctx, s, pack); err != nil {
		return nil, err
	}
	if m.base, err = weights.SetBase(store, BaseScope, s, dense, ts, lora.Rank > 0); err != nil {
		return nil, err
	}
	if lora.Rank > 0 {
		if m.adapters, err = weights.NewAdapters(store, LoRAScope, lora.Rank, seed, 0x10ba, m.targetedLinears()); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// checkLoRA refuses adapter and quantization settings that cannot apply to cfg.
func checkLoRA(cfg Config, lora LoRA, quantization string) error {
	if err := weights.CheckRank(lora.Rank); err != nil {
		return err
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

// targetedLinears lists the projections that carry an adapter, layer by layer: the order their
// adapters are drawn from the seed's stream.
func (m *Model) targetedLinears() []weights.Linear {
	var out []weights.Linear
	for i := range m.cfg.Layers {
		for _, p := range m.cfg.Projections(i) {
			if m.cfg.targeted(m.lora, p.Module) {
				out = append(out, weights.Linear{Key: p.Key, Out: p.Out, In: p.In})
			}
		}
	}
	return out
}
