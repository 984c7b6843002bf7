package family

// Gemma v1 (GemmaConfig, modeling_gemma.py): embeddings scaled by sqrt(hidden), RMSNorm by (1 + w),
// GeGLU with the tanh GELU read from hidden_activation, head_dim 256 and tied embeddings by
// default; biases only with attention_bias (GemmaConfig's key).
func init() {
	Register(Family{
		ModelType: "gemma", Kind: CausalLM,
		CausalLMClass: "GemmaForCausalLM", SequenceClassificationClass: "GemmaForSequenceClassification",
		LoRATargets:    llamaTargets,
		HeadDim:        256,
		TiedEmbeddings: true,
		ActivationKey:  "hidden_activation", Activation: "gelu_pytorch_tanh",
		Bias:            BiasFromConfig,
		NormPlusOne:     true,
		ScaleEmbeddings: true,
	})
}
