package family

// llamaTargets are the linear layers of a Llama-style decoder layer, shared by the families that
// kept Llama's module names.
var llamaTargets = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// Llama 2 / 3.x, SmolLM2, TinyLlama (transformers' LlamaConfig, modeling_llama.py).
func init() {
	Register(Family{
		ModelType: "llama", Kind: CausalLM,
		CausalLMClass: "LlamaForCausalLM", SequenceClassificationClass: "LlamaForSequenceClassification",
		LoRATargets:   llamaTargets,
		ActivationKey: "hidden_act", Activation: "silu",
		Bias: BiasFromConfig,
	})
}
