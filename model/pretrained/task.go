package pretrained

import (
	"context"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/model/variant"
)

// loraRankUsage documents --lora-rank, the one adapter setting a user changes most (full
// fine-tuning); the others are TASK.lora.* keys (config file or TRACKSUM_TASK_LORA_* variables).
const loraRankUsage = "TASK.lora.rank with --pretrained: LoRA rank (default 16); 0 = full fine-tuning of every weight"

// pretrainedUsage documents --pretrained for every task it applies to (the flag is defined once).
const pretrainedUsage = "local Hugging Face snapshot to fine-tune (TASK.pretrained; docs/pretrained.md): tracker: a causal LM or a BERT encoder; " +
	"summarizer, sum_then_track, end_to_end: a causal LM (summarizer.pretrained); empty: train from scratch"

// init makes --pretrained DIR (tracker.pretrained / summarizer.pretrained) a backbone of
// tracksum-train's tasks tracker, summarizer, sum_then_track and end_to_end: with it set, the same
// --task fine-tunes the snapshot; without it, the from-scratch models train unchanged. For the
// Table 6 variants --pretrained sets summarizer.pretrained, the snapshot of both SUM-THEN-TRACK
// models unless tracker.pretrained names another for its pair tracker.
func init() {
	training.RegisterBackbone(training.Backbone{
		Task: "tracker",
		Flags: []training.TaskFlag{
			{Name: "pretrained", Key: "tracker.pretrained", Usage: pretrainedUsage},
			{Name: "head", Key: "tracker.head", Usage: "tracker.head with --pretrained: lm_cls, generative, encoder_cls or auto"},
			{Name: "lora-rank", Key: "tracker.lora.rank", Usage: loraRankUsage},
		},
		Description: "with --pretrained DIR: a fine-tuned Hugging Face model (lm_cls, generative or encoder_cls head)",
		Applies:     func(cfg *config.Config) bool { return cfg.Tracker.Pretrained != "" },
		Train: func(ctx context.Context, cfg *config.Config, r training.Request) error {
			return TrainTracker(ctx, cfg, r.Data, r.Out, training.OptionsOf[struct{}](r))
		},
		Plan: PlanTracker,
	})
	training.RegisterBackbone(training.Backbone{
		Task: "summarizer",
		Flags: []training.TaskFlag{
			{Name: "pretrained", Key: "summarizer.pretrained", Usage: pretrainedUsage},
			{Name: "lora-rank", Key: "summarizer.lora.rank", Usage: loraRankUsage},
		},
		Description: "with --pretrained DIR: a fine-tuned Hugging Face causal LM",
		Applies:     func(cfg *config.Config) bool { return cfg.Summarizer.Pretrained != "" },
		Train: func(ctx context.Context, cfg *config.Config, r training.Request) error {
			return TrainSummarizer(ctx, cfg, r.Data, r.Out, training.OptionsOf[struct{}](r))
		},
		Plan: PlanSummarizer,
	})
	training.RegisterBackbone(training.Backbone{
		Task: variant.SumThenTrack,
		Flags: []training.TaskFlag{
			{Name: "pretrained", Key: "summarizer.pretrained", Usage: pretrainedUsage},
			{Name: "head", Key: "tracker.head", Usage: "tracker.head with --pretrained: lm_cls, generative, encoder_cls or auto"},
			{Name: "lora-rank", Key: "summarizer.lora.rank", Usage: loraRankUsage},
		},
		Description: "with --pretrained DIR: a fine-tuned causal LM summarizer of the whole abstract and pair tracker (Table 18)",
		// tracker.pretrained alone selects it too, so that TrainSumThenTrack refuses it rather than
		// the from-scratch model ignoring it.
		Applies: func(cfg *config.Config) bool { return cfg.Summarizer.Pretrained != "" || cfg.Tracker.Pretrained != "" },
		Train: func(ctx context.Context, cfg *config.Config, r training.Request) error {
			return TrainSumThenTrack(ctx, cfg, r.Data, r.Out, training.OptionsOf[variant.Assign](r))
		},
	})
	training.RegisterBackbone(training.Backbone{
		Task: variant.EndToEnd,
		Flags: []training.TaskFlag{
			{Name: "pretrained", Key: "summarizer.pretrained", Usage: pretrainedUsage},
			{Name: "lora-rank", Key: "summarizer.lora.rank", Usage: loraRankUsage},
		},
		Description: "with --pretrained DIR: a fine-tuned causal LM writing summary and citation indices (Table 19)",
		Applies:     func(cfg *config.Config) bool { return cfg.Summarizer.Pretrained != "" },
		Train: func(ctx context.Context, cfg *config.Config, r training.Request) error {
			return TrainEndToEnd(ctx, cfg, r.Data, r.Out, training.OptionsOf[variant.Assign](r))
		},
	})
}
