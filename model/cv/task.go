package cv

import (
	"context"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model/training"
)

// init registers the cross-validation of the tracker (tracksum-train --task tracker --folds K) and
// its final training (--final --folds-from CV).
func init() {
	training.RegisterCrossValidation(training.CrossValidation{
		Task:            "tracker",
		Models:          []string{ModelTracker, ModelLexical},
		DefaultModel:    ModelTracker,
		ModelsUsage:     "tracker: the configured tracker; lexical: TF-IDF + logistic regression baseline",
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
}
