package tracker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"time"

	"github.com/gomlx/gomlx/core/graph"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/subword"
)

// ErrPrepared marks a prepared directory that is missing or unusable for the tracker.
var ErrPrepared = errors.New("prepared directory")

// RowKey identifies the sentence behind an Example.
type RowKey struct {
	PMID          string
	Aspect        string
	SentenceIndex int
}

// SplitData is the examples of one split with their keys.
type SplitData struct {
	Examples []Example
	Keys     []RowKey
}

// Data is what Train reads from a prepared directory.
type Data struct {
	Manifest  *dataset.Manifest
	Tokenizer *subword.Tokenizer
	Aspects   []dataset.Aspect
	Train     SplitData
	Dev       SplitData
	Test      SplitData
}

// ReadData reads the tracker shards and tokenizer of a prepared directory. Sentences are truncated
// to maxTokens tokens.
func ReadData(dir string, maxTokens int) (*Data, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: %s does not exist or is not a directory (run prepare first)", ErrPrepared, dir)
	}
	man, err := dataset.ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPrepared, dir, err)
	}
	task, ok := man.Tasks[dataset.TaskTracker]
	if !ok {
		return nil, fmt.Errorf("%w: %s has no %q shards", ErrPrepared, dir, dataset.TaskTracker)
	}
	for _, s := range []string{dataset.SplitTrain, dataset.SplitDev} {
		if task.Splits[s].Rows == 0 {
			return nil, fmt.Errorf("%w: %s: the %q split of the tracker task is empty", ErrPrepared, dir, s)
		}
	}
	aspects := dataset.Aspects(man.AspectSet)
	if len(aspects) == 0 {
		return nil, fmt.Errorf("%w: %s: unknown aspect set %q", ErrPrepared, dir, man.AspectSet)
	}
	tok, err := subword.Load(filepath.Join(dir, dataset.TokenizerFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPrepared, dir, err)
	}
	index := map[string]int32{}
	for i, a := range aspects {
		index[a.Code] = int32(i)
	}
	d := &Data{Manifest: man, Tokenizer: tok, Aspects: aspects}
	for _, sp := range []struct {
		name string
		dst  *SplitData
	}{{dataset.SplitTrain, &d.Train}, {dataset.SplitDev, &d.Dev}, {dataset.SplitTest, &d.Test}} {
		if task.Splits[sp.name].Rows == 0 {
			continue
		}
		for row, err := range dataset.ReadShards[dataset.TrackerRow](dir, dataset.TaskTracker, sp.name) {
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrPrepared, err)
			}
			a, ok := index[row.Aspect]
			if !ok {
				return nil, fmt.Errorf("%w: %s: %s row %s/%s: aspect %q not in set %q", ErrPrepared, dir, sp.name, row.PMID, row.Aspect, row.Aspect, man.AspectSet)
			}
			label := float32(0)
			if row.Label {
				label = 1
			}
			sp.dst.Examples = append(sp.dst.Examples, Example{
				IDs:    truncate(row.SentenceIDs, maxTokens),
				Aspect: a,
				Pos:    PositionFeatures(int(row.SentenceIndex), int(row.DocLength)),
				Label:  label,
				Weight: 1,
			})
			sp.dst.Keys = append(sp.dst.Keys, RowKey{PMID: row.PMID, Aspect: row.Aspect, SentenceIndex: int(row.SentenceIndex)})
		}
	}
	return d, nil
}

// Report is written to report.json in the checkpoint at the end of training.
type Report struct {
	Backend        string       `json:"backend"`
	Architecture   string       `json:"architecture"`
	Steps          int          `json:"steps"`
	BestStep       int          `json:"best_step"`
	Stop           string       `json:"stop"`
	ExamplesPerSec float64      `json:"examples_per_sec"`
	TokensPerSec   float64      `json:"tokens_per_sec"`
	TrainSeconds   float64      `json:"train_seconds"`
	Threshold      float64      `json:"threshold"`
	Dev            *SplitReport `json:"dev"`
	Test           *SplitReport `json:"test,omitempty"`
}

// TrainOptions are the parts of a training run that are not configuration.
type TrainOptions struct {
	// Log receives progress and messages; os.Stderr when nil.
	Log io.Writer
	// AfterStep, when set, is called after each optimizer step (tests interrupt runs with it).
	AfterStep func(step int)
}

// Train trains a tracker on the prepared directory dataDir with cfg.Tracker and writes the
// checkpoint to outDir (resuming a run interrupted there). It returns the in-memory model holding
// the best-on-dev variables, and the report also written to outDir/report.json. When ctx is
// cancelled it saves a resume point and returns an error wrapping ctx.Err().
func Train(ctx context.Context, cfg *config.Config, dataDir, outDir string, opts TrainOptions) (*Model, *Report, error) {
	log := opts.Log
	if log == nil {
		log = os.Stderr
	}
	tc := cfg.Tracker
	backend, backendName, err := model.Backend()
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(log, "tracker: backend %s\n", backendName)
	data, err := ReadData(dataDir, tc.MaxLen-1)
	if err != nil {
		return nil, nil, err
	}
	codes, names := make([]string, len(data.Aspects)), make([]string, len(data.Aspects))
	for i, a := range data.Aspects {
		codes[i], names[i] = a.Code, a.Name
	}
	hp := NewHyperparams(tc, data.Tokenizer.VocabSize(), data.Manifest.AspectSet, codes, names)
	if err := prepareCheckpointDir(outDir, hp, dataDir, cfg); err != nil {
		return nil, nil, err
	}

	train := weighTraining(data.Train.Examples, tc)
	pos := 0
	for _, e := range data.Train.Examples {
		if e.Label > 0 {
			pos++
		}
	}
	fmt.Fprintf(log, "tracker: %s, %d train rows (%d relevant, %d after %s), %d dev, %d test\n", hp.Architecture,
		len(data.Train.Examples), pos, len(train), tc.Imbalance, len(data.Dev.Examples), len(data.Test.Examples))

	store := gomlxmodel.NewStore()
	m, err := newModel(backend, hp, data.Tokenizer, store)
	if err != nil {
		return nil, nil, err
	}
	devLabels := labelsOf(data.Dev.Examples)
	t0 := time.Now()
	res, err := training.Run(ctx, training.Options{
		Backend: backend,
		Store:   store,
		Loop:    tc.Train,
		Seed:    cfg.Seed,
		OutDir:  outDir,
		Log:     log,
		Loss: func(scope *gomlxmodel.Scope, in []*graph.Node) *graph.Node {
			return WeightedBCEGraph(LogitsGraph(scope, hp, in[0], in[1], in[2]), in[3], in[4])
		},
		Batches: func(epoch int) ([]training.Batch, error) {
			return TrainingBatches(train, tc.Train.BatchSize, hp.MaxTokens(), cfg.Seed, epoch), nil
		},
		Evaluate: func(context.Context) (training.Metrics, error) {
			probs, err := m.ScoreExamples(data.Dev.Examples)
			if err != nil {
				return nil, err
			}
			return BinaryMetrics(probs, devLabels, tc.Threshold), nil
		},
		Select:    "f1",
		AfterStep: opts.AfterStep,
	})
	if err != nil {
		return nil, nil, err
	}
	trainSeconds := time.Since(t0).Seconds()
	// Score with the best-on-dev variables, exactly as Load will see them.
	if err := model.LoadVariablesInto(store, filepath.Join(outDir, training.BestDir, training.BestVariables), nil); err != nil {
		return nil, nil, err
	}
	rep := &Report{Backend: backendName, Architecture: hp.Architecture, Steps: res.Steps, BestStep: res.BestStep,
		Stop: res.Stop, ExamplesPerSec: res.ExamplesPerSec, TokensPerSec: res.TokensPerSec, TrainSeconds: trainSeconds,
		Threshold: tc.Threshold}
	if rep.Dev, err = m.Evaluate(data.Dev, tc.Threshold); err != nil {
		return nil, nil, err
	}
	if len(data.Test.Examples) > 0 {
		if rep.Test, err = m.Evaluate(data.Test, tc.Threshold); err != nil {
			return nil, nil, err
		}
	}
	if err := writeJSON(filepath.Join(outDir, ReportFile), rep); err != nil {
		return nil, nil, err
	}
	for _, sr := range []struct {
		name string
		r    *SplitReport
	}{{"dev", rep.Dev}, {"test", rep.Test}} {
		if sr.r != nil {
			fmt.Fprintf(log, "tracker: %s sentence F1 %.4f (P %.4f R %.4f, AUC %.4f), exact-set match %.4f over %d instances\n",
				sr.name, sr.r.Sentence["f1"], sr.r.Sentence["precision"], sr.r.Sentence["recall"], sr.r.Sentence["auc"], sr.r.ExactMatch, sr.r.Instances)
		}
	}
	return m, rep, nil
}

// weighTraining applies tracker.imbalance: positives repeated (oversample) or weighted (pos_weight).
func weighTraining(exs []Example, tc config.Tracker) []Example {
	var pos, neg int
	for _, e := range exs {
		if e.Label > 0 {
			pos++
		} else {
			neg++
		}
	}
	out := make([]Example, 0, len(exs))
	for _, e := range exs {
		e.Weight = 1
		if e.Label > 0 {
			switch tc.Imbalance {
			case "oversample":
				for range tc.Oversample - 1 {
					out = append(out, e)
				}
			case "pos_weight":
				w := tc.PosWeight
				if w == 0 && pos > 0 {
					w = float64(neg) / float64(pos)
				}
				e.Weight = float32(max(w, 1e-3))
			}
		}
		out = append(out, e)
	}
	return out
}

// TrainingBatches returns the micro-batches of an epoch: examples bucketed by padded length,
// shuffled with a seed derived from (seed, epoch), each batch padded only to its bucket length.
func TrainingBatches(exs []Example, batchSize, maxTokens int, seed int64, epoch int) []training.Batch {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(epoch)+1))
	var out []training.Batch
	for _, idx := range trainingBatches(exs, batchSize, maxTokens, rng) {
		sub := make([]Example, len(idx))
		for j, k := range idx {
			sub[j] = exs[k]
		}
		T := bucketLen(padTokens(exs, idx), maxTokens)
		ids, aspect, pos, labels, weights, tokens := batchTensors(sub, T, len(sub))
		out = append(out, training.Batch{Inputs: []any{ids, aspect, pos, labels, weights}, Examples: len(sub), Tokens: tokens})
	}
	return out
}

func labelsOf(exs []Example) []float32 {
	out := make([]float32, len(exs))
	for i, e := range exs {
		out[i] = e.Label
	}
	return out
}

// prepareCheckpointDir writes hparams.json, tokenizer.json and config.yaml into outDir, or checks
// that an existing checkpoint there (being resumed) was made with the same settings and tokenizer.
func prepareCheckpointDir(outDir string, hp *Hyperparams, dataDir string, cfg *config.Config) error {
	tokSrc := filepath.Join(dataDir, dataset.TokenizerFile)
	tokBytes, err := os.ReadFile(tokSrc)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPrepared, err)
	}
	if entries, err := os.ReadDir(outDir); err == nil && len(entries) > 0 {
		old, err := readHyperparams(outDir)
		if err != nil {
			return fmt.Errorf("output %s exists and is not a tracker checkpoint: %w", outDir, err)
		}
		if !reflect.DeepEqual(old, hp) {
			return fmt.Errorf("%w: %s was trained with other model settings or data (hparams.json differs); use another --out or delete it", ErrCheckpoint, outDir)
		}
		oldTok, err := os.ReadFile(filepath.Join(outDir, TokenizerFile))
		if err != nil || !slices.Equal(oldTok, tokBytes) {
			return fmt.Errorf("%w: %s was trained with another tokenizer than %s; use another --out or delete it", ErrCheckpoint, outDir, tokSrc)
		}
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	if err := hp.write(outDir); err != nil {
		return err
	}
	if err := atomicio.WriteFile(filepath.Join(outDir, TokenizerFile), tokBytes, 0o644); err != nil {
		return err
	}
	return cfg.WriteFile(filepath.Join(outDir, ConfigFile))
}
