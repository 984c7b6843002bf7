package family

// Mistral 7B (MistralConfig, modeling_mistral.py): Llama's layer with a sliding window on every
// layer, 4096 when config.json omits it.
func init() {
	Register(Family{
		ModelType: "mistral", Kind: CausalLM,
		CausalLMClass: "MistralForCausalLM", SequenceClassificationClass: "MistralForSequenceClassification",
		LoRATargets:   llamaTargets,
		ActivationKey: "hidden_act", Activation: "silu",
		SlidingWindow: SlidingWindowAll, DefaultSlidingWindow: 4096,
		Bias: BiasNone,
	})
}
