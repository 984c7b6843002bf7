package family

// Qwen3 dense models (Qwen3Config, modeling_qwen3.py): Llama's layer with an RMSNorm over each
// head of the queries and keys before RoPE, head_dim 128 by default (not hidden/heads), biases
// only with attention_bias.
func init() {
	Register(Family{
		ModelType: "qwen3", Kind: CausalLM,
		CausalLMClass: "Qwen3ForCausalLM", SequenceClassificationClass: "Qwen3ForSequenceClassification",
		LoRATargets:   llamaTargets,
		HeadDim:       128,
		ActivationKey: "hidden_act", Activation: "silu",
		SlidingWindow: SlidingWindowOptIn,
		Bias:          BiasFromConfig,
		QKNorm:        true,
	})
}
