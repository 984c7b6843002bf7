package training

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tracksum/tracksum/config"
)

// scripted replaces o's Evaluate by one returning, at its i-th call, accuracy acc[i] and loss
// loss[i] (the last ones once past the end).
func scripted(o *Options, acc, loss []float64) {
	i := 0
	o.Evaluate = func(context.Context) (Metrics, error) {
		k := min(i, len(acc)-1)
		i++
		return Metrics{"accuracy": acc[k], "loss": loss[k]}, nil
	}
}

// TestSelectBy (issue 36 item 4): train.select_by eval_loss picks the evaluation with the lowest
// dev loss, as the released scripts' load_best_model_at_end; metric picks the model's score.
func TestSelectBy(t *testing.T) {
	for _, tc := range []struct {
		desc, selectBy string
		want           int
	}{
		{"metric: the best accuracy", config.SelectByMetric, 16},
		{"eval_loss: the lowest loss", config.SelectByEvalLoss, 24},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			loop := toyLoop()
			loop.EvalEvery, loop.SelectBy = 8, tc.selectBy
			o, _ := toyOptions(t, t.TempDir(), loop)
			scripted(&o, []float64{0.5, 0.9, 0.6, 0.7}, []float64{0.9, 0.8, 0.3, 0.5})
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if res.BestStep != tc.want {
				t.Errorf("best step %d, want %d", res.BestStep, tc.want)
			}
		})
	}
}

// TestKeepCheckpoints (issue 36 item 5): train.keep_checkpoints 2 keeps the variables of the last
// two evaluations beside best/, each in a best/ of its own; 0 keeps none.
func TestKeepCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		desc string
		keep int
		want []string
	}{
		{"last two", 2, []string{"step-0000024", "step-0000032"}},
		{"none", 0, nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			loop := toyLoop()
			loop.EvalEvery, loop.KeepCheckpoints = 8, tc.keep
			o, _ := toyOptions(t, dir, loop)
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(filepath.Join(dir, CheckpointsDir))
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
				for _, f := range []string{BestVariables, "metrics.json"} {
					if _, err := os.Stat(filepath.Join(dir, CheckpointsDir, e.Name(), BestDir, f)); err != nil {
						t.Error(err)
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
		})
	}
}
