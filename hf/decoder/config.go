package decoder

import (
	"cmp"
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

// Limits of a config.json's sizes, far above any published model (Llama 3.1 405B: 126 layers,
// hidden 16,384; Gemma 3: vocab 262,144): a hostile config must not size a table before the
// weights are consulted. hf/plan checks its inputs against the same limits, so that a model this
// package loads can be planned and one it refuses is refused by --plan too.
const (
	MaxVocab        = 1 << 23
	MaxHidden       = 1 << 17
	MaxLayers       = 1 << 12
	MaxHeads        = 1 << 12
	MaxIntermediate = 1 << 20
)

// configOf reads Config from the snapshot with the defaults of its family's configuration class
// (hf/family) for the keys a config.json may omit. Sizes have no default: a config.json without
// them is not a real checkpoint's.
func configOf(s *snapshot.Snapshot) (Config, error) {
	path := filepath.Join(s.Dir, snapshot.ConfigFile)
	c := Config{ModelType: s.ModelType}
	fam, ok := family.Lookup(c.ModelType)
	if !ok || fam.Kind != family.CausalLM {
		return Config{}, configError(path, "model_type %q is not a causal LM of this package (supported: %s)", c.ModelType, strings.Join(family.Names(family.CausalLM), ", "))
	}
	c.NormPlusOne, c.ScaleEmbeddings = fam.NormPlusOne, fam.ScaleEmbeddings
	c.LoRATargets = fam.LoRATargets
	for _, read := range []func(*snapshot.Snapshot, family.Family, string) error{
		c.readSizes, c.readNormAndRope, c.readLayout, c.readWindow, c.readTokens,
	} {
		if err := read(s, fam, path); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// configError is an error of config.json at path.
func configError(path, format string, args ...any) error {
	return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
}

// readSizes reads the sizes (no defaults but the family's head_dim), within the Max* limits and
// consistent with each other and with the weights' layer count.
func (c *Config) readSizes(s *snapshot.Snapshot, fam family.Family, path string) error {
	var err error
	required := []struct {
		key string
		dst *int
		max int
	}{
		{"vocab_size", &c.Vocab, MaxVocab}, {"hidden_size", &c.Hidden, MaxHidden}, {"num_hidden_layers", &c.Layers, MaxLayers},
		{"num_attention_heads", &c.Heads, MaxHeads}, {"intermediate_size", &c.Intermediate, MaxIntermediate},
	}
	for _, r := range required {
		if *r.dst, err = s.Int(r.key, -1); err != nil {
			return err
		}
		if *r.dst <= 0 {
			return configError(path, "%s is missing or not positive", r.key)
		}
		if *r.dst > r.max {
			return configError(path, "%s = %d is beyond any real model (limit %d)", r.key, *r.dst, r.max)
		}
	}
	if err := s.CheckLayerCount("num_hidden_layers", c.Layers, "model.layers."); err != nil {
		return err
	}
	if c.KVHeads, err = s.Int("num_key_value_heads", c.Heads); err != nil {
		return err
	}
	if c.KVHeads <= 0 || c.Heads%c.KVHeads != 0 {
		return configError(path, "num_key_value_heads = %d does not divide num_attention_heads = %d", c.KVHeads, c.Heads)
	}
	defHeadDim := c.Hidden / c.Heads
	if fam.HeadDim > 0 {
		defHeadDim = fam.HeadDim
	}
	if c.HeadDim, err = s.Int("head_dim", defHeadDim); err != nil {
		return err
	}
	if c.HeadDim <= 0 || c.HeadDim%2 != 0 {
		return configError(path, "head_dim = %d, want a positive even number (RoPE rotates pairs)", c.HeadDim)
	}
	if fam.HeadDim == 0 && s.Config["head_dim"] == nil && c.Hidden%c.Heads != 0 {
		return configError(path, "hidden_size = %d is not a multiple of num_attention_heads = %d", c.Hidden, c.Heads)
	}
	return nil
}

// readNormAndRope reads the norm epsilon, RoPE's bases (the sliding layers' own, Gemma 3's) and
// scaling, and the attention's scaling and caps (readScaling); partial rotation is refused.
func (c *Config) readNormAndRope(s *snapshot.Snapshot, fam family.Family, path string) error {
	var err error
	if c.RMSNormEps, err = s.Float("rms_norm_eps", 1e-6); err != nil {
		return err
	}
	if c.RopeTheta, err = s.Float("rope_theta", cmp.Or(fam.RopeTheta, 10000)); err != nil {
		return err
	}
	if fam.LocalRopeTheta > 0 {
		if c.LocalRopeTheta, err = s.Float("rope_local_base_freq", fam.LocalRopeTheta); err != nil {
			return err
		}
		if c.LocalRopeTheta <= 0 {
			return configError(path, "rope_local_base_freq = %g, want a positive number", c.LocalRopeTheta)
		}
	}
	if err := c.readScaling(s, fam, path); err != nil {
		return err
	}
	// Zero or negative values make every activation NaN, reported later as a diverging loss.
	if c.RMSNormEps <= 0 {
		return configError(path, "rms_norm_eps = %g, want a positive number", c.RMSNormEps)
	}
	if c.RopeTheta <= 0 {
		return configError(path, "rope_theta = %g, want a positive number", c.RopeTheta)
	}
	if c.RopeScaling, err = ropeScaling(s, path); err != nil {
		return err
	}
	// Phi-4-mini and others rotate only part of each head: not implemented, so refused.
	if prf, err := s.Float("partial_rotary_factor", 1); err != nil {
		return err
	} else if prf != 1 {
		return configError(path, "partial_rotary_factor = %g is not supported (only 1: RoPE on the whole head)", prf)
	}
	return nil
}

// readScaling reads the scaling of attention scores and the soft caps of scores and logits
// (Gemma 2 and 3), for the families that have them.
func (c *Config) readScaling(s *snapshot.Snapshot, fam family.Family, path string) error {
	var err error
	if fam.QueryPreAttnScalar > 0 {
		if c.QueryPreAttnScalar, err = s.Float("query_pre_attn_scalar", fam.QueryPreAttnScalar); err != nil {
			return err
		}
		if c.QueryPreAttnScalar <= 0 {
			return configError(path, "query_pre_attn_scalar = %g, want a positive number", c.QueryPreAttnScalar)
		}
	}
	if !fam.Softcapping {
		return nil
	}
	for _, sc := range []struct {
		key string
		dst *float64
		def float64
	}{{"attn_logit_softcapping", &c.AttnSoftcap, fam.AttnSoftcap}, {"final_logit_softcapping", &c.FinalSoftcap, fam.FinalSoftcap}} {
		if v, present := s.Config[sc.key]; present && v == nil {
			continue // null: no cap
		}
		if *sc.dst, err = s.Float(sc.key, sc.def); err != nil {
			return err
		}
		if *sc.dst < 0 {
			return configError(path, "%s = %g, want a positive number or null", sc.key, *sc.dst)
		}
	}
	return nil
}

// readLayout reads what the tensors depend on beyond the sizes: tied embeddings and the biases.
func (c *Config) readLayout(s *snapshot.Snapshot, fam family.Family, _ string) error {
	var err error
	if c.TieWordEmbeddings, err = s.Bool("tie_word_embeddings", fam.TiedEmbeddings); err != nil {
		return err
	}
	// The layout's features and biases are the family's; only some families read the bias keys.
	var attentionBias, mlpBias bool
	if fam.Bias == family.BiasFromConfig {
		if attentionBias, err = s.Bool("attention_bias", false); err != nil {
			return err
		}
		if mlpBias, err = s.Bool("mlp_bias", false); err != nil {
			return err
		}
	}
	c.SetFamily(fam, attentionBias, mlpBias)
	return nil
}

// readWindow reads the sliding-window attention as the family turns it on; qwen's per-layer
// window (use_sliding_window) is refused.
func (c *Config) readWindow(s *snapshot.Snapshot, fam family.Family, path string) error {
	var err error
	switch fam.SlidingWindow {
	case family.SlidingWindowOptIn:
		useSW, err := s.Bool("use_sliding_window", false)
		if err != nil {
			return err
		}
		if useSW {
			return configError(path, "use_sliding_window = true (%s's per-layer sliding window) is not supported", c.ModelType)
		}
	case family.SlidingWindowAll, family.SlidingWindowLayers:
		// An explicit null turns the window off.
		if _, present := s.Config["sliding_window"]; !present {
			c.SlidingWindow = fam.DefaultSlidingWindow
		} else if c.SlidingWindow, err = s.Int("sliding_window", 0); err != nil {
			return err
		}
		if c.SlidingWindow < 0 {
			return configError(path, "sliding_window = %d, want a positive number or null", c.SlidingWindow)
		}
		if fam.SlidingWindow == family.SlidingWindowLayers {
			if c.SlidingLayers, err = slidingLayers(s, fam, c.Layers); err != nil {
				return configError(path, "%v", err)
			}
		}
	}
	return nil
}

// readTokens reads the MLP's activation, the position limit and the special token ids.
func (c *Config) readTokens(s *snapshot.Snapshot, fam family.Family, path string) error {
	// Gemma's MLP reads hidden_activation, defaulting to the tanh GELU whatever hidden_act says.
	act, err := s.String(fam.ActivationKey, fam.Activation)
	if err != nil {
		return err
	}
	if _, ok := activations[act]; !ok {
		return configError(path, "activation %q is not supported (supported: silu, gelu, gelu_new, gelu_pytorch_tanh)", act)
	}
	c.HiddenAct = act
	if c.MaxPositions, err = s.Int("max_position_embeddings", 2048); err != nil {
		return err
	}
	if c.MaxPositions <= 0 || c.MaxPositions > 1<<24 {
		return configError(path, "max_position_embeddings = %d, want 1 to %d", c.MaxPositions, 1<<24)
	}
	if c.BOS, err = s.Int("bos_token_id", -1); err != nil {
		return err
	}
	if c.Pad, err = s.Int("pad_token_id", -1); err != nil {
		return err
	}
	c.EOSList, err = eosList(s.Config["eos_token_id"])
	if err != nil {
		return configError(path, "%v", err)
	}
	return nil
}

// eosList reads eos_token_id: a number or a list of numbers (none when absent).
func eosList(raw any) ([]int, error) {
	switch v := raw.(type) {
	case nil:
		return nil, nil
	case float64:
		if v == math.Trunc(v) {
			return []int{int(v)}, nil
		}
	case []any:
		var out []int
		for _, e := range v {
			f, ok := e.(float64)
			if !ok || f != math.Trunc(f) {
				return nil, fmt.Errorf("eos_token_id = %v, want an integer or a list of integers", v)
			}
			out = append(out, int(f))
		}
		return out, nil
	}
	return nil, fmt.Errorf("eos_token_id = %v, want an integer or a list of integers", raw)
}

// slidingLayers says which of n layers slide: config.json's layer_types ("sliding_attention" or
// "full_attention" each), else layer i when (i+1) % pattern != 0, pattern being
// sliding_window_pattern or the family's default.
func slidingLayers(s *snapshot.Snapshot, fam family.Family, n int) ([]bool, error) {
	out := make([]bool, n)
	if raw, ok := s.Config["layer_types"]; ok && raw != nil {
		list, ok := raw.([]any)
		if !ok || len(list) != n {
			return nil, fmt.Errorf("layer_types = %v, want a list of %d layer types", raw, n)
		}
		for i, v := range list {
			switch v {
			case "sliding_attention":
				out[i] = true
			case "full_attention":
			default:
				return nil, fmt.Errorf("layer_types[%d] = %v, want sliding_attention or full_attention", i, v)
			}
		}
		return out, nil
	}
	pattern, err := s.Int("sliding_window_pattern", fam.SlidingPattern)
	if err != nil {
		return nil, err
	}
	if pattern < 1 {
		return nil, fmt.Errorf("sliding_window_pattern = %d, want a positive number", pattern)
	}
	for i := range out {
		out[i] = (i+1)%pattern != 0
	}
	return out, nil
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
	if typ != "llama3" && typ != "linear" {
		return nil, fmt.Errorf("%s: rope_scaling type %q is not supported (supported: llama3, linear, default)", path, typ)
	}
	num := func(key string) (float64, error) {
		f, ok := m[key].(float64)
		if !ok || f <= 0 {
			return 0, fmt.Errorf("%s: rope_scaling.%s = %v, want a positive number", path, key, m[key])
		}
		return f, nil
	}
	r := &RopeScaling{Type: typ}
	var err error
	if r.Factor, err = num("factor"); err != nil {
		return nil, err
	}
	if typ == "linear" {
		return r, nil
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

// invFreq returns RoPE's inverse frequencies (HeadDim/2 of them), with rope_scaling's adjustment
// when configured, computed as transformers does (in float32 from int64 exponents) so that
// positions times frequencies round the same way. local: the sliding layers' frequencies when
// LocalRopeTheta is set (its base, no scaling).
func (c Config) invFreq(local bool) []float32 {
	d := c.HeadDim
	theta, r := c.RopeTheta, c.RopeScaling
	if local && c.LocalRopeTheta > 0 {
		theta, r = c.LocalRopeTheta, nil
	}
	out := make([]float32, d/2)
	for i := range out {
		exp := float32(2*i) / float32(d)
		out[i] = float32(1.0 / math.Pow(theta, float64(exp)))
	}
	if r == nil {
		return out
	}
	if r.Type == "linear" {
		for i := range out {
			out[i] /= float32(r.Factor)
		}
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
