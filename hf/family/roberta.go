package family

// RoBERTa encoders (RobertaConfig, modeling_roberta.py), built by hf/encoder: the evaluator's nli
// judge (RobertaForSequenceClassification snapshots, e.g. RoBERTa-large-MNLI). The encoder layers
// are BERT's, and so are the LoRA targets. The tracker does not train on RoBERTa (not FineTuned),
// so no RoBERTa checkpoint reaches tracksum-export.
func init() {
	Register(Family{
		ModelType: "roberta", Kind: Encoder,
		SequenceClassificationClass: "RobertaForSequenceClassification",
		Name:                        "RoBERTa", KeyPrefix: "roberta.",
		VocabSize: 50265, MaxPositions: 512, TypeVocabSize: 2, PadTokenID: 1, OffsetPositions: true,
		LoRATargets: []string{"dense", "query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense"},
		// PEFT's all-linear on a *ForSequenceClassification model: every Linear but the
		// classifier (the pooler's dense included), condensed to these suffixes.
		AllLinear:     []string{"query", "key", "value", "dense"},
		TargetAliases: bertTargetAliases,
	})
}
