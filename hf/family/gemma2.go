package family

// Gemma 2 (Gemma2Config, modeling_gemma2.py): Gemma's norms and embedding scale, sandwich norms
// around attention and MLP, soft-capped attention scores (50) and logits (30), scores scaled by
// query_pre_attn_scalar, and a 4096 sliding window on every even layer.
func init() {
	Register(Family{
		ModelType: "gemma2", Kind: CausalLM,
		CausalLMClass: "Gemma2ForCausalLM", SequenceClassificationClass: "Gemma2ForSequenceClassification",
		LoRATargets:    llamaTargets,
		HeadDim:        256,
		TiedEmbeddings: true,
		ActivationKey:  "hidden_activation", Activation: "gelu_pytorch_tanh",
		SlidingWindow: SlidingWindowLayers, DefaultSlidingWindow: 4096, SlidingPattern: 2,
		QueryPreAttnScalar: 256,
		Softcapping:        true, AttnSoftcap: 50, FinalSoftcap: 30,
		Bias:            BiasFromConfig,
		NormPlusOne:     true,
		ScaleEmbeddings: true,
		SandwichNorms:   true,
	})
}
