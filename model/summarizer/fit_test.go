package summarizer

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified.
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	tsmodel "github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/training"
)

// toyBackbone learns one weight w towards 1 (one batch an epoch) and answers its dev instances
// perfectly at exactly one evaluation (perfectAt, 0-based), wrong at the others, so that Fit
// must select that evaluation and load its w back.
type toyBackbone struct {
	t         *testing.T
	store     *gomlxmodel.Store
	refs      []string
	perfectAt int
	decoded   []int     // n of each DevSummaries call
	short     bool      // DevSummaries returns one summary too few
	w         []float32 // w at each DevSummaries call
}

func (b *toyBackbone) weight() float32 {
	b.t.Helper()
	v := b.store.GetVariable(tsmodel.ModelScope + "/w")
	if v == nil {
		b.t.Fatal("no variable w")
	}
	t, err := v.Value()
	if err != nil {
		b.t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](t)[0]
}

func (b *toyBackbone) Training() training.Options {
	backend, _, err := tsmodel.Backend()
	if err != nil {
		b.t.Fatal(err)
	}
	return training.Options{Backend: backend, Store: b.store,
		Loss: func(scope *gomlxmodel.Scope, in []*Node) *Node {
			w := scope.VariableWithValue("w", []float32{0}).NodeValue(in[0].Graph())
			return ReduceAllMean(Square(Sub(Mul(w, in[0]), OnesLike(in[0]))))
		},
		Batches: func(int) ([]training.Batch, error) {
			return []training.Batch{{Inputs: []any{[]float32{1}}, Examples: 1, Tokens: 1}}, nil
		}}
}

func (b *toyBackbone) DevLoss(context.Context) (float64, error) { return 0.5, nil }

func (b *toyBackbone) DevSummaries(_ context.Context, n int) ([]string, training.Metrics, error) {
	out := slices.Clone(b.refs[:n])
	if len(b.decoded) != b.perfectAt {
		for i := range out {
			out[i] = "unrelated words"
		}
	}
	if b.short {
		out = out[1:]
	}
	b.decoded, b.w = append(b.decoded, n), append(b.w, b.weight())
	return out, training.Metrics{"citation_f1": 0.25}, nil
}

func TestFitEvaluatesSelectsAndLoadsBest(t *testing.T) {
	refs := []string{"patients improved", "no adverse events were seen", "mortality fell"}
	for _, tc := range []struct {
		desc      string
		refs      []string
		limit     int
		rouge12   bool
		wantN     int // instances decoded at each evaluation; 0: DevSummaries is not called
		wantDev   []string
		perfectAt int
	}{
		{desc: "dev_decode_limit caps the decoded instances", refs: refs, limit: 2, wantN: 2, perfectAt: 1,
			wantDev: []string{"citation_f1", "loss", "rougeL"}},
		{desc: "limit 0 decodes all, with ROUGE-1 and ROUGE-2", refs: refs, rouge12: true, wantN: 3, perfectAt: 1,
			wantDev: []string{"citation_f1", "loss", "rouge1", "rouge2", "rougeL"}},
		{desc: "no dev instances score 0 without decoding", wantDev: []string{"loss", "rougeL"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			b := &toyBackbone{t: t, store: gomlxmodel.NewStore(), refs: tc.refs, perfectAt: tc.perfectAt}
			loop := config.DefaultTrainLoop()
			loop.Epochs, loop.BatchSize, loop.WarmupSteps, loop.LearningRate, loop.Patience, loop.EvalEvery = 3, 1, 0, 0.1, 0, 1
			res, err := Fit(context.Background(), b, FitOptions{TaskRun: training.TaskRun{Name: "toy", Loop: loop, Seed: 1, OutDir: t.TempDir(), Log: testLog(t)},
				Refs: tc.refs, DevDecodeLimit: tc.limit, ROUGE12: tc.rouge12})
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(maps.Keys(res.Best)); !slices.Equal(got, tc.wantDev) {
				t.Errorf("dev metrics %v, want %v", got, tc.wantDev)
			}
			if tc.wantN == 0 {
				if len(b.decoded) != 0 || res.Best["rougeL"] != 0 || res.Best["loss"] != 0 {
					t.Errorf("decoded %v, best %v; want no decoding and zero scores", b.decoded, res.Best)
				}
				return
			}
			for _, n := range b.decoded {
				if n != tc.wantN {
					t.Fatalf("DevSummaries decoded %v, want %d each time", b.decoded, tc.wantN)
				}
			}
			if len(b.decoded) != 3 || res.BestStep != 2 || res.Best["rougeL"] != 1 || res.Best["loss"] != 0.5 || res.Best["citation_f1"] != 0.25 {
				t.Fatalf("evaluations %d, best step %d %v; want 3 evaluations, the second (step 2) best with rougeL 1", len(b.decoded), res.BestStep, res.Best)
			}
			if got := b.weight(); got != b.w[1] || got == b.w[2] {
				t.Errorf("w after Fit %v, want the best evaluation's %v (the last one's is %v)", got, b.w[1], b.w[2])
			}
		})
	}
}

// A backbone that answers fewer dev instances than asked is an error, not an index panic.
func TestFitRefusesMissingDevSummaries(t *testing.T) {
	b := &toyBackbone{t: t, store: gomlxmodel.NewStore(), refs: []string{"a b", "c d"}, short: true}
	loop := config.DefaultTrainLoop()
	loop.Epochs, loop.BatchSize = 1, 1
	_, err := Fit(context.Background(), b, FitOptions{TaskRun: training.TaskRun{Name: "toy", Loop: loop, Seed: 1, OutDir: t.TempDir(), Log: testLog(t)}, Refs: b.refs})
	if err == nil || !strings.Contains(err.Error(), "1 dev summaries for 2 instances") {
		t.Errorf("Fit error %v, want the count of dev summaries refused", err)
	}
}
