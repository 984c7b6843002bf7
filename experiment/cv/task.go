package cv

import (
	"context"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/model/training"
)

// init registers the cross-validation of the tracker (tracksum-train --task tracker --folds K) and
// its final training (--final --folds-from CV), the summarizer's (--task summarizer --folds K), and
// the whole pipeline's (--task pipeline --folds K, a task that exists only cross-validated).
func init() {
	training.RegisterCrossValidation(training.CrossValidation{
		Task:         "tracker",
		Models:       trackerModels,
		DefaultModel: ModelTracker,
		ModelsUsage: "tracker: the configured tracker; lexical: the strong lexical baseline (word 1-2-gram TF-IDF + position, " +
			"balanced logistic regression, C = 10); lexical-calibrated, lexical-context: that baseline with per-aspect " +
			"calibration shifts or with the context rescorer",
		DefaultDevShare: DefaultDevShare,
		Run: func(ctx context.Context, cfg *config.Config, r training.Request) error {
			_, err := Run(ctx, cfg, Options{Data: r.Data, Out: r.Out, Folds: r.Folds, Model: r.Model, DevShare: r.DevShare,
				AllowChangedConfig: r.AllowChangedConfig, Log: r.Log})
			return err
		},
		Final: func(ctx context.Context, cfg *config.Config, r training.Request) error {
			_, _, err := Final(ctx, cfg, FinalOptions{Data: r.Data, Out: r.Out, CV: r.FoldsFrom,
				AllowChangedConfig: r.AllowChangedConfig, Log: r.Log})
			return err
		},
		FinalUsage: "one tracker on every abstract of --data (all splits; no held-out evaluation) for the lower median of the folds' best-on-dev steps (fold-k.json)",
	})
	training.RegisterCrossValidation(training.CrossValidation{
		Task:            "summarizer",
		Models:          []string{ModelSummarizer},
		DefaultModel:    ModelSummarizer,
		ModelsUsage:     "summarizer: the configured summarizer on gold citations, against copying them",
		DefaultDevShare: DefaultDevShare,
		Run: func(ctx context.Context, cfg *config.Config, r training.Request) error {
			_, err := RunSummarizer(ctx, cfg, Options{Data: r.Data, Out: r.Out, Folds: r.Folds, Model: r.Model, DevShare: r.DevShare,
				AllowChangedConfig: r.AllowChangedConfig, Log: r.Log})
			return err
		},
	})
	training.Register(training.Task{
		Name:    "pipeline",
		Section: "summarizer",
		Description: "Track-then-Sum as a whole, only with --folds K: cross-validates the tracker and the summarizer " +
			"(--cv-model table6: also TTS (+) f and the registered variants) and scores the pipelines with eval",
		Train: func(context.Context, *config.Config, training.Request) error {
			return cli.Usagef("--task pipeline needs --folds K (it cross-validates; train the tracker and the summarizer with --task tracker|summarizer)")
		},
	})
	training.RegisterCrossValidation(training.CrossValidation{
		Task:            "pipeline",
		Models:          []string{ModelTTS, ModelTable6},
		DefaultModel:    ModelTTS,
		ModelsUsage:     "tts: Track-then-Sum and tracker + copy; table6: also TTS (+) f and the registered variants (STT, ETE)",
		DefaultDevShare: DefaultDevShare,
		Run: func(ctx context.Context, cfg *config.Config, r training.Request) error {
			_, err := RunPipeline(ctx, cfg, Options{Data: r.Data, Out: r.Out, Folds: r.Folds, Model: r.Model, DevShare: r.DevShare,
				AllowChangedConfig: r.AllowChangedConfig, Log: r.Log})
			return err
		},
	})
}
