package family

// BERT encoders (BertConfig, modeling_bert.py), built by hf/encoder: the tracker's encoder
// backbone. Targets are matched as PEFT matches them, by suffix: "dense" names the attention output,
// intermediate and output layers alike, "output.dense" the last two. The Llama names of the
// config's default targets select BERT's layers of the same role (gate_proj none: the feed-forward
// block is ungated).
func init() {
	Register(Family{
		ModelType: "bert", Kind: Encoder,
		SequenceClassificationClass: "BertForSequenceClassification",
		Name:                        "BERT", KeyPrefix: "bert.",
		VocabSize: 30522, MaxPositions: 512, TypeVocabSize: 2, PadTokenID: 0,
		LoRATargets: []string{"dense", "query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense"},
		// PEFT's all-linear on a *ForSequenceClassification model: every Linear but the
		// classifier (the pooler's dense included), condensed to these suffixes.
		AllLinear:     []string{"query", "key", "value", "dense"},
		FineTuned:     true,
		TargetAliases: bertTargetAliases,
	})
}

// bertTargetAliases are the Llama names of BERT's layers, shared by the families with BERT's
// encoder layers (RoBERTa).
var bertTargetAliases = map[string]string{
	"q_proj": "query", "k_proj": "key", "v_proj": "value", "o_proj": "attention.output.dense",
	"up_proj": "intermediate.dense", "down_proj": "output.dense", "gate_proj": "",
}
