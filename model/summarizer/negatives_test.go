package summarizer

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
)

// TestTrainNegatives (issue 36 item 3): with summarizer.train_negatives the summarizer trains on
// the train split's positives and negatives ("Unknown."), the paper's D_S; without, on the
// positives only. The dev split is the positives either way.
func TestTrainNegatives(t *testing.T) {
	cfg, err := config.ReadFile(filepath.Join("..", "..", "configs", "tiny.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	prep := preparetest.Dir(t, cfg)
	neg, err := dataset.SummarizerNegatives(prep, dataset.SplitTrain)
	if err != nil || len(neg) == 0 {
		t.Fatalf("negatives of the sample's train split: %d, %v", len(neg), err)
	}
	data, err := ReadData(prep)
	if err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{false, true} {
		c := *cfg
		c.Summarizer.TrainNegatives = on
		c.Summarizer.Train.MaxSteps, c.Summarizer.Train.EvalEvery, c.Summarizer.DevDecodeLimit = 1, 1, 1
		var log bytes.Buffer
		if _, _, err := Train(context.Background(), &c, prep, filepath.Join(t.TempDir(), "s"), TrainOptions{Log: &log}); err != nil {
			t.Fatal(err)
		}
		n := len(data.Train)
		if on {
			n += len(neg)
		}
		want := fmt.Sprintf("summarizer: %d train / %d dev examples", n+c.Summarizer.CopyExamples, len(data.Dev))
		if !strings.Contains(log.String(), want) {
			t.Errorf("train_negatives %v: log lacks %q:\n%s", on, want, log.String())
		}
	}
}
