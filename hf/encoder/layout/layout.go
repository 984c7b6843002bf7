// Package layout is the tensor layout of hf/encoder's encoders (BERT, RoBERTa, DeBERTa-v2): the
// weights, under Hugging Face's keys and with their dimensions, that a config of given sizes and
// features holds. It is the one list: hf/encoder loads exactly these tensors (encoder.Config embeds
// a Layout), and hf/randsnap writes them, so that the two cannot drift. It is its own package
// because hf/encoder's tests write random snapshots with hf/randsnap.
package layout

import (
	"fmt"
	"strings"
)

// Layout is what decides an encoder's tensors: its sizes and the DeBERTa-v2 features.
type Layout struct {
	// Vocab is vocab_size.
	Vocab int
	// Hidden is hidden_size.
	Hidden int
	// Layers is num_hidden_layers.
	Layers int
	// Intermediate is intermediate_size.
	Intermediate int
	// MaxPositions is max_position_embeddings: the longest input.
	MaxPositions int
	// TypeVocab is type_vocab_size (2: segments A and B).
	TypeVocab int

	// DeBERTa-v2 (family.Family.Disentangled; the fields below are zero for BERT and RoBERTa).

	// Disentangled selects DeBERTa-v2's encoder (hf/encoder's deberta.go).
	Disentangled bool
	// EmbeddingSize is embedding_size (default Hidden): the width of the embedding tables, mapped to
	// Hidden by embeddings.embed_proj when it differs.
	EmbeddingSize int
	// PositionBiasedInput is position_biased_input (default true): absolute position embeddings are
	// added to the word embeddings. Without them (DeBERTa-v3) the model has no length limit of its
	// own.
	PositionBiasedInput bool
	// RelativeAttention is relative_attention (default false).
	RelativeAttention bool
	// MaxRelativePositions is max_relative_positions, max_position_embeddings when below 1.
	MaxRelativePositions int
	// PositionBuckets is position_buckets, 0 when not positive (no log buckets).
	PositionBuckets int
	// C2P and P2C: pos_att_type names "c2p" (content to position) and "p2c" (position to content).
	C2P, P2C bool
	// ShareAttKey is share_att_key: the relative embeddings go through query_proj and key_proj
	// instead of pos_query_proj and pos_key_proj.
	ShareAttKey bool
	// NormRelEmbed: norm_rel_ebd names "layer_norm" (encoder.LayerNorm on the relative embeddings).
	NormRelEmbed bool
	// ConvKernel is conv_kernel_size (0: none): DeBERTa-v2-xlarge's ConvLayer, a Conv1d over the
	// embeddings added to the first layer's output.
	ConvKernel int
}

// Linear is one Linear module: its key relative to the encoder's prefix (without ".weight") and
// its shape [Out, In]. Every Linear of an encoder has a bias.
type Linear struct {
	Key     string
	Out, In int
}

// LayerKey returns the key prefix of layer i (relative to the encoder's prefix).
func LayerKey(i int) string { return fmt.Sprintf("encoder.layer.%d", i) }

// AttentionSpan is the number of relative positions on each side of DeBERTa's relative
// embeddings (rel_embeddings has 2 * AttentionSpan rows): position_buckets, or
// max_relative_positions without buckets.
func (l Layout) AttentionSpan() int {
	if l.PositionBuckets > 0 {
		return l.PositionBuckets
	}
	return l.MaxRelativePositions
}

// Linears lists the Linear modules of layer i in a fixed order: the attention's projections
// (BERT's query, key, value; DeBERTa's *_proj and, under relative attention without shared keys,
// its pos_*_proj), then attention.output.dense, intermediate.dense and output.dense.
func (l Layout) Linears(i int) []Linear {
	p := LayerKey(i)
	var out []Linear
	if l.Disentangled {
		out = []Linear{
			{p + ".attention.self.query_proj", l.Hidden, l.Hidden},
			{p + ".attention.self.key_proj", l.Hidden, l.Hidden},
			{p + ".attention.self.value_proj", l.Hidden, l.Hidden},
		}
		if l.RelativeAttention && !l.ShareAttKey {
			if l.C2P {
				out = append(out, Linear{p + ".attention.self.pos_key_proj", l.Hidden, l.Hidden})
			}
			if l.P2C {
				out = append(out, Linear{p + ".attention.self.pos_query_proj", l.Hidden, l.Hidden})
			}
		}
	} else {
		out = []Linear{
			{p + ".attention.self.query", l.Hidden, l.Hidden},
			{p + ".attention.self.key", l.Hidden, l.Hidden},
			{p + ".attention.self.value", l.Hidden, l.Hidden},
		}
	}
	return append(out,
		Linear{p + ".attention.output.dense", l.Hidden, l.Hidden},
		Linear{p + ".intermediate.dense", l.Intermediate, l.Hidden},
		Linear{p + ".output.dense", l.Hidden, l.Intermediate},
	)
}

// Pooler is the pooler's Linear: BertPooler's, or DeBERTa's ContextPooler's.
func (l Layout) Pooler() Linear { return Linear{"pooler.dense", l.Hidden, l.Hidden} }

// Head returns the classification head of a *ForSequenceClassification checkpoint with labels
// outputs, top-level keys in the order it applies them: RobertaClassificationHead's
// classifier.dense [Hidden, Hidden] and classifier.out_proj [labels, Hidden] when dense, else one
// classifier [labels, Hidden] over the pooled vector (BERT's, DeBERTa's).
func (l Layout) Head(labels int, dense bool) []Linear {
	if dense {
		return []Linear{{"classifier.dense", l.Hidden, l.Hidden}, {"classifier.out_proj", labels, l.Hidden}}
	}
	return []Linear{{"classifier", labels, l.Hidden}}
}

// TopLevel reports whether the tensor of relative key rel stands outside the encoder's prefix:
// DeBERTa's ContextPooler, which DebertaV2ForSequenceClassification keeps beside its "deberta."
// model ("pooler.dense").
func (l Layout) TopLevel(rel string) bool {
	return l.Disentangled && strings.HasPrefix(rel, "pooler.")
}

// Tensors returns every weight the encoder reads (keys relative to the prefix) with its
// dimensions: the embeddings the layout has, the layers and, when withPooler, the pooler's.
func (l Layout) Tensors(withPooler bool) map[string][]int {
	want := l.embeddings()
	lins := []Linear{}
	for i := range l.Layers {
		lins = append(lins, l.Linears(i)...)
		for _, n := range []string{".attention.output.LayerNorm", ".output.LayerNorm"} {
			want[LayerKey(i)+n+".weight"] = []int{l.Hidden}
			want[LayerKey(i)+n+".bias"] = []int{l.Hidden}
		}
	}
	if withPooler {
		lins = append(lins, l.Pooler())
	}
	for _, lin := range lins {
		want[lin.Key+".weight"] = []int{lin.Out, lin.In}
		want[lin.Key+".bias"] = []int{lin.Out}
	}
	return want
}

// embeddings are the tensors before the layers: BERT's word, position and token-type embeddings
// and their LayerNorm; for DeBERTa the embeddings the config asks for, the embedding projection,
// the ConvLayer and the relative embeddings (and their LayerNorm) under relative attention.
func (l Layout) embeddings() map[string][]int {
	if !l.Disentangled {
		return map[string][]int{
			"embeddings.word_embeddings.weight":       {l.Vocab, l.Hidden},
			"embeddings.position_embeddings.weight":   {l.MaxPositions, l.Hidden},
			"embeddings.token_type_embeddings.weight": {l.TypeVocab, l.Hidden},
			"embeddings.LayerNorm.weight":             {l.Hidden},
			"embeddings.LayerNorm.bias":               {l.Hidden},
		}
	}
	want := map[string][]int{
		"embeddings.word_embeddings.weight": {l.Vocab, l.EmbeddingSize},
		"embeddings.LayerNorm.weight":       {l.Hidden},
		"embeddings.LayerNorm.bias":         {l.Hidden},
	}
	if l.PositionBiasedInput {
		want["embeddings.position_embeddings.weight"] = []int{l.MaxPositions, l.EmbeddingSize}
	}
	if l.TypeVocab > 0 {
		want["embeddings.token_type_embeddings.weight"] = []int{l.TypeVocab, l.EmbeddingSize}
	}
	if l.EmbeddingSize != l.Hidden {
		want["embeddings.embed_proj.weight"] = []int{l.Hidden, l.EmbeddingSize}
	}
	if l.ConvKernel > 0 {
		want["encoder.conv.conv.weight"] = []int{l.Hidden, l.Hidden, l.ConvKernel}
		want["encoder.conv.conv.bias"] = []int{l.Hidden}
		want["encoder.conv.LayerNorm.weight"] = []int{l.Hidden}
		want["encoder.conv.LayerNorm.bias"] = []int{l.Hidden}
	}
	if l.RelativeAttention {
		want["encoder.rel_embeddings.weight"] = []int{2 * l.AttentionSpan(), l.Hidden}
		if l.NormRelEmbed {
			want["encoder.LayerNorm.weight"] = []int{l.Hidden}
			want["encoder.LayerNorm.bias"] = []int{l.Hidden}
		}
	}
	return want
}
