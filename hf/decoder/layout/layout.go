// Package layout is the tensor layout of hf/decoder's causal LMs: the weights, under Hugging Face's
// keys and with their dimensions, that a config of given sizes and family features holds. It is the
// one list: hf/decoder loads exactly these tensors (decoder.Config embeds a Layout), and hf/randsnap
// writes them, so a family added to hf/family and hf/decoder needs no change in randsnap. It is its
// own package because hf/decoder's tests write random snapshots with hf/randsnap.
package layout

import (
	"fmt"

	"github.com/tracksum/tracksum/hf/family"
)

// Layout is what decides a decoder's tensors: its sizes, biases and the family's layout features.
type Layout struct {
	// Vocab is vocab_size.
	Vocab int
	// Hidden is hidden_size.
	Hidden int
	// Layers is num_hidden_layers.
	Layers int
	// Heads is num_attention_heads.
	Heads int
	// KVHeads is num_key_value_heads (grouped-query attention; = Heads when absent).
	KVHeads int
	// HeadDim is head_dim when set (gemma, some mistral), else Hidden/Heads.
	HeadDim int
	// Intermediate is intermediate_size (the MLP's gate/up width).
	Intermediate int
	// TieWordEmbeddings: the LM head is embed_tokens (no lm_head.weight).
	TieWordEmbeddings bool
	// AttentionBias: q_proj, k_proj and v_proj (and o_proj for llama's attention_bias) have biases.
	// qwen2 always has q/k/v biases and no o_proj bias.
	AttentionBias bool
	// OProjBias: o_proj has a bias (llama with attention_bias true).
	OProjBias bool
	// MLPBias: gate/up/down projections have biases (llama's mlp_bias).
	MLPBias bool
	// QKNorm and SandwichNorms are the family's norm weights beyond Llama's (hf/family): per-head
	// RMSNorm of queries and keys, norms around the attention and MLP outputs.
	QKNorm, SandwichNorms bool
	// FusedQKV and FusedGateUp: qkv_proj and gate_up_proj instead of q/k/v_proj and
	// gate/up_proj (Phi-3).
	FusedQKV, FusedGateUp bool
}

// SetFamily sets the layout features of family f, with the biases as f reads them: attentionBias
// and mlpBias are config.json's attention_bias and mlp_bias, which only a family with
// family.BiasFromConfig reads.
func (l *Layout) SetFamily(f family.Family, attentionBias, mlpBias bool) {
	l.QKNorm, l.SandwichNorms = f.QKNorm, f.SandwichNorms
	l.FusedQKV, l.FusedGateUp = f.FusedQKV, f.FusedGateUp
	l.AttentionBias, l.OProjBias, l.MLPBias = false, false, false
	switch f.Bias {
	case family.BiasQKV:
		l.AttentionBias = true // Qwen2Attention: q/k/v with bias, o without
	case family.BiasFromConfig:
		l.AttentionBias, l.OProjBias, l.MLPBias = attentionBias, attentionBias, mlpBias
	}
}

// Projection is one linear module of a layer: its Hugging Face key prefix (without ".weight"),
// module name (the LoRA target name), shape [Out, In] and whether it has a bias.
type Projection struct {
	Key     string
	Module  string
	Out, In int
	Bias    bool
}

// LayerKey returns the key prefix of layer i.
func LayerKey(i int) string { return fmt.Sprintf("model.layers.%d", i) }

// Projections lists the linear modules of layer i, in a fixed order: q, k, v (or the fused qkv),
// o, gate, up (or the fused gate_up), down.
func (l Layout) Projections(i int) []Projection {
	p := LayerKey(i)
	q, kv := l.Heads*l.HeadDim, l.KVHeads*l.HeadDim
	var out []Projection
	if l.FusedQKV {
		out = append(out, Projection{p + ".self_attn.qkv_proj", "qkv_proj", q + 2*kv, l.Hidden, l.AttentionBias})
	} else {
		out = append(out,
			Projection{p + ".self_attn.q_proj", "q_proj", q, l.Hidden, l.AttentionBias},
			Projection{p + ".self_attn.k_proj", "k_proj", kv, l.Hidden, l.AttentionBias},
			Projection{p + ".self_attn.v_proj", "v_proj", kv, l.Hidden, l.AttentionBias})
	}
	out = append(out, Projection{p + ".self_attn.o_proj", "o_proj", l.Hidden, q, l.OProjBias})
	if l.FusedGateUp {
		out = append(out, Projection{p + ".mlp.gate_up_proj", "gate_up_proj", 2 * l.Intermediate, l.Hidden, l.MLPBias})
	} else {
		out = append(out,
			Projection{p + ".mlp.gate_proj", "gate_proj", l.Intermediate, l.Hidden, l.MLPBias},
			Projection{p + ".mlp.up_proj", "up_proj", l.Intermediate, l.Hidden, l.MLPBias})
	}
	return append(out, Projection{p + ".mlp.down_proj", "down_proj", l.Hidden, l.Intermediate, l.MLPBias})
}

// Tensors returns every weight the layout holds, with its dimensions.
func (l Layout) Tensors() map[string][]int {
	want := map[string][]int{
		"model.embed_tokens.weight": {l.Vocab, l.Hidden},
		"model.norm.weight":         {l.Hidden},
	}
	if !l.TieWordEmbeddings {
		want["lm_head.weight"] = []int{l.Vocab, l.Hidden}
	}
	for i := range l.Layers {
		k := LayerKey(i)
		want[k+".input_layernorm.weight"] = []int{l.Hidden}
		want[k+".post_attention_layernorm.weight"] = []int{l.Hidden}
		if l.SandwichNorms {
			want[k+".pre_feedforward_layernorm.weight"] = []int{l.Hidden}
			want[k+".post_feedforward_layernorm.weight"] = []int{l.Hidden}
		}
		if l.QKNorm {
			want[k+".self_attn.q_norm.weight"] = []int{l.HeadDim}
			want[k+".self_attn.k_norm.weight"] = []int{l.HeadDim}
		}
		for _, p := range l.Projections(i) {
			want[p.Key+".weight"] = []int{p.Out, p.In}
			if p.Bias {
				want[p.Key+".bias"] = []int{p.Out}
			}
		}
	}
	return want
}
