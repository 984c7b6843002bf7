package tracker

import (
	"context"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model/training"
)

// init registers the tracker as tracksum-train's task "tracker" (settings: config section tracker).
func init() {
	training.Register(training.Task{
		Name:        "tracker",
		Section:     "tracker",
		Description: "sentence relevance per aspect (Track): lexical-context (TF-IDF + logistic regression + context rescorer, default), or a transformer or n-gram encoder with a lexical head",
		Flags:       []training.TaskFlag{{Name: "architecture", Key: "tracker.architecture", Usage: "tracker.architecture: lexical-context (default), transformer or ngram"}},
		Train: func(ctx context.Context, cfg *config.Config, r training.Request) error {
			_, _, err := Train(ctx, cfg, r.Data, r.Out, training.OptionsOf[*Data](r))
			return err
		},
	})
}
