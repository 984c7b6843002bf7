package family

// DeBERTa-v2 and DeBERTa-v3 encoders (DebertaV2Config, modeling_deberta_v2.py), built by hf/encoder
// for the evaluator's nli judge (DebertaV2ForSequenceClassification snapshots, e.g.
// cross-encoder/nli-deberta-v3-base, MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli). The defaults
// are DebertaV2Config's (relative_attention false, position_biased_input true, type_vocab_size 0,
// layer_norm_eps 1e-7; v3 snapshots set relative attention, position buckets and pos_att_type in
// their config.json). The LoRA targets are PEFT's names of the layers; hf/encoder does not train
// this family (Load refuses adapters: the judge does not fine-tune).
func init() {
	Register(Family{
		ModelType: "deberta-v2", Kind: Encoder,
		SequenceClassificationClass: "DebertaV2ForSequenceClassification",
		Name:                        "DeBERTa-v2", KeyPrefix: "deberta.",
		VocabSize: 128100, MaxPositions: 512, TypeVocabSize: 0, PadTokenID: 0,
		HiddenSize: 1536, NumLayers: 24, NumHeads: 24, IntermediateSize: 6144, LayerNormEps: 1e-7,
		Disentangled: true,
		LoRATargets:  []string{"query_proj", "key_proj", "value_proj", "dense"},
	})
}
