package family

// Gemma 3 text models (Gemma3TextConfig, modeling_gemma3.py's Gemma3ForCausalLM: gemma-3-1b and the
// text tower of the larger ones): Gemma 2's layer without soft-capping (null by default), per-head
// q/k norms with Gemma's (1 + w), five sliding layers (window 4096, RoPE base rope_local_base_freq)
// for one global layer (rope_theta 1e6 with rope_scaling).
func init() {
	Register(Family{
		ModelType: "gemma3_text", Kind: CausalLM,
		CausalLMClass: "Gemma3ForCausalLM", SequenceClassificationClass: "Gemma3TextForSequenceClassification",
		LoRATargets:    llamaTargets,
		HeadDim:        256,
		TiedEmbeddings: true,
		ActivationKey:  "hidden_activation", Activation: "gelu_pytorch_tanh",
		SlidingWindow: SlidingWindowLayers, DefaultSlidingWindow: 4096, SlidingPattern: 6,
		RopeTheta: 1e6, LocalRopeTheta: 10000,
		QueryPreAttnScalar: 256,
		Softcapping:        true,
		Bias:               BiasFromConfig,
		NormPlusOne:        true,
		ScaleEmbeddings:    true,
		QKNorm:             true,
		SandwichNorms:      true,
	})
}
