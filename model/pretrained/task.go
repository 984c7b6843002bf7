package pretrained

import (
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model/training"
)

// loraRankUsage documents --lora-rank, the one adapter setting a user changes most (full
// fine-tuning); the others are TASK.lora.* keys (config file or TRACKSUM_TASK_LORA_* variables).
const loraRankUsage = "TASK.lora.rank with --pretrained: LoRA rank (default 16); 0 = full fine-tuning of every weight"

// init makes --pretrained DIR (tracker.pretrained / summarizer.pretrained) a variant of
// tracksum-train's tasks tracker and summarizer: with it set, the same --task fine-tunes the
// snapshot; without it, the from-scratch models train unchanged.
func init() {
	training.RegisterVariant(training.Variant{
		Task: "tracker",
		Flags: []training.TaskFlag{
			{Name: "pretrained", Key: "tracker.pretrained", Usage: "TASK.pretrained: local Hugging Face snapshot to fine-tune (docs/pretrained.md); empty: train from scratch"},
			{Name: "head", Key: "tracker.head", Usage: "tracker.head with --pretrained: lm_cls, generative, encoder_cls or auto"},
			{Name: "lora-rank", Key: "tracker.lora.rank", Usage: loraRankUsage},
		},
		Description: "with --pretrained DIR: a fine-tuned Hugging Face model (lm_cls, generative or encoder_cls head)",
		Applies:     func(cfg *config.Config) bool { return cfg.Tracker.Pretrained != "" },
		Train:       TrainTracker,
	})
	training.RegisterVariant(training.Variant{
		Task: "summarizer",
		Flags: []training.TaskFlag{
			{Name: "pretrained", Key: "summarizer.pretrained", Usage: "TASK.pretrained: local Hugging Face snapshot to fine-tune (docs/pretrained.md); empty: train from scratch"},
			{Name: "lora-rank", Key: "summarizer.lora.rank", Usage: loraRankUsage},
		},
		Description: "with --pretrained DIR: a fine-tuned Hugging Face causal LM",
		Applies:     func(cfg *config.Config) bool { return cfg.Summarizer.Pretrained != "" },
		Train:       TrainSummarizer,
	})
}
