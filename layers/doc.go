// Package layers is the layer library of tracksum's models (tracker and summarizer): dense, layer
// norm, softmax, multi-head attention, feed-forward and dropout as GoMLX graph functions, with
// gradients laid out for the pure-Go backend (fastgrad.go).
//
// The ops (Dense, LayerNorm, SoftmaxLast, Product, ProductTransposed, AttentionScores,
// AttentionValues, SumLast, BroadcastRows) compute the same values as the GoMLX ops they replace
// and carry their own gradients; TestFastGradients compares both. The blocks of a Llama-style
// decoder (decoderblocks.go: RMSNorm, RoPE, GroupedAttention, GatedActivation, CrossEntropyRows),
// used by hf/decoder's float32 graph on the Go backend (DecoderFastPath), are differentiated as a
// whole the same way. The layers that own variables
// are methods of Vars, which fixes how a model names and initialises them, so that checkpoints
// written before this package existed keep loading: the tracker uses Scoped (a scope per dense
// layer with "weights" and "biases"), the summarizer Suffixed ("q_w", "q_b").
//
// Dropout is the models' one dropout: GoMLX's in an ordinary graph, and in the gradient graph of
// a data-parallel step (model/training) the full batch's mask restricted to the shard's rows.
//
// What is taken from GoMLX as it is: the activations (ml/layers/activation), dropout in an
// ordinary graph (ml/layers.DropoutStatic), the fused dense, layer-norm and softmax ops of the
// backend (their forward pass). Not taken: ml/layers.Dense and ml/nn.LayerNorm, whose gradients
// are the slow layouts this package replaces, and ml/layers/attention and ml/zoo/transformer,
// whose variable names differ from the models' checkpoints and whose attention products get
// GoMLX's gradients (a transpose after every product, softmax recomputed in float64).
//
// # Example
//
//	vars := layers.Scoped(0.02)
//	h := vars.LayerNorm(layer.In("attention_norm"), x)
//	x = Add(x, layers.Dropout(layer, vars.FusedSelfAttention(layer, h, keyBias, heads, "qkv", "attention_output"), rate))
//	h = vars.LayerNorm(layer.In("ffn_norm"), x)
//	x = Add(x, layers.Dropout(layer, vars.FeedForward(layer, h, ffnDim, "ffn_hidden", "ffn_output"), rate))
package layers
