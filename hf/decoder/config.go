package decoder

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// activations maps hidden_act values to the function the MLP applies; gelu_new and
// gelu_pytorch_tanh are the same tanh approximation in transformers.
var activations = map[string]string{
	"silu": "silu", "swish": "silu",
	"gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh",
	"gelu": "gelu",
}

// configOf reads Config from the snapshot with the defaults of its family's configuration class
// (hf/family) for the keys a config.json may omit. Sizes have no default: a config.json without
// them is not a real checkpoint's.
func configOf(s *snapshot.Snapshot) (Config, error) {
	path := filepath.Join(s.Dir, snapshot.ConfigFile)
	fail := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	c := Config{ModelType: s.ModelType}
	fam, ok := family.Lookup(c.ModelType)
	if !ok || fam.Kind != family.CausalLM {
		return fail("model_type %q is not a causal LM of this package (supported: %s)", c.ModelType, strings.Join(family.Names(family.CausalLM), ", "))
	}
	c.NormPlusOne, c.ScaleEmbeddings, c.QKNorm = fam.NormPlusOne, fam.ScaleEmbeddings, fam.QKNorm
	c.LoRATargets = fam.LoRATargets
	var err error
	// Limits far above any published model (Llama 3.1 405B: 126 layers, hidden 16384, Gemma 3:
	// vocab 262144): a hostile config must not size a table before the weights are consulted.
	required := []struct {
		key string
		dst *int
		max int
	}{
		{"vocab_size", &c.Vocab, 1 << 23}, {"hidden_size", &c.Hidden, 1 << 17}, {"num_hidden_layers", &c.Layers, 1 << 12},
		{"num_attention_heads", &c.Heads, 1 << 12}, {"intermediate_size", &c.Intermediate, 1 << 20},
	}
	for _, r := range required {
		if *r.dst, err = s.Int(r.key, -1); err != nil {
			return Config{}, err
		}
		if *r.dst <= 0 {
			return fail("%s is missing or not positive", r.key)
		}
		if *r.dst > r.max {
			return fail("%s = %d is beyond any real model (limit %d)", r.key, *r.dst, r.max)
		}
	}
	if err := s.CheckLayerCount("num_hidden_layers", c.Layers, "model.layers."); err != nil {
		return Config{}, err
	}
	if c.KVHeads, err = s.Int("num_key_value_heads", c.Heads); err != nil {
		return Config{}, err
	}
	if c.KVHeads <= 0 || c.Heads%c.KVHeads != 0 {
		return fail("num_key_value_heads = %d does not divide num_attention_heads = %d", c.KVHeads, c.Heads)
	}
	defHeadDim := c.Hidden / c.Heads
	if fam.HeadDim > 0 {
		defHeadDim = fam.HeadDim
	}
	if c.HeadDim, err = s.Int("head_dim", defHeadDim); err != nil {
		return Config{}, err
	}
	if c.HeadDim <= 0 || c.HeadDim%2 != 0 {
		return fail("head_dim = %d, want a positive even number (RoPE rotates pairs)", c.HeadDim)
	}
	if fam.HeadDim == 0 && s.Config["head_dim"] == nil && c.Hidden%c.Heads != 0 {
		return fail("hidden_size = %d is not a multiple of num_attention_heads = %d", c.Hidden, c.Heads)
	}
	if c.RMSNormEps, err = s.Float("rms_norm_eps", 1e-6); err != nil {
		return Config{}, err
	}
	if c.RopeTheta, err = s.Float("rope_theta", 10000); err != nil {
		return Config{}, err
	}
	// Zero or negative values make every activation NaN, reported later as a diverging loss.
	if c.RMSNormEps <= 0 {
		return fail("rms_norm_eps = %g, want a positive number", c.RMSNormEps)
	}
	if c.RopeTheta <= 0 {
		return fail("rope_theta = %g, want a positive number", c.RopeTheta)
	}
	if c.RopeScaling, err = ropeScaling(s, path); err != nil {
		return Config{}, err
	}
	if c.TieWordEmbeddings, err = s.Bool("tie_word_embeddings", fam.TiedEmbeddings); err != nil {
		return Config{}, err
	}
	switch fam.Bias {
	case family.BiasQKV:
		c.AttentionBias = true // Qwen2Attention: q/k/v with bias, o without
	case family.BiasFromConfig:
		if c.AttentionBias, err = s.Bool("attention_bias", false); err != nil {
			return Config{}, err
		}
		c.OProjBias = c.AttentionBias
		if c.MLPBias, err = s.Bool("mlp_bias", false); err != nil {
			return Config{}, err
		}
	}
	switch fam.SlidingWindow {
	case family.SlidingWindowOptIn:
		useSW, err := s.Bool("use_sliding_window", false)
		if err != nil {
			return Config{}, err
		}
		if useSW {
			return fail("use_sliding_window = true (%s's per-layer sliding window) is not supported", c.ModelType)
		}
	case family.SlidingWindowAll:
		// An explicit null turns the window off.
		if _, present := s.Config["sliding_window"]; !present {
			c.SlidingWindow = fam.DefaultSlidingWindow
		} else if c.SlidingWindow, err = s.Int("sliding_window", 0); err != nil {
			return Config{}, err
		}
	}
	// Gemma's MLP reads hidden_activation, defaulting to the tanh GELU whatever hidden_act says.
	act, err := s.String(fam.ActivationKey, fam.Activation)
	if err != nil {
		return Config{}, err
	}
	if _, ok := activations[act]; !ok {
		return fail("activation %q is not supported (supported: silu, gelu, gelu_new, gelu_pytorch_tanh)", act)
	}
	c.HiddenAct = act
	if c.MaxPositions, err = s.Int("max_position_embeddings", 2048); err != nil {
		return Config{}, err
	}
	if c.MaxPositions <= 0 || c.MaxPositions > 1<<24 {
		return fail("max_position_embeddings = %d, want 1 to %d", c.MaxPositions, 1<<24)
	}
	if c.BOS, err = s.Int("bos_token_id", -1); err != nil {
		return Config{}, err
	}
	if c.Pad, err = s.Int("pad_token_id", -1); err != nil {
		return Config{}, err
	}
	switch v := s.Config["eos_token_id"].(type) {
	case nil:
	case float64:
		if v != math.Trunc(v) {
			return fail("eos_token_id = %v, want an integer or a list of integers", v)
		}
		c.EOSList = []int{int(v)}
	case []any:
		for _, e := range v {
			f, ok := e.(float64)
			if !ok || f != math.Trunc(f) {
				return fail("eos_token_id = %v, want an integer or a list of integers", v)
			}
			c.EOSList = append(c.EOSList, int(f))
		}
	default:
		return fail("eos_token_id = %v, want an integer or a list of integers", v)
	}
	return c, nil
}

// ropeScaling reads rope_scaling: null/absent, or Llama 3's "llama3" type. Other types (linear,
// dynamic, yarn, longrope) change the frequencies differently and are refused rather than ignored.
func ropeScaling(s *snapshot.Snapshot, path string) (*RopeScaling, error) {
	raw, present := s.Config["rope_scaling"]
	if !present || raw == nil {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: rope_scaling = %v, want an object or null", path, raw)
	}
	typ, _ := m["rope_type"].(string)
	if typ == "" {
		typ, _ = m["type"].(string)
	}
	if typ == "default" {
		return nil, nil
	}
	if typ != "llama3" {
		return nil, fmt.Errorf("%s: rope_scaling type %q is not supported (supported: llama3, default)", path, typ)
	}
	num := func(key string) (float64, error) {
		f, ok := m[key].(float64)
		if !ok || f <= 0 {
			return 0, fmt.Errorf("%s: rope_scaling.%s = %v, want a positive number", path, key, m[key])
		}
		return f, nil
	}
	r := &RopeScaling{}
	var err error
	if r.Factor, err = num("factor"); err != nil {
		return nil, err
	}
	if r.LowFreqFactor, err = num("low_freq_factor"); err != nil {
		return nil, err
	}
	if r.HighFreqFactor, err = num("high_freq_factor"); err != nil {
		return nil, err
	}
	orig, err := num("original_max_position_embeddings")
	if err != nil {
		return nil, err
	}
	r.OriginalMaxPositionEmbeddings = int(orig)
	if r.HighFreqFactor == r.LowFreqFactor {
		return nil, fmt.Errorf("%s: rope_scaling high_freq_factor equals low_freq_factor", path)
	}
	return r, nil
}

// invFreq returns RoPE's inverse frequencies (HeadDim/2 of them), with Llama 3's adjustment when
// configured, computed as transformers does (in float32 from int64 exponents) so that positions
// times frequencies round the same way.
func (c Config) invFreq() []float32 {
	d := c.HeadDim
	out := make([]float32, d/2)
	for i := range out {
		exp := float32(2*i) / float32(d)
		out[i] = float32(1.0 / math.Pow(c.RopeTheta, float64(exp)))
	}
	r := c.RopeScaling
	if r == nil {
		return out
	}
	old := float64(r.OriginalMaxPositionEmbeddings)
	lowWavelen := old / r.LowFreqFactor
	highWavelen := old / r.HighFreqFactor
	for i, f32 := range out {
		f := float64(f32)
		wavelen := 2 * math.Pi / f
		adj := f
		if wavelen > lowWavelen {
			adj = f / r.Factor
		}
		if wavelen >= highWavelen && wavelen <= lowWavelen {
			smooth := (old/wavelen - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
			adj = (1-smooth)*adj/r.Factor + smooth*adj
		}
		out[i] = float32(adj)
	}
	return out
}
