// Package randsnap writes Hugging Face snapshots with random weights, in the exact file layout of
// the Hub (config.json, model.safetensors, generation_config.json, tokenizer.json,
// tokenizer_config.json), for tests and trials of any size: no pretrained weights can be
// downloaded here, and a random checkpoint exercises loading, shapes, dtypes and speed just as well.
// The same seed gives the same files, byte for byte.
//
// # Example
//
//	err := randsnap.WriteDecoder("/tmp/smollm-shaped", randsnap.Decoder{
//		ModelType: "llama", Vocab: 49152, Hidden: 576, Layers: 30, Heads: 9, KVHeads: 3,
//		Intermediate: 1536, Tied: true, Seed: 1,
//		TokenizerDir: "/path/to/real/tokenizer/files", // optional: copied as they are
//	})
package randsnap

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/hf/decoder/layout"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/tensorio"
)

// Decoder describes a random causal LM snapshot of the Llama family.
type Decoder struct {
	// ModelType is a causal LM family of hf/family ("llama", "mistral", "qwen2", "qwen3", "gemma").
	ModelType string
	// Sizes, as config.json names them: vocab_size, hidden_size, num_hidden_layers,
	// num_attention_heads, num_key_value_heads (0: = Heads), head_dim (0: Hidden/Heads, and not
	// written unless the family's default differs), intermediate_size.
	Vocab, Hidden, Layers, Heads, KVHeads, HeadDim, Intermediate int
	// Tied writes tie_word_embeddings true and no lm_head.weight.
	Tied bool
	// RopeTheta is rope_theta (0: 10000).
	RopeTheta float64
	// RopeScaling is written as rope_scaling when not nil (e.g. Llama 3's llama3 type).
	RopeScaling map[string]any
	// SlidingWindow is sliding_window of the families that read it (0: null).
	SlidingWindow int
	// DType of the weights: Float32 (the zero value is taken as Float32), BFloat16 or Float16.
	DType dtypes.DType
	// Std is the standard deviation of the weights (0: 0.02, transformers' initializer_range).
	Std float64
	// Seed makes the weights reproducible.
	Seed uint64
	// TokenizerDir, when set, is a directory whose tokenizer.json and tokenizer_config.json are
	// copied; otherwise a small byte-level BPE tokenizer fitting in Vocab is written.
	TokenizerDir string
	// Extra config.json keys (override the generated ones).
	Extra map[string]any
	// Quantize "nf4" writes the layers' linear projections (q, k, v, o, gate, up, down) in
	// bitsandbytes' 4-bit layout, as transformers saves a model loaded with load_in_4bit,
	// bnb_4bit_quant_type nf4 and double quantization (e.g. unsloth's "-bnb-4bit" snapshots):
	// the weights drawn in DType are quantized, and config.json gets its quantization_config.
	// Embeddings, norms and lm_head stay unquantized. "": no quantization.
	Quantize string
}

// specs returns the decoder's tensor names (Hugging Face's keys) and shapes: hf/decoder's own list
// (hf/decoder/layout) for these sizes and the family's features, with the biases config.json
// (Extra included) turns on, so that a family hf/decoder loads needs nothing here.
func (d Decoder) specs() map[string]shapes.Shape {
	dt := d.DType
	if dt == dtypes.InvalidDType {
		dt = dtypes.Float32
	}
	fam, _ := family.Lookup(d.ModelType)
	l := layout.Layout{Vocab: d.Vocab, Hidden: d.Hidden, Layers: d.Layers, Heads: d.Heads, KVHeads: d.kvHeads(),
		HeadDim: d.headDim(), Intermediate: d.Intermediate, TieWordEmbeddings: d.Tied}
	cfg := d.config()
	attentionBias, _ := cfg["attention_bias"].(bool)
	mlpBias, _ := cfg["mlp_bias"].(bool)
	l.SetFamily(fam, attentionBias, mlpBias)
	out := map[string]shapes.Shape{}
	for name, dims := range l.Tensors() {
		out[name] = shapes.Make(dt, dims...)
	}
	return out
}

func (d Decoder) headDim() int {
	if d.HeadDim > 0 {
		return d.HeadDim
	}
	return d.Hidden / d.Heads
}

func (d Decoder) kvHeads() int {
	if d.KVHeads > 0 {
		return d.KVHeads
	}
	return d.Heads
}

// Special token ids of the generated tokenizer and config.
const (
	bosID = 1
	eosID = 2
)

// config returns config.json's content.
func (d Decoder) config() map[string]any {
	theta := d.RopeTheta
	if theta == 0 {
		theta = 10000
	}
	fam, _ := family.Lookup(d.ModelType)
	c := map[string]any{
		"architectures":           []string{fam.CausalLMClass},
		"model_type":              d.ModelType,
		"vocab_size":              d.Vocab,
		"hidden_size":             d.Hidden,
		"num_hidden_layers":       d.Layers,
		"num_attention_heads":     d.Heads,
		"num_key_value_heads":     d.kvHeads(),
		"intermediate_size":       d.Intermediate,
		"rms_norm_eps":            1e-5,
		"rope_theta":              theta,
		"rope_scaling":            nil,
		"tie_word_embeddings":     d.Tied,
		"max_position_embeddings": 2048,
		"hidden_act":              "silu",
		"bos_token_id":            bosID,
		"eos_token_id":            eosID,
		"torch_dtype":             map[dtypes.DType]string{dtypes.BFloat16: "bfloat16", dtypes.Float16: "float16"}[d.DType],
		"initializer_range":       0.02,
		"attention_dropout":       0.0,
	}
	if c["torch_dtype"] == "" {
		c["torch_dtype"] = "float32"
	}
	if d.RopeScaling != nil {
		c["rope_scaling"] = d.RopeScaling
	}
	// The keys the family's configuration class reads, with the values the sizes above imply.
	if fam.HeadDim > 0 || d.HeadDim > 0 {
		c["head_dim"] = d.headDim()
	}
	if fam.ActivationKey != "hidden_act" {
		c["hidden_act"] = fam.Activation
		c[fam.ActivationKey] = fam.Activation
	}
	switch fam.SlidingWindow {
	case family.SlidingWindowAll, family.SlidingWindowLayers:
		c["sliding_window"] = nil
		if d.SlidingWindow > 0 {
			c["sliding_window"] = d.SlidingWindow
		}
	case family.SlidingWindowOptIn:
		c["use_sliding_window"] = false
	}
	if fam.Bias == family.BiasFromConfig {
		c["attention_bias"] = false
		c["mlp_bias"] = false
	}
	for k, v := range d.Extra {
		c[k] = v
	}
	return c
}

// WriteDecoder writes the snapshot to dir (created if needed; files replaced atomically).
func WriteDecoder(dir string, d Decoder) error {
	fam, ok := family.Lookup(d.ModelType)
	if !ok || fam.Kind != family.CausalLM {
		return fmt.Errorf("randsnap: model type %q: want one of %s", d.ModelType, strings.Join(family.Names(family.CausalLM), ", "))
	}
	if d.Vocab <= 0 || d.Hidden <= 0 || d.Layers <= 0 || d.Heads <= 0 || d.Intermediate <= 0 {
		return fmt.Errorf("randsnap: vocab, hidden, layers, heads and intermediate must be positive")
	}
	switch d.DType {
	case dtypes.InvalidDType, dtypes.Float32, dtypes.BFloat16, dtypes.Float16:
	default:
		return fmt.Errorf("randsnap: dtype %s: want float32, bfloat16 or float16", d.DType)
	}
	if d.Quantize != "" && d.Quantize != "nf4" {
		return fmt.Errorf("randsnap: quantize %q: want nf4 or nothing", d.Quantize)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("randsnap: %w", err)
	}
	cfg := d.config()
	if d.Quantize != "" {
		cfg["quantization_config"] = bnbConfig(dtypeName(d.DType))
	}
	if err := atomicio.WriteJSON(filepath.Join(dir, snapshot.ConfigFile), cfg); err != nil {
		return err
	}
	// The same special ids as config.json (Extra may set a real tokenizer's), so that transformers'
	// generate() on this snapshot or its export stops where tracksum does.
	gen := map[string]any{"bos_token_id": cfg["bos_token_id"], "eos_token_id": cfg["eos_token_id"], "do_sample": false}
	if err := atomicio.WriteJSON(filepath.Join(dir, snapshot.GenerationConfigFile), gen); err != nil {
		return err
	}
	if err := writeTokenizer(dir, d.TokenizerDir, d.Vocab); err != nil {
		return err
	}
	std := d.Std
	if std == 0 {
		std = 0.02
	}
	drawn := d.specs()
	specs := drawn
	tensor := func(name string) (*tensors.Tensor, error) {
		return randomTensor(drawn[name], name, d.Seed, std, fam.NormPlusOne)
	}
	if d.Quantize != "" {
		var err error
		if specs, tensor, err = quantizeNF4(specs, tensor, isProjection); err != nil {
			return err
		}
	} else {
		// Drawing is most of the time (an 8B snapshot's 8e9 normal draws: minutes on one core);
		// each tensor's values depend on its name alone, so they are drawn ahead in parallel,
		// and the file is the same bytes whatever the number of workers.
		var stop func()
		tensor, stop = prefetch(slices.Sorted(maps.Keys(specs)), tensor, runtime.GOMAXPROCS(0))
		defer stop()
	}
	return tensorio.WriteTensorsFunc(filepath.Join(dir, snapshot.WeightsFile), specs, map[string]string{"format": "pt"}, tensor)
}

// prefetch returns get for names asked in the order of names, each computed ahead by up to
// workers goroutines (at most workers tensors computed and not yet asked for: the memory bound),
// and stop, which ends the drawing ahead (when the writer quits early) and waits for the draws
// under way. A name not in names is computed when asked.
func prefetch(names []string, get func(string) (*tensors.Tensor, error), workers int) (func(string) (*tensors.Tensor, error), func()) {
	type result struct {
		t   *tensors.Tensor
		err error
	}
	results := make(map[string]chan result, len(names))
	for _, n := range names {
		results[n] = make(chan result, 1)
	}
	slots := make(chan struct{}, max(workers, 1))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, n := range names {
			select {
			case slots <- struct{}{}:
			case <-done:
				return
			}
			wg.Go(func() {
				t, err := get(n)
				results[n] <- result{t, err}
			})
		}
	})
	var once sync.Once
	return func(name string) (*tensors.Tensor, error) {
			ch, ok := results[name]
			if !ok {
				return get(name)
			}
			r := <-ch
			<-slots
			return r.t, r.err
		}, func() {
			once.Do(func() { close(done) })
			wg.Wait() // no drawing goes on after the write returns
		}
}

// isProjection reports whether name is a layer's linear projection weight (q_proj, ...,
// down_proj, and the fused qkv_proj and gate_up_proj), the modules bitsandbytes quantizes.
func isProjection(name string) bool {
	return strings.HasPrefix(name, "model.layers.") && strings.HasSuffix(name, "_proj.weight")
}

func dtypeName(dt dtypes.DType) string {
	switch dt {
	case dtypes.BFloat16:
		return "bfloat16"
	case dtypes.Float16:
		return "float16"
	}
	return "float32"
}

// randomTensor draws the named tensor from a stream seeded by the seed and the name, so a tensor
// does not depend on the others (the same layer 0 whatever the number of layers). Norm weights
// are 1 plus noise (a (1 + w) norm stores w: noise alone); biases and matrices are
// normal with the given std.
func randomTensor(s shapes.Shape, name string, seed uint64, std float64, normPlusOne bool) (*tensors.Tensor, error) {
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	norm := len(s.Dimensions) == 1 && filepath.Ext(name) == ".weight"
	vals := make([]float32, s.Size())
	for i := range vals {
		v := rng.NormFloat64() * std
		if norm {
			v = rng.NormFloat64() * 0.1
			if !normPlusOne {
				v++
			}
		}
		vals[i] = float32(v)
	}
	return snapshot.FromFloat32(vals, s.DType, s.Dimensions...)
}

// specialTokens gives specials the ids 0, 1, ... in a new vocabulary and returns it with their
// added_tokens entries, as the test tokenizers start.
func specialTokens(specials []string) (map[string]int, []map[string]any) {
	v := map[string]int{}
	var added []map[string]any
	for i, s := range specials {
		v[s] = i
		added = append(added, map[string]any{"id": i, "content": s, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
	}
	return v, added
}

// byteLevelVocab is specialTokens' vocabulary followed by the byte-level symbols of bytes 0..255
// while ids remain under vocab: a BPE with no merges, every text one token per byte.
func byteLevelVocab(specials []string, vocab int) (map[string]int, []map[string]any) {
	v, added := specialTokens(specials)
	for b := 0; b < 256 && len(v) < vocab; b++ {
		v[byteLevelSymbol(byte(b))] = len(v)
	}
	return v, added
}

// clsSepTemplate is the TemplateProcessing post-processor of BERT's inputs, [CLS] $A [SEP] and
// [CLS] $A [SEP] $B [SEP] (segment B of type 1), with [CLS] and [SEP] at ids cls and sep.
func clsSepTemplate(cls, sep int) map[string]any {
	special := func(tok string, typ int) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": tok, "type_id": typ}}
	}
	seq := func(id string, typ int) map[string]any {
		return map[string]any{"Sequence": map[string]any{"id": id, "type_id": typ}}
	}
	return map[string]any{"type": "TemplateProcessing",
		"single": []any{special("[CLS]", 0), seq("A", 0), special("[SEP]", 0)},
		"pair":   []any{special("[CLS]", 0), seq("A", 0), special("[SEP]", 0), seq("B", 1), special("[SEP]", 1)},
		"special_tokens": map[string]any{
			"[CLS]": map[string]any{"id": "[CLS]", "ids": []int{cls}, "tokens": []string{"[CLS]"}},
			"[SEP]": map[string]any{"id": "[SEP]", "ids": []int{sep}, "tokens": []string{"[SEP]"}},
		}}
}

// writeTokenizer copies the tokenizer files from src, or writes a byte-level BPE tokenizer with
// no merges whose ids fit in vocab: <unk>, <s>, </s>, then the byte-level symbols of bytes 0..255
// while ids remain (a test tokenizer, not a useful one).
func writeTokenizer(dir, src string, vocab int) error {
	if src != "" {
		for _, name := range []string{snapshot.TokenizerFile, snapshot.TokenizerConfigFile} {
			data, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				return fmt.Errorf("randsnap: tokenizer: %w", err)
			}
			if err := atomicio.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	specials := []string{"<unk>", "<s>", "</s>"}
	v, added := byteLevelVocab(specials, vocab)
	tok := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added, "normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair":           []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{bosID}, "tokens": []string{"<s>"}}}},
		"decoder": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": "<unk>", "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": v, "merges": []string{}},
	}
	if err := atomicio.WriteJSON(filepath.Join(dir, snapshot.TokenizerFile), tok); err != nil {
		return err
	}
	cfg := map[string]any{
		"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": nil,
		"model_max_length": 2048, "tokenizer_class": "PreTrainedTokenizerFast",
		// chatml, the template of Qwen and SmolLM2.
		"chat_template": "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
	}
	return atomicio.WriteJSON(filepath.Join(dir, snapshot.TokenizerConfigFile), cfg)
}

// byteLevelSymbol is GPT-2's byte-to-unicode mapping: printable bytes map to themselves, the
// others to code points from 256 up.
func byteLevelSymbol(b byte) string {
	n := 0
	for c := 0; c < 256; c++ {
		printable := (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF)
		if c == int(b) {
			if printable {
				return string(rune(c))
			}
			return string(rune(256 + n))
		}
		if !printable {
			n++
		}
	}
	return ""
}
