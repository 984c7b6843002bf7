package tracker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
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

// Rows identifies the abstracts of d's three splits (training.Rows), recorded in a checkpoint
// so that a resume on other rows is refused.
func (d *Data) Rows() training.Rows {
	pmids := func(keys []RowKey) []string {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = k.PMID
		}
		return out
	}
	return training.NewRows(pmids(d.Train.Keys), pmids(d.Dev.Keys), pmids(d.Test.Keys))
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
				Text:   row.Sentence,
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

// TrainOptions are the parts of a training run that are not configuration; Data, when set, is
// trained and scored on instead of the shards of dataDir (the cross-validation harness passes each
// fold's partition of them).
type TrainOptions = training.TaskOptions[*Data]

// Train trains a tracker on the prepared directory dataDir with cfg.Tracker and writes the
// checkpoint to outDir (resuming a run interrupted there). It returns the in-memory model holding
// the best-on-dev variables, and the report also written to outDir/report.json. When ctx is
// cancelled it saves a resume point and returns an error wrapping ctx.Err().
func Train(ctx context.Context, cfg *config.Config, dataDir, outDir string, opts TrainOptions) (*Model, *Report, error) {
	return training.TrainThenSeal(outDir, opts.Part, func() (*Model, *Report, error) { return train(ctx, cfg, dataDir, outDir, opts) },
		func(m *Model) checkpoint.Identity { return m.Hyperparams().Identity() })
}

// reportTraining finishes a tracker's training run res, whose best-on-dev variables (those Load
// will read) m holds (Fit loaded them): it calibrates them under tracker.calibrate, then
// evaluates m on dev (and test under tracker.report_test), writes the report to outDir and logs it.
func reportTraining(m *Model, store *gomlxmodel.Store, hp *Hyperparams, tc config.Tracker, data *Data, res *training.Result,
	outDir, backendName string, trainSeconds float64, log io.Writer) (*Report, error) {
	if tc.Calibrate {
		shift, err := m.calibrate(data.Dev, tc.Threshold)
		if err != nil {
			return nil, err
		}
		if err := model.SaveVariables(checkpoint.BestWeights(outDir), store, isModelVariable); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "tracker: calibration: logit shift %+.2f (best dev F1 at threshold %.2f)\n", shift, tc.Threshold)
	}
	rep := &Report{Backend: backendName, Architecture: hp.Architecture, Steps: res.Steps, BestStep: res.BestStep,
		Stop: res.Stop, ExamplesPerSec: res.ExamplesPerSec, TokensPerSec: res.TokensPerSec, TrainSeconds: trainSeconds,
		Threshold: tc.Threshold}
	var err error
	if rep.Dev, err = m.Evaluate(data.Dev, tc.Threshold); err != nil {
		return nil, err
	}
	if tc.ReportTest && len(data.Test.Examples) > 0 {
		if rep.Test, err = m.Evaluate(data.Test, tc.Threshold); err != nil {
			return nil, err
		}
	}
	if err := checkpoint.WriteJSON(filepath.Join(outDir, checkpoint.ReportFile), rep); err != nil {
		return nil, err
	}
	// The loop's dev F1 (the progress lines, best/metrics.json) scores the weights alone; the saved
	// model adds calibration and context rescoring, so its dev F1 may differ: name both.
	if loopF1, ok := res.Best["f1"]; ok && math.Abs(loopF1-rep.Dev.Sentence["f1"]) > 5e-5 {
		fmt.Fprintf(log, "tracker: the training loop's best dev F1 %.4f (step %d) scored the weights alone; the saved model, with calibration and context rescoring, scores:\n",
			loopF1, res.BestStep)
	}
	logSplitReports(log, rep)
	return rep, nil
}

// prepareLexical sets up, in store, what train needs before the training loop besides the
// network: the context rescorer (read back on a finished run, else fitted on the inner
// out-of-fold lexical logits of the train split) and, with lexical features, their IDF tables and
// the warm start (a logistic regression, calibrated on the same inner folds). It returns the
// rescorer (nil without context rescoring).
func prepareLexical(store *gomlxmodel.Store, hp *Hyperparams, tc config.Tracker, seed int64, data *Data, train []Example,
	outDir string, resume *training.ResumePoint, log io.Writer) (*ContextRescorer, error) {
	warmStart := hp.Lexical && tc.LexicalWarmStart && resume == nil
	// The calibration of the warm start and the context rescorer read the same inner folds of the
	// train split: their out-of-fold lexical logits are computed once.
	// A finished run only reports: its rescorer is read back rather than fitted again (the inner
	// folds cost more than the report), unless the config now asks for one it lacks.
	var rescorer *ContextRescorer
	var err error
	reuse := false
	if resume != nil && resume.Done {
		if tc.ContextRescoring {
			if rescorer, err = readContextRescorer(outDir, len(hp.Aspects)); err != nil {
				return nil, checkpointErr(err)
			}
		}
		reuse = rescorer != nil
	}
	var oof []float64
	if !reuse && ((warmStart && tc.LexicalCalibrationFolds > 0) || tc.ContextRescoring) {
		t0 := time.Now()
		if oof, err = lexicalOOF(hp, tc, data.Train, tc.LexicalCalibrationFolds, seed); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "tracker: lexical regression in %d inner folds of the train split (%.1fs)\n",
			tc.LexicalCalibrationFolds, time.Since(t0).Seconds())
	}
	if !reuse {
		if rescorer, err = writeContextRescorer(outDir, tc, oof, data.Train, len(hp.Aspects)); err != nil {
			return nil, err
		}
	}
	if rescorer != nil && !reuse {
		fmt.Fprintf(log, "tracker: context rescorer fitted on the train split's inner out-of-fold logits (%s)\n", checkpoint.ContextFile)
	}
	if hp.Lexical {
		idfTok, idfBi, err := SetIDF(store, hp, data.Train.Examples)
		if err != nil {
			return nil, err
		}
		if warmStart {
			t0 := time.Now()
			var shifts []float64
			if tc.LexicalCalibrationFolds > 0 {
				shifts = bestShifts(oof, data.Train.Examples, len(hp.Aspects), tc.Threshold)
				fmt.Fprintf(log, "tracker: lexical calibration (%d inner folds of the train split): per-aspect logit shifts %s\n",
					tc.LexicalCalibrationFolds, formatShifts(hp, shifts))
			}
			if err := fitLexical(store, hp, train, idfTok, idfBi, tc.LexicalL2, shifts); err != nil {
				return nil, err
			}
			fmt.Fprintf(log, "tracker: lexical warm start (logistic regression on TF-IDF, %.1fs)\n", time.Since(t0).Seconds())
		}
	}
	return rescorer, nil
}

// prepareRun returns the run's data (opts.Data, or read from dataDir) and hyperparameters, with
// outDir checked to hold nothing of another run (settings, or a fold's rows).
func prepareRun(cfg *config.Config, dataDir, outDir string, opts TrainOptions, log io.Writer) (*Data, *Hyperparams, error) {
	tc := cfg.Tracker
	data := opts.Data
	if data == nil {
		var err error
		if data, err = ReadData(dataDir, tc.MaxLen-1); err != nil {
			return nil, nil, err
		}
	}
	codes, names := make([]string, len(data.Aspects)), make([]string, len(data.Aspects))
	for i, a := range data.Aspects {
		codes[i], names[i] = a.Code, a.Name
	}
	hp := NewHyperparams(tc, data.Tokenizer.VocabSize(), data.Manifest.AspectSet, codes, names)
	if err := prepareCheckpointDir(outDir, hp, dataDir, cfg, opts.AllowChangedConfig, log); err != nil {
		return nil, nil, checkpointErr(err)
	}
	// A cross-validation fold (opts.Data) must prove its rows: a finished checkpoint of a plain
	// train there would otherwise be taken for the fold (issue 22 defect 9).
	if err := training.CheckRows(outDir, data.Rows(), opts.Data != nil); err != nil {
		return nil, nil, checkpointErr(err)
	}
	return data, hp, nil
}

// train is Train without the manifest.
func train(ctx context.Context, cfg *config.Config, dataDir, outDir string, opts TrainOptions) (*Model, *Report, error) {
	log := opts.Log
	if log == nil {
		log = os.Stderr
	}
	tc := cfg.Tracker
	// Held for the whole run: no other run may train into, or replace, the same directory.
	lock, err := training.LockOutDir(outDir, checkpoint.HyperparamsFile, "tracker")
	if err != nil {
		return nil, nil, checkpointErr(err)
	}
	defer lock.Release()
	backend, backendName, err := model.Backend()
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(log, "tracker: backend %s\n", backendName)
	data, hp, err := prepareRun(cfg, dataDir, outDir, opts, log)
	if err != nil {
		return nil, nil, err
	}
	if hp.Architecture == ArchLexicalContext {
		return trainLexical(hp, tc, cfg.Seed, data, outDir, log)
	}
	resume, err := training.ReadResumePoint(outDir)
	if err != nil {
		return nil, nil, checkpointErr(err)
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
	rescorer, err := prepareLexical(store, hp, tc, cfg.Seed, data, train, outDir, resume, log)
	if err != nil {
		return nil, nil, err
	}
	m, err := newModel(backend, hp, data.Tokenizer, store)
	if err != nil {
		return nil, nil, err
	}
	// Model selection on dev stays on the network's own scores (DevScores): the rescorer does not
	// depend on the variables, and the report and Load apply it.
	m.context = rescorer
	t0 := time.Now()
	res, err := Fit(ctx, &network{m: m, tc: tc, seed: cfg.Seed, train: train, dev: data.Dev.Examples},
		FitOptions{TaskRun: training.TaskRun{Name: "tracker", Loop: tc.Train, Seed: cfg.Seed, OutDir: outDir, Log: log, AfterStep: opts.AfterStep, Trace: opts.Trace},
			DevLabels: labelsOf(data.Dev.Examples), Threshold: tc.Threshold})
	if err != nil {
		return nil, nil, err
	}
	trainSeconds := time.Since(t0).Seconds()
	rep, err := reportTraining(m, store, hp, tc, data, res, outDir, backendName, trainSeconds, log)
	if err != nil {
		return nil, nil, err
	}
	return m, rep, nil
}

// logSplitReports prints the dev (and test) figures of a finished training.
func logSplitReports(log io.Writer, rep *Report) {
	for _, sr := range []struct {
		name string
		r    *SplitReport
	}{{"dev", rep.Dev}, {"test", rep.Test}} {
		if sr.r != nil {
			fmt.Fprintf(log, "tracker: %s sentence F1 %.4f (P %.4f R %.4f, AUC %.4f), exact-set match %.4f over %d instances\n",
				sr.name, sr.r.Sentence["f1"], sr.r.Sentence["precision"], sr.r.Sentence["recall"], sr.r.Sentence["auc"], sr.r.ExactMatch, sr.r.Instances)
		}
	}
}

// writeContextRescorer fits the context rescorer of tc.ContextRescoring on the inner out-of-fold
// logits oof of train (contextFromOOF) and writes it into the checkpoint outDir before training,
// so that every best/ variables written afterwards are scored with it. With context rescoring off
// it removes a rescorer left by an earlier run into outDir (a rerun with a changed config), which
// Load would otherwise apply, and returns nil.
func writeContextRescorer(outDir string, tc config.Tracker, oof []float64, train SplitData, aspects int) (*ContextRescorer, error) {
	path := filepath.Join(outDir, checkpoint.ContextFile)
	if !tc.ContextRescoring {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, nil
	}
	if len(oof) != len(train.Examples) {
		return nil, fmt.Errorf("tracker: context rescoring: %d out-of-fold logits for %d train rows", len(oof), len(train.Examples))
	}
	c := contextFromOOF(oof, train, aspects, tc.Threshold)
	if err := checkpoint.WriteJSON(path, c); err != nil {
		return nil, err
	}
	return c, nil
}

// SetIDF fills the lexical term's IDF tables from training examples (smoothed as scikit-learn's
// TfidfVectorizer: ln((1+n)/(1+df)) + 1) as non-trainable variables of store.
func SetIDF(store *gomlxmodel.Store, hp *Hyperparams, exs []Example) (idfTok, idfBi []float32, err error) {
	dfTok, dfBi := idfTables(hp, exs)
	for name, vals := range map[string][]float32{"idf_tokens": dfTok, "idf_bigrams": dfBi} {
		path := model.ModelScope + "/head/lexical/" + name
		t := tensors.FromFlatDataAndDimensions(vals, len(vals))
		if err := setVariable(store, path, t, false); err != nil {
			return nil, nil, err
		}
	}
	return dfTok, dfBi, nil
}

// idfTables returns SetIDF's token and bigram IDF tables of exs.
func idfTables(hp *Hyperparams, exs []Example) (dfTok, dfBi []float32) {
	dfTok = make([]float32, hp.VocabSize)
	dfBi = make([]float32, hp.NgramBuckets)
	seenTok, seenBi := map[int32]bool{}, map[int32]bool{}
	for _, e := range exs {
		clear(seenTok)
		clear(seenBi)
		for j, id := range e.IDs {
			if id == 0 || int(id) >= hp.VocabSize {
				continue
			}
			seenTok[id] = true
			if j > 0 && e.IDs[j-1] != 0 {
				seenBi[BigramHash(e.IDs[j-1], id, hp.NgramBuckets)] = true
			}
		}
		for id := range seenTok {
			dfTok[id]++
		}
		for h := range seenBi {
			dfBi[h]++
		}
	}
	n := float64(len(exs))
	for _, df := range [][]float32{dfTok, dfBi} {
		for i, d := range df {
			df[i] = float32(math.Log((1+n)/(1+float64(d))) + 1)
		}
	}
	return dfTok, dfBi
}

// setVariable creates or overwrites a variable of store with a value.
func setVariable(store *gomlxmodel.Store, path string, t *tensors.Tensor, trainable bool) error {
	if v := store.GetVariable(path); v != nil {
		return v.SetValue(t)
	}
	v, err := store.CreateVariable(path, t)
	if err != nil {
		return err
	}
	v.SetTrainable(trainable)
	return nil
}

func isModelVariable(path string) bool { return strings.HasPrefix(path, model.ModelScope+"/") }

// calibrationShifts are the logit shifts tried by calibrate: 0 first, so that ties keep the model.
var calibrationShifts = func() []float64 {
	out := []float64{0}
	for i := 1; i <= 120; i++ {
		out = append(out, float64(i)*0.05, -float64(i)*0.05)
	}
	return out
}()

// calibrate finds the logit shift that maximises the dev F1 at threshold and adds it to the head's
// per-aspect bias, so that the model itself (and every checkpoint written afterwards) carries it.
func (m *Model) calibrate(dev SplitData, threshold float64) (float64, error) {
	probs, err := m.ScoreExamples(dev.Examples)
	if err != nil {
		return 0, err
	}
	best := bestShift(Logits(probs), dev.Examples, threshold, func(*Example) bool { return true })
	v := m.store.GetVariable(model.ModelScope + "/head/aspect_bias")
	if v == nil {
		return 0, errors.New("tracker: calibrate: no head bias variable")
	}
	bias, err := tensors.CopyFlatData[float32](v.MustValue())
	if err != nil {
		return 0, err
	}
	for i := range bias {
		bias[i] += float32(best)
	}
	if err := v.SetValue(tensors.FromFlatDataAndDimensions(bias, v.Shape().Dimensions...)); err != nil {
		return 0, err
	}
	return best, nil
}

// LossGraph is the training loss of a batch (ids, aspect, pos, labels, weights): weighted BCE plus
// the L2 penalty l2 * ||lexical weights||^2 / 2.
func LossGraph(scope *gomlxmodel.Scope, hp *Hyperparams, l2 float64, in []*graph.Node) *graph.Node {
	loss := WeightedBCEGraph(LogitsGraph(scope, hp, in[0], in[1], in[2]), in[3], in[4])
	if hp.Lexical && l2 > 0 {
		g := loss.Graph()
		for _, name := range []string{"tokens", "bigrams"} {
			if v := scope.Store().GetVariable(model.ModelScope + "/head/lexical/" + name); v != nil {
				loss = graph.Add(loss, graph.MulScalar(graph.ReduceAllSum(graph.Square(v.NodeValue(g))), l2/2))
			}
		}
	}
	return loss
}

// network is the from-scratch model m as the tracker's Backbone, over its weighted training
// examples train.
type network struct {
	m          *Model
	tc         config.Tracker
	seed       int64
	train, dev []Example
}

// Training implements Backbone: length-bucketed batches, sharded for data parallelism, and with
// a lexical warm start an evaluation before the first step, so that it competes for the best.
func (n *network) Training() training.Options {
	hp, backend := n.m.hp, n.m.backend
	return training.Options{
		Backend: backend,
		Store:   n.m.store,
		Loss: func(scope *gomlxmodel.Scope, in []*graph.Node) *graph.Node {
			return LossGraph(scope, hp, n.tc.LexicalL2, in)
		},
		Batches: func(epoch int) ([]training.Batch, error) {
			return TrainingBatches(n.train, n.tc.Train.BatchSize, hp.MaxTokens(), n.seed, epoch), nil
		},
		EvalAtStart: hp.Lexical && n.tc.LexicalWarmStart,
		Shards:      TrainShards(backend),
		Split:       SplitBatch,
	}
}

// DevScores implements Backbone: the network's own scores, without the context rescorer.
func (n *network) DevScores() ([]float32, error) { return n.m.ScoreExamples(n.dev) }

// weighTraining applies tracker.imbalance (Weigh) to exs.
func weighTraining(exs []Example, tc config.Tracker) []Example {
	labels := make([]bool, len(exs))
	for i, e := range exs {
		labels[i] = e.Label > 0
	}
	// Neither the background context nor copying an example fails.
	out, _ := Weigh(context.Background(), tc, labels, func(i int, w float32) (Example, error) {
		e := exs[i]
		e.Weight = w
		return e, nil
	})
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

// TrainShards is the number of data-parallel shards of each training batch (training.Options.Shards)
// on backend: 2 on the pure-Go backend, whose op scheduler uses one core per execution, so that
// two cores compute the two halves' gradients at once; 1 (no sharding) on XLA, which parallelises
// inside ops. The shard count, not the machine, fixes the arithmetic: a 1-core machine runs the
// two halves one after the other and gets the same numbers.
func TrainShards(backend compute.Backend) int {
	return training.DataParallelShards(backend)
}

// SplitBatch cuts a training batch (ids, aspect, pos, labels, weights) into n shards of rows; each
// shard's Weight is the sum of its loss weights, since the loss is a weighted mean.
func SplitBatch(b training.Batch, n int) ([]training.Batch, error) {
	return training.SplitRows(b, n, 4)
}

func labelsOf(exs []Example) []float32 {
	out := make([]float32, len(exs))
	for i, e := range exs {
		out[i] = e.Label
	}
	return out
}

// checkpointErr marks the training loop's refusals to resume (training.ErrResume) as
// ErrCheckpoint too, the sentinel callers of this package test for.
func checkpointErr(err error) error {
	if errors.Is(err, training.ErrResume) && !errors.Is(err, ErrCheckpoint) {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	return err
}

// prepareCheckpointDir writes hparams.json, tokenizer.json and config.yaml into outDir, or checks
// that an existing checkpoint there (being resumed) was made with the same model settings,
// tokenizer and (unless allowChanged) configuration. The caller holds outDir's lock.
func prepareCheckpointDir(outDir string, hp *Hyperparams, dataDir string, cfg *config.Config, allowChanged bool, log io.Writer) error {
	tokSrc := filepath.Join(dataDir, dataset.TokenizerFile)
	tokBytes, err := checkpoint.ReadTokenizer(dataDir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPrepared, err)
	}
	if entries, err := os.ReadDir(outDir); err == nil && len(entries) > 0 {
		old, err := readHyperparams(outDir)
		if err != nil {
			return fmt.Errorf("output %s exists and is not a tracker checkpoint: %w", outDir, err)
		}
		if err := training.CheckConfig(outDir, checkpoint.ConfigFile, cfg, "tracker", allowChanged, log); err != nil {
			return err
		}
		if !reflect.DeepEqual(old, hp) {
			return fmt.Errorf("%w: %s was trained with other model settings or data (hparams.json differs); use another --out or delete it", ErrCheckpoint, outDir)
		}
		if !checkpoint.SameTokenizer(outDir, tokBytes) {
			return fmt.Errorf("%w: %s was trained with another tokenizer than %s; use another --out or delete it", ErrCheckpoint, outDir, tokSrc)
		}
	}
	return checkpoint.Write(outDir, checkpoint.Files{MetaFile: checkpoint.HyperparamsFile, Meta: hp, Tokenizer: tokBytes, Config: cfg})
}
