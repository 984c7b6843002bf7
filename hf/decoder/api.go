// Package decoder is the causal language model of pretrained Hugging Face checkpoints of the Llama
// family — model_type llama (Llama 2/3.x, SmolLM2, TinyLlama), mistral, qwen2 and gemma (v1) — as a
// GoMLX graph, with LoRA adapters on its projections and a KV-cache step for generation.
//
// The forward pass is written from Hugging Face transformers' modeling_llama.py, modeling_mistral.py,
// modeling_qwen2.py and modeling_gemma.py. GoMLX's ml/zoo/transformer has no Llama architecture, and
// go-huggingface v0.4.2 maps model_type llama onto its Gemma 3 path (different norms, activation,
// embedding scale and attention), which is not Llama's math; so the model is our own, built from
// plain graph ops, while the weights come through go-huggingface's safetensors reader (hf/snapshot).
//
// # Example
//
//	snap, err := snapshot.Open("SNAPSHOT")
//	store := gomlxmodel.NewStore()
//	m, err := decoder.Load(snap, store, config.LoRA{Rank: 16, Alpha: 16, RSLoRA: true, TargetModules: decoder.DefaultTargets}, seed)
//	// in a graph function:
//	hidden := m.Hidden(store.RootScope(), tokens, mask) // [B, T, H]
//	logits := m.Logits(store.RootScope(), hidden)       // [B, T, V]
package decoder

import (
	"context"
	"slices"

	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/decoder/layout"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/hf/weights"
)

// Config is the architecture of a checkpoint, read from its config.json with Hugging Face's defaults
// for keys that are absent.
type Config struct {
	// ModelType is config.json's model_type: a causal LM family of hf/family.
	ModelType string
	// Layout holds the sizes, biases and layout features that decide the tensors (Tensors,
	// Projections): the list hf/randsnap writes too.
	layout.Layout
	// RMSNormEps is rms_norm_eps.
	RMSNormEps float64
	// RopeTheta is rope_theta (10000 when absent).
	RopeTheta float64
	// RopeScaling is rope_scaling with rope_type "llama3" (Llama 3.1+) or "linear", nil when
	// absent. Other rope types are a load error.
	RopeScaling *RopeScaling
	// SlidingWindow is mistral's sliding_window (0: full attention). qwen2's and qwen3's sliding
	// window is used only with use_sliding_window true, which is rejected at load.
	SlidingWindow int
	// SlidingLayers, when not nil, says which layers attend within SlidingWindow (Gemma 2 and 3);
	// nil: every layer when SlidingWindow > 0.
	SlidingLayers []bool
	// LocalRopeTheta, when > 0, is the RoPE base of the sliding layers, which ignore RopeScaling
	// (Gemma 3's rope_local_base_freq).
	LocalRopeTheta float64
	// QueryPreAttnScalar, when > 0, scales attention scores by its inverse square root instead of
	// HeadDim's (Gemma 2 and 3).
	QueryPreAttnScalar float64
	// AttnSoftcap and FinalSoftcap, when > 0, cap attention scores and logits as cap * tanh(x / cap)
	// (Gemma 2's attn_logit_softcapping and final_logit_softcapping).
	AttnSoftcap, FinalSoftcap float64
	// NormPlusOne and ScaleEmbeddings are the family's graph features beyond the layout's
	// (hf/family): RMSNorm by (1 + w), embeddings times sqrt(Hidden).
	NormPlusOne, ScaleEmbeddings bool
	// LoRATargets are the family's adapter module names (nil LoRA.TargetModules: all of them).
	LoRATargets []string
	// HiddenAct is hidden_act (or gemma's hidden_activation): "silu", "gelu_pytorch_tanh", "gelu".
	HiddenAct string
	// MaxPositions is max_position_embeddings (informational: RoPE has no table to outgrow).
	MaxPositions int
	// BOS and Pad are bos_token_id and pad_token_id (-1 when absent).
	BOS, Pad int
	// EOSList holds eos_token_id (a number or a list in config.json; empty when absent).
	EOSList []int
}

// RopeScaling is rope_scaling's frequency adjustment: rope_type "linear" (every frequency divided by
// Factor) or "llama3" (Llama 3.1's bands, with the other fields).
type RopeScaling struct {
	Type                          string
	Factor                        float64
	LowFreqFactor                 float64
	HighFreqFactor                float64
	OriginalMaxPositionEmbeddings int
}

// ConfigOf reads the architecture of an opened snapshot; unsupported model types, rope types or
// inconsistent sizes are one-line errors naming config.json.
func ConfigOf(s *snapshot.Snapshot) (Config, error) { return configOf(s) }

// DefaultTargets are the LoRA target modules of the paper's recipe for the Llama-style families:
// every projection of attention and MLP. A family's own list is Config.LoRATargets.
var DefaultTargets = config.LoRATargetsLlama

// LoRA configures the low-rank adapters, as the config's tracker.lora / summarizer.lora sections
// (one type for both: PEFT's LoraConfig fields): y = x W^T + Scale() * dropout(x) A^T B^T, with
// A [Rank, in] drawn kaiming-uniform(a=sqrt(5)) from Load's seed and B [out, Rank] zeros, both
// float32. Rank 0 means no adapters: full fine-tuning of all weights. TargetModules are module
// names (the last component of the Hugging Face key: "q_proj", ...); nil means all of the
// family's (Config.LoRATargets).
// Dropout applies to the adapter's input in training graphs only.
type LoRA = config.LoRA

// targeted reports whether module (e.g. "q_proj") carries an adapter.
func (c Config) targeted(l LoRA, module string) bool {
	targets := l.TargetModules
	if targets == nil {
		targets = c.LoRATargets
	}
	return l.Rank > 0 && slices.Contains(targets, module)
}

// BaseScope is the store scope of the checkpoint's weights: the variable of Hugging Face key K
// (e.g. "model.layers.0.self_attn.q_proj.weight") is BaseScope + "/" + K.
const BaseScope = "/model/base"

// LoRAScope is the store scope of the adapters: the variable of PEFT key
// "base_model.model." + K (e.g. K = "model.layers.0.self_attn.q_proj.lora_A.weight") is
// LoRAScope + "/" + K.
const LoRAScope = "/model/lora"

// Compute says how the graphs of a model are computed (not what they compute): set with SetCompute
// after Load, before building graphs.
type Compute struct {
	// BF16 computes the base weights' products and the activations in bfloat16 (mixed precision:
	// adapters, norms, softmax, logits and loss stay float32; see graph.go). Off: float32.
	BF16 bool
	// GradientCheckpointing makes each decoder layer of Hidden a checkpointed block (GoMLX's
	// (*Node).Checkpoint): the backward pass recomputes a layer's activations from its input
	// instead of keeping them, trading a second forward pass for memory. Gradients are unchanged.
	GradientCheckpointing bool
	// FlashAttention computes Hidden's attention with GoMLX's fused attention (cuDNN flash
	// attention on the CUDA XLA plugin) where its constraints hold: bf16, right padding, a head
	// dim multiple of 8, no soft-cap, no sliding window shorter than the rows (graph.go: fused).
	// Elsewhere (HiddenPacked, Step, float32, Gemma 2) the decomposed attention is kept. Set it
	// only on a backend with the fused op (config.ResolveAttention): GoMLX falls back to its own
	// decomposed graph otherwise, which is not this package's.
	FlashAttention bool
}

// Model is a loaded decoder: its config, its adapters' settings and the store variables of its
// weights.
type Model struct {
	cfg      Config
	compute  Compute
	lora     LoRA
	st       *gomlxmodel.Store
	base     map[string]*gomlxmodel.Variable // HF key -> variable
	adapters weights.Adapters                // by HF module key ("model.layers.0.self_attn.q_proj")
	// packed holds the projection weights kept in NF4 (LoadQuantized with QuantNF4), by HF key;
	// they are not in base.
	packed map[string]packedWeight
}

// Load creates the model's variables in store from the snapshot's weights: base weights under
// BaseScope named after their Hugging Face keys, non-trainable when lora.Rank > 0 (so absent from
// the optimizer state) and kept in their file dtype (bf16/f16 are converted to float32 inside the
// graph); with Rank 0 they are trainable and converted to float32 at load. Adapters (float32,
// trainable, A drawn from seed: 0 is a valid seed) go under LoRAScope. Every tensor's shape is
// checked against the config; a missing or misshaped tensor, or a non-finite value, is a one-line
// error. Reading stops with an error wrapping ctx.Err() once ctx is cancelled.
func Load(ctx context.Context, s *snapshot.Snapshot, store *gomlxmodel.Store, lora LoRA, seed int64) (*Model, error) {
	return load(ctx, s, store, lora, seed, QuantNone)
}

// Quantization values of LoadQuantized: how the frozen base's projections are held in memory.
const (
	// QuantNone: in their dtype (an NF4 snapshot is dequantized when read, hf/snapshot).
	QuantNone = "none"
	// QuantNF4: as bitsandbytes NF4 codes (QLoRA), dequantized inside each product's graph. The
	// codes of an NF4 snapshot are kept as stored; a bf16/f16/f32 base is quantized when loaded
	// (blocks of 64, double quantization, as bitsandbytes would).
	QuantNF4 = "nf4"
)

// LoadQuantized is Load with the layers' projection weights (q, k, v, o, gate, up, down) held
// as quantization says. QuantNF4 needs a frozen base (lora.Rank > 0): the codes are not
// trainable. A projection whose size is not a multiple of the block stays unpacked.
func LoadQuantized(ctx context.Context, s *snapshot.Snapshot, store *gomlxmodel.Store, lora LoRA, seed int64, quantization string) (*Model, error) {
	return load(ctx, s, store, lora, seed, quantization)
}

// NF4Weights returns the names of the base weights of s that LoadQuantized with QuantNF4 holds
// as NF4 codes, which a checkpoint trained so was trained on dequantized (tracksum-export merges into
// them).
func NF4Weights(s *snapshot.Snapshot) (map[string]bool, error) {
	cfg, err := configOf(s)
	if err != nil {
		return nil, err
	}
	return cfg.packed(), nil
}

// PackedWeights returns the names of the base weights held as NF4 codes, sorted.
func (m *Model) PackedWeights() []string { return sortedKeys(m.packed) }

// Config returns the model's architecture.
func (m *Model) Config() Config { return m.cfg }

// SetCompute sets how the model's graphs are computed (float32 without checkpoints until set).
func (m *Model) SetCompute(c Compute) { m.compute = c }

// ComputeSettings returns what SetCompute set.
func (m *Model) ComputeSettings() Compute { return m.compute }

// LoRA returns the adapter settings the model was loaded with.
func (m *Model) LoRA() LoRA { return m.lora }

// Hidden runs the decoder over tokens [B, T] (int32) with mask [B, T] (1 for real tokens, 0 for
// padding, any numeric dtype) and returns the final-norm hidden states [B, T, Hidden] in float32,
// as transformers' model(input_ids, attention_mask).last_hidden_state: positions 0..T-1 (RoPE), a
// causal mask, padded keys masked out, mistral's sliding window when set. Dropout of the adapters
// applies only when scope's store is training.
func (m *Model) Hidden(scope *gomlxmodel.Scope, tokens, mask *Node) *Node {
	return m.hidden(scope, tokens, mask)
}

// HiddenPacked runs the decoder over packed rows, several examples in each (padding-free
// packing): tokens [R, L] (int32), segments [R, L] (int32: the number of a token's example within
// its row, from 1; 0 for padding) and positions [R, L] (int32: the token's position within its
// example, from 0). A token attends to the tokens of its own example at or before it (and within
// the sliding window), at the RoPE positions of its example alone: each example's hidden states
// are those Hidden gives it unpacked. The examples of a row must be contiguous.
func (m *Model) HiddenPacked(scope *gomlxmodel.Scope, tokens, segments, positions *Node) *Node {
	return m.hiddenPacked(scope, tokens, segments, positions)
}

// Logits applies the LM head to hidden [..., Hidden]: embed_tokens when tied, else lm_head.weight;
// float32 [..., Vocab].
func (m *Model) Logits(scope *gomlxmodel.Scope, hidden *Node) *Node { return m.logits(scope, hidden) }

// LogitsOf is Logits' columns of the vocabulary entries ids: hidden [..., Hidden] -> [...,
// len(ids)] (float32), computed from those rows of the head only. Each id must be in the
// vocabulary.
func (m *Model) LogitsOf(hidden *Node, ids []int) *Node { return m.logitsOf(hidden, ids) }

// CausalLMLoss is transformers' causal LM loss: the mean cross-entropy of logits [B, T, V] at
// position t against labels [B, T] (int32) at t+1, over the label positions that are not -100
// (IgnoreLabel): the prompt and padding are masked by setting their labels to -100. A batch with
// no label is a loss of 0.
func CausalLMLoss(logits, labels *Node) *Node { return causalLMLoss(logits, labels) }

// IgnoreLabel is the label value excluded from the loss (PyTorch's ignore_index).
const IgnoreLabel = -100

// KVCache holds, for every layer, the rotated keys and the values of the tokens seen so far:
// Keys[l] and Values[l] are [B, KVHeads, MaxLen, HeadDim] in float32 (bfloat16 with Compute.BF16). A cache is a set of graph
// nodes: a generation loop passes the tensors out of one step's Exec into the next one.
type KVCache struct {
	Keys, Values []*Node
}

// CacheShapes returns the shapes of the 2*Layers cache tensors of a batch of batch sequences of up to
// maxLen tokens, in the order of Flatten (keys and values of layer 0, then layer 1, ...).
func (m *Model) CacheShapes(batch, maxLen int) []shapes.Shape { return m.cacheShapes(batch, maxLen) }

// NewCache returns an empty (zero) cache in graph g.
func (m *Model) NewCache(g *Graph, batch, maxLen int) *KVCache { return m.newCache(g, batch, maxLen) }

// Flatten lists the cache's nodes: keys and values of layer 0, then of layer 1, ...
func (c *KVCache) Flatten() []*Node { return c.flatten() }

// CacheFrom rebuilds a cache from the nodes of Flatten's order (e.g. an Exec's inputs).
func (m *Model) CacheFrom(nodes []*Node) *KVCache { return m.cacheFrom(nodes) }

// Step runs tokens [B, S] (int32) placed at cache slots offset .. offset+S-1 (offset: int32 scalar),
// with RoPE positions [B, S] (int32; transformers' generate uses cumsum(mask)-1) and keyMask
// [B, MaxLen] (1 for the slots holding real tokens, the new ones included). Each token attends to the
// real slots at or before its own (and within the sliding window). It returns the final-norm hidden
// states [B, S, Hidden] and the cache with the new keys and values written. A prefill is a Step with
// the whole prompt at offset 0; then one token per Step. The logits equal those of Hidden on the whole
// sequence.
func (m *Model) Step(scope *gomlxmodel.Scope, cache *KVCache, tokens, positions, keyMask, offset *Node) (hidden *Node, next *KVCache) {
	return m.step(scope, cache, tokens, positions, keyMask, offset)
}

// LoRAVariables returns the adapter variables by their PEFT key
// ("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight" -> A [Rank, in];
// "...lora_B.weight" -> B [out, Rank]); empty with Rank 0.
func (m *Model) LoRAVariables() map[string]*gomlxmodel.Variable { return m.adapters.Variables() }

// BaseVariables returns the checkpoint's weights by their Hugging Face key.
func (m *Model) BaseVariables() map[string]*gomlxmodel.Variable { return m.base }
