package family

// Phi-3 (Phi3Config, modeling_phi3.py; Phi-3-mini-4k-instruct's shape): Llama's layer with the
// query, key and value projections fused into qkv_proj and the gate and up projections into
// gate_up_proj, so those are its LoRA targets; a sliding window on every layer when config.json
// sets one. The 128k variants' longrope rope_scaling is refused at load.
func init() {
	Register(Family{
		ModelType: "phi3", Kind: CausalLM,
		CausalLMClass: "Phi3ForCausalLM", SequenceClassificationClass: "Phi3ForSequenceClassification",
		LoRATargets:   []string{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"},
		ActivationKey: "hidden_act", Activation: "silu",
		SlidingWindow: SlidingWindowAll,
		Bias:          BiasNone,
		FusedQKV:      true, FusedGateUp: true,
	})
}
