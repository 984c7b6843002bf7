package summarizer

import (
	"context"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model/training"
)

// init registers the summarizer as tracksum-train's task "summarizer" (settings: config section
// summarizer).
func init() {
	training.Register(training.Task{
		Name:        "summarizer",
		Section:     "summarizer",
		Description: "aspect summary of the tracked sentences (Sum): encoder-decoder with a copy mechanism",
		Train: func(ctx context.Context, cfg *config.Config, r training.Request) error {
			_, _, err := Train(ctx, cfg, r.Data, r.Out, training.OptionsOf[*Data](r))
			return err
		},
	})
}
