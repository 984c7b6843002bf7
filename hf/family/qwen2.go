package family

// Qwen2 / Qwen2.5 (Qwen2Config, modeling_qwen2.py): biases on q, k and v; the per-layer sliding
// window only with use_sliding_window.
func init() {
	Register(Family{
		ModelType: "qwen2", Kind: CausalLM,
		CausalLMClass: "Qwen2ForCausalLM", SequenceClassificationClass: "Qwen2ForSequenceClassification",
		LoRATargets:   llamaTargets,
		ActivationKey: "hidden_act", Activation: "silu",
		SlidingWindow: SlidingWindowOptIn,
		Bias:          BiasQKV,
	})
}
