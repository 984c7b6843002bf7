// Package cvtable6 adds SUM-THEN-TRACK (model/stt) and END-TO-END (model/ete) to the table6
// pipeline cross-validation of experiment/cv (tracksum-train --task pipeline --folds K --cv-model
// table6): per fold, each variant is trained on the fold's train part (selected on its dev part)
// and predicts the held-out abstracts. It is its own package because the variants cannot import
// experiment/cv: cv imports infer, which imports the variants for --method stt|ete. cmd/train links it
// in with a blank import.
package cvtable6

import (
	"context"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/experiment/cv"
	"github.com/tracksum/tracksum/model/ete"
	"github.com/tracksum/tracksum/model/stt"
)

func init() {
	cv.RegisterPipelineMethod(cv.PipelineMethod{Name: "stt", Label: "STT", Fold: sttFold, Config: stt.Config})
	cv.RegisterPipelineMethod(cv.PipelineMethod{Name: "ete", Label: "ETE", Fold: eteFold, Config: ete.Config})
}

// sttFold trains SUM-THEN-TRACK on fold f (resuming what f.Dir holds) and predicts its held-out
// abstracts with the pipeline's citation threshold.
func sttFold(ctx context.Context, cfg *config.Config, f cv.MethodFold) ([]dataset.Prediction, error) {
	m, _, err := stt.Train(ctx, cfg, f.Data, f.Dir, stt.TrainOptions{Log: f.Log, Data: f.Assign, AllowChangedConfig: f.AllowChangedConfig})
	if err != nil {
		return nil, err
	}
	m.Threshold = f.Threshold
	return predictAll(f, m.Predict)
}

// eteFold trains END-TO-END on fold f (resuming what f.Dir holds) and predicts its held-out
// abstracts.
func eteFold(ctx context.Context, cfg *config.Config, f cv.MethodFold) ([]dataset.Prediction, error) {
	m, _, err := ete.Train(ctx, cfg, f.Data, f.Dir, ete.TrainOptions{Log: f.Log, Data: f.Assign, AllowChangedConfig: f.AllowChangedConfig})
	if err != nil {
		return nil, err
	}
	return predictAll(f, m.Predict)
}

// predictAll predicts every held-out abstract of f, one prediction per annotated aspect, in order.
func predictAll(f cv.MethodFold, predict func(pmid string, doc, aspects []string) ([]dataset.Prediction, error)) ([]dataset.Prediction, error) {
	var out []dataset.Prediction
	for _, a := range f.Abstracts {
		ps, err := predict(a.PMID, a.Document, a.Aspects)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}
