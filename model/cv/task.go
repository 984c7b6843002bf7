package cv

import (
	"context"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model/training"
)

// init registers the cross-validation of the tracker: tracksum-train --task tracker --folds K.
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
	})
}
