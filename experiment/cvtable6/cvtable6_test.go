package cvtable6

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
	"github.com/tracksum/tracksum/experiment/cv"
	"github.com/tracksum/tracksum/infer"
)

func TestMain(m *testing.M) { os.Exit(preparetest.Main(m)) }

// TestFolds runs both registered fold functions as the table6 harness does: train on a PMID
// assignment (the prepared test split held out), predict the held-out abstracts, one prediction
// per annotated aspect in order; a second call reuses the fold's finished checkpoint.
func TestFolds(t *testing.T) {
	ctx := context.Background()
	cfg, err := config.Load(viper.New(), "../../configs/tiny.yaml", pflag.NewFlagSet("t", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prepare.SampleSize = 40
	cfg.Summarizer.Train.MaxSteps, cfg.Summarizer.Train.EvalEvery, cfg.Summarizer.DevDecodeLimit = 3, 3, 2
	cfg.Tracker.Train.MaxSteps = 3
	dir, data := t.TempDir(), preparetest.Dir(t, cfg)
	split := map[string]string{}
	var heldOut []infer.Abstract
	for _, s := range dataset.Splits {
		abs, _, err := infer.ReadInput(data, s, dataset.AspectSetTracSum, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range abs {
			split[a.PMID] = s
		}
		if s == dataset.SplitTest {
			heldOut = abs
		}
	}
	want := 0
	for _, a := range heldOut {
		want += len(a.Aspects)
	}
	assign := func(pmid string) string {
		if s := split[pmid]; s != dataset.SplitTest {
			return s
		}
		return ""
	}
	for _, tc := range []struct {
		name string
		fold func(context.Context, *config.Config, cv.MethodFold) ([]dataset.Prediction, error)
	}{{"stt", sttFold}, {"ete", eteFold}} {
		t.Run(tc.name, func(t *testing.T) {
			f := cv.MethodFold{Data: data, K: 5, Fold: 0, Dir: filepath.Join(dir, tc.name, "fold-0"), Assign: assign,
				Abstracts: heldOut, Threshold: 0.5, Log: io.Discard}
			for range 2 {
				preds, err := tc.fold(ctx, cfg, f)
				if err != nil {
					t.Fatal(err)
				}
				if len(preds) != want {
					t.Fatalf("%d predictions, want %d", len(preds), want)
				}
				k := 0
				for _, a := range heldOut {
					for _, asp := range a.Aspects {
						if p := preds[k]; p.PMID != a.PMID || p.Aspect != asp {
							t.Fatalf("prediction %d is %s/%s, want %s/%s", k, p.PMID, p.Aspect, a.PMID, asp)
						}
						k++
					}
				}
			}
		})
	}
}
