package summarizer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified.
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	tsmodel "github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/subword"
)

// Example is one training pair in token ids.
type Example struct {
	Src, Seg []int32
	// Tgt is the reference summary (no [BOS]/[EOS]), truncated to MaxSummaryLen-1 so that [EOS]
	// always fits.
	Tgt []int32
	// Ref is the reference summary text, for dev ROUGE.
	Ref string
	// CitedLen is the number of tokens of the tracked sentences (for summarizer.min_len_ratio).
	CitedLen int
	// Aspect is the aspect index the decoder is conditioned on (Hyperparams.NumAspects for the
	// aspect-free copy examples; unused without aspect conditioning).
	Aspect int32
}

// Data is what Train reads from a prepared directory: its manifest, its tokenizer and the
// summarizer rows of the train and dev splits.
type Data struct {
	Manifest  *dataset.Manifest
	Tokenizer *subword.Tokenizer
	// TokenizerPath is the tokenizer's file, copied into the checkpoint.
	TokenizerPath string
	Train, Dev    []dataset.SummarizerRow
}

// Rows identifies the abstracts of d's train and dev rows (training.Rows; a summarizer has no
// test part), recorded in a checkpoint so that a resume on other rows is refused.
func (d *Data) Rows() training.Rows {
	pmids := func(rows []dataset.SummarizerRow) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = r.PMID
		}
		return out
	}
	return training.NewRows(pmids(d.Train), pmids(d.Dev), nil)
}

// ReadData reads the summarizer shards (train and dev splits) and the tokenizer of the prepared
// directory dir. A row whose aspect is not in the manifest's aspect set is an error naming it.
func ReadData(dir string) (*Data, error) {
	man, err := dataset.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	tokPath := filepath.Join(dir, dataset.TokenizerFile)
	tok, err := subword.Load(tokPath)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, a := range dataset.Aspects(man.AspectSet) {
		known[a.Code] = true
	}
	load := func(split string) ([]dataset.SummarizerRow, error) {
		var out []dataset.SummarizerRow
		for row, err := range dataset.ReadShards[dataset.SummarizerRow](dir, dataset.TaskSummarizer, split) {
			if err != nil {
				return nil, err
			}
			if !known[row.Aspect] {
				return nil, fmt.Errorf("%s: summarizer row %s/%s: unknown aspect %q", dir, row.PMID, row.Aspect, row.Aspect)
			}
			out = append(out, row)
		}
		return out, nil
	}
	d := &Data{Manifest: man, Tokenizer: tok, TokenizerPath: tokPath}
	if d.Train, err = load(dataset.SplitTrain); err != nil {
		return nil, err
	}
	if d.Dev, err = load(dataset.SplitDev); err != nil {
		return nil, err
	}
	return d, nil
}

// TrainOptions are the parts of a Train run that are not configuration; Data, when set, is
// trained on instead of the shards of dataDir (ReadData).
type TrainOptions = training.TaskOptions[*Data]

// Report is written to report.json in the checkpoint at the end of training and returned by Train.
type Report struct {
	Backend        string  `json:"backend"`
	Steps          int     `json:"steps"`
	TotalSteps     int     `json:"total_steps"`
	BestStep       int     `json:"best_step"`
	Stop           string  `json:"stop"`
	ExamplesPerSec float64 `json:"examples_per_sec"`
	TokensPerSec   float64 `json:"tokens_per_sec"`
	TrainSeconds   float64 `json:"train_seconds"`
	// Dev holds the best dev evaluation's metrics (loss, rouge1, rouge2, rougeL of greedy decoding).
	Dev map[string]float64 `json:"dev"`
}

// Train trains a summarizer on the summarizer shards of a prepared directory (train split; dev split
// for evaluation) and writes a checkpoint directory that infer loads with Load. Rerunning the same
// command after an interruption resumes from the saved state; a directory holding another kind of
// output, a checkpoint made with another model or tokenizer, or (unless opts.AllowChangedConfig)
// with other settings, is refused. It returns the summarizer loaded from the checkpoint (the
// best-on-dev variables) and the report also written to outDir/report.json. When ctx is cancelled
// it saves a resume point and returns an error wrapping ctx.Err().
func Train(ctx context.Context, cfg *config.Config, dataDir, outDir string, opts TrainOptions) (*Summarizer, *Report, error) {
	return training.TrainThenSeal(outDir, opts.Part, func() (*Summarizer, *Report, error) { return train(ctx, cfg, dataDir, outDir, opts) },
		(*Summarizer).Identity)
}

// trainData returns the rows train trains on: opts.Data, or the shards of dataDir (with the train
// split's negatives under summarizer.train_negatives).
func trainData(cfg *config.Config, dataDir string, opts TrainOptions) (*Data, error) {
	if opts.Data != nil {
		return opts.Data, nil
	}
	data, err := ReadData(dataDir)
	if err != nil {
		return nil, err
	}
	if cfg.Summarizer.TrainNegatives {
		neg, err := dataset.SummarizerNegatives(dataDir, dataset.SplitTrain)
		if err != nil {
			return nil, err
		}
		data.Train = append(data.Train, neg...)
	}
	return data, nil
}

// trainExamples returns the hyperparameters of the network train builds for data (the
// generation vocabulary and the aspect count read from it), the training and dev examples, and
// the words of the training summaries (KnownWords).
func trainExamples(cfg *config.Config, dataDir string, data *Data) (Hyperparams, []Example, []Example, [][]int32, error) {
	man, tok := data.Manifest, data.Tokenizer
	special, err := specialIDs(tok)
	if err != nil {
		return Hyperparams{}, nil, nil, nil, fmt.Errorf("%s: %w", data.TokenizerPath, err)
	}
	h := NewHyperparams(cfg.Summarizer, tok.VocabSize(), special)
	if err := h.validate(); err != nil {
		return Hyperparams{}, nil, nil, nil, fmt.Errorf("summarizer: %w", err)
	}
	aspectIDs := map[string][]int32{}
	for _, a := range dataset.Aspects(man.AspectSet) {
		aspectIDs[a.Code] = tok.Encode(aspectText(a.Name, a.Description))
	}
	if cfg.Summarizer.AspectConditioning {
		h.NumAspects = len(aspectIDs)
	}
	trainRows, devRows := data.Train, data.Dev
	summaries := make([][]int32, len(trainRows))
	for i, r := range trainRows {
		summaries[i] = r.SummaryIDs
	}
	h.GenIDs = GenVocabulary(summaries, cfg.Summarizer.GenVocabSize, h)
	examples := func(rows []dataset.SummarizerRow) []Example {
		out := make([]Example, len(rows))
		for i, row := range rows {
			out[i] = MakeExample(h, aspectIDs[row.Aspect], splitOn(row.CitedIDs, h.SepID), splitOn(row.DocumentIDs, h.SepID), row.SummaryIDs, row.Summary)
			out[i].Aspect = aspectIndex(man.AspectSet, row.Aspect)
		}
		return out
	}
	train, dev := examples(trainRows), examples(devRows)
	if n := cfg.Summarizer.CopyExamples; n > 0 {
		// Unlabeled text of the training split only: each abstract once.
		var abstracts [][][]int32
		seen := map[string]bool{}
		for _, row := range trainRows {
			if !seen[row.PMID] {
				seen[row.PMID] = true
				abstracts = append(abstracts, splitOn(row.DocumentIDs, h.SepID))
			}
		}
		train = append(train, CopyExamples(h, abstracts, n, cfg.Seed)...)
	}
	if len(train) == 0 {
		return Hyperparams{}, nil, nil, nil, fmt.Errorf("%s: no summarizer training rows", dataDir)
	}
	return h, train, dev, KnownWords(tok, summaries), nil
}

// train is Train without the manifest.
func train(ctx context.Context, cfg *config.Config, dataDir, outDir string, opts TrainOptions) (*Summarizer, *Report, error) {
	log := opts.Log
	if log == nil {
		log = os.Stderr
	}
	// Held for the whole run: no other run may train into, or replace, the same directory.
	lock, err := training.LockOutDir(outDir, checkpoint.SummarizerFile, "summarizer")
	if err != nil {
		return nil, nil, err
	}
	defer lock.Release()
	data, err := trainData(cfg, dataDir, opts)
	if err != nil {
		return nil, nil, err
	}
	man, tok := data.Manifest, data.Tokenizer
	h, train, dev, knownWords, err := trainExamples(cfg, dataDir, data)
	if err != nil {
		return nil, nil, err
	}
	var words *WordRule
	if cfg.Summarizer.WordRule {
		words = NewWordRule(tok, knownWords)
	}

	meta := Meta{FormatVersion: formatVersion, Hyperparams: h, AspectSet: man.AspectSet,
		BeamSize: cfg.Summarizer.BeamSize, LengthPenalty: cfg.Summarizer.LengthPenalty, NoRepeatNgram: cfg.Summarizer.NoRepeatNgram,
		RepeatSourceNgrams: cfg.Summarizer.RepeatSourceNgrams,
		MinLenRatio:        cfg.Summarizer.MinLenRatio, CopyChainBonus: cfg.Summarizer.CopyChainBonus,
		CopyStartBonus: cfg.Summarizer.CopyStartBonus, MaxDecodeLen: cfg.Summarizer.MaxDecodeLen, WordRule: cfg.Summarizer.WordRule, KnownWords: knownWords}
	if err := writeCheckpointFiles(outDir, meta, data.TokenizerPath, cfg, opts.AllowChangedConfig, log); err != nil {
		return nil, nil, err
	}
	// A cross-validation fold (opts.Data) must prove its rows, as the tracker's (issue 22 defect 9).
	if err := training.CheckRows(outDir, data.Rows(), opts.Data != nil); err != nil {
		return nil, nil, err
	}

	backend, name, err := tsmodel.Backend()
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(log, "summarizer: %d train / %d dev examples, vocab %d, backend %s\n", len(train), len(dev), h.VocabSize, name)
	t0 := time.Now()
	loop := cfg.Summarizer.Train
	// TTS (+) f reads the whole abstract besides the tracked sentences: the paper halves its batch
	// (variants.full_context_batch_size); STT and ETE set theirs in their Config.
	loop.BatchSize = cfg.Variants.SummarizerBatchSize(config.BatchTrackThenSum, cfg.Summarizer.FullContext, loop.BatchSize)
	res, err := TrainExamples(ctx, ExamplesOptions{
		Backend: backend, Hyperparams: h, Loop: loop, Seed: cfg.Seed, OutDir: outDir,
		Train: train, Dev: dev, DevDecodeLimit: cfg.Summarizer.DevDecodeLimit,
		Suppress: suppressed(tok.NumSpecial(), h.EosID), NoRepeatNgram: cfg.Summarizer.NoRepeatNgram,
		MinLenRatio: cfg.Summarizer.MinLenRatio, ChainBonus: float32(cfg.Summarizer.CopyChainBonus),
		StartBonus: float32(cfg.Summarizer.CopyStartBonus), Words: words,
		Detok:     func(ids []int32) string { return strings.TrimSpace(tok.Decode(ids)) },
		Log:       log,
		AfterStep: opts.AfterStep,
		Trace:     opts.Trace,
	})
	if err != nil {
		return nil, nil, err
	}
	rep := &Report{Backend: name, Steps: res.Steps, TotalSteps: res.TotalSteps, BestStep: res.BestStep, Stop: res.Stop,
		ExamplesPerSec: res.ExamplesPerSec, TokensPerSec: res.TokensPerSec, TrainSeconds: time.Since(t0).Seconds(), Dev: res.Best}
	if err := checkpoint.WriteJSON(filepath.Join(outDir, checkpoint.ReportFile), rep); err != nil {
		return nil, nil, err
	}
	s, err := Load(outDir)
	if err != nil {
		return nil, nil, err
	}
	return s, rep, nil
}

// writeCheckpointFiles writes summarizer.json, tokenizer.json and config.yaml into outDir, after
// checking that a checkpoint already there (being resumed) was made with the same model and
// tokenizer and, unless allowChanged, the same settings. The caller holds outDir's lock.
func writeCheckpointFiles(outDir string, meta Meta, tokPath string, cfg *config.Config, allowChanged bool, log io.Writer) error {
	tb, err := os.ReadFile(tokPath)
	if err != nil {
		return fmt.Errorf("summarizer: %w", err)
	}
	metaPath := filepath.Join(outDir, checkpoint.SummarizerFile)
	var old Meta
	var pathErr *os.PathError
	switch err := atomicio.ReadJSON(metaPath, &old, false); {
	case errors.Is(err, os.ErrNotExist): // a new checkpoint
	case errors.As(err, &pathErr):
		return fmt.Errorf("summarizer: %w", err)
	case err != nil:
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	default: // being resumed
		if err := training.CheckConfig(outDir, checkpoint.ConfigFile, cfg, "summarizer", allowChanged, log); err != nil {
			return err
		}
		if !reflect.DeepEqual(old.Hyperparams, meta.Hyperparams) || old.AspectSet != meta.AspectSet {
			return fmt.Errorf("%w: %s was trained with another model or data (summarizer.json differs); use another --out or delete it", training.ErrResume, outDir)
		}
		if !checkpoint.SameTokenizer(outDir, tb) {
			return fmt.Errorf("%w: %s was trained with another tokenizer than %s; use another --out or delete it", training.ErrResume, outDir, tokPath)
		}
	}
	if err := checkpoint.Write(outDir, checkpoint.Files{MetaFile: checkpoint.SummarizerFile, Meta: meta, Tokenizer: tb, Config: cfg}); err != nil {
		return fmt.Errorf("summarizer: %w", err)
	}
	return nil
}

// GenVocabulary returns the size most frequent tokens of the summaries (ties by id) plus [EOS],
// sorted; nil (the whole vocabulary) when size is 0 or not smaller than the vocabulary.
func GenVocabulary(summaries [][]int32, size int, h Hyperparams) []int32 {
	if size <= 0 || size >= h.VocabSize {
		return nil
	}
	counts := map[int32]int{}
	for _, s := range summaries {
		for _, id := range s {
			counts[id]++
		}
	}
	ids := make([]int32, 0, len(counts))
	for id := range counts {
		if id != h.EosID {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	ids = append(ids[:min(len(ids), size-1)], h.EosID)
	slices.Sort(ids)
	return ids
}

// specialIDs looks up the tokenizer's special tokens the summarizer needs.
func specialIDs(tok *subword.Tokenizer) (SpecialIDs, error) {
	var s SpecialIDs
	var missing []string
	for _, p := range []struct {
		name string
		dst  *int32
	}{{"[PAD]", &s.Pad}, {"[BOS]", &s.Bos}, {"[EOS]", &s.Eos}, {"[SEP]", &s.Sep}, {"[CTX]", &s.Ctx}} {
		id, ok := tok.SpecialID(p.name)
		if !ok {
			missing = append(missing, p.name)
		}
		*p.dst = id
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("tokenizer lacks special tokens %s", strings.Join(missing, ", "))
	}
	return s, nil
}

// MakeExample builds a training pair from token ids.
func MakeExample(h Hyperparams, aspect []int32, cited, document [][]int32, summary []int32, ref string) Example {
	src, seg := BuildSource(h, aspect, cited, document)
	n := 0
	for _, c := range cited {
		n += len(c)
	}
	return Example{Src: src, Seg: seg, Tgt: slices.Clone(summary[:min(len(summary), h.MaxSummaryLen-1)]), Ref: ref, CitedLen: n}
}

// ExamplesOptions configures TrainExamples.
type ExamplesOptions struct {
	Backend     compute.Backend
	Hyperparams Hyperparams
	Loop        config.TrainLoop
	Seed        int64
	OutDir      string
	// Train and Dev are the examples; Dev may be empty (then the train loss is not evaluated and the
	// last step is kept as best).
	Train, Dev []Example
	// DevDecodeLimit caps the dev examples decoded (greedy) for ROUGE at each evaluation; 0 = all.
	DevDecodeLimit int
	// NoRepeatNgram, MinLenRatio and ChainBonus are applied to the greedy dev decoding, as at
	// inference, so that the checkpoint is selected under the decoding it will be used with.
	NoRepeatNgram int
	MinLenRatio   float64
	ChainBonus    float32
	StartBonus    float32
	// Words is the decoding word rule of the dev decoding (nil = off).
	Words *WordRule
	// Suppress are ids never generated; Detok turns generated ids into text for ROUGE.
	Suppress []int32
	Detok    func([]int32) string
	// Log receives progress; os.Stderr when nil.
	Log io.Writer
	// AfterStep and Trace are passed to the training loop (tests, the GPU check).
	AfterStep func(step int)
	Trace     func(step int, group []training.Batch, loss float64)
	// Shards is the number of data-parallel shards of each batch (training.Options.Shards); 0 =
	// training.DataParallelShards(Backend), 2 on the pure-Go backend.
	Shards int
}

// TrainExamples trains the from-scratch network on examples with the summarizer loop (Fit). The
// best dev checkpoint (by ROUGE-L F of greedy decoding) is written to OutDir/best/model.safetensors.
func TrainExamples(ctx context.Context, o ExamplesOptions) (*training.Result, error) {
	refs := make([]string, len(o.Dev))
	for i, ex := range o.Dev {
		refs[i] = ex.Ref
	}
	return Fit(ctx, &network{o: o, store: gomlxmodel.NewStore(), devBatches: makeBatches(o.Hyperparams, o.Dev, o.Loop.BatchSize, nil)},
		FitOptions{TaskRun: training.TaskRun{Name: "summarizer", Loop: o.Loop, Seed: o.Seed, OutDir: o.OutDir, Log: o.Log, AfterStep: o.AfterStep, Trace: o.Trace},
			Refs: refs, DevDecodeLimit: o.DevDecodeLimit, ROUGE12: true})
}

// network is the from-scratch copy transformer of TrainExamples as a Backbone.
type network struct {
	o          ExamplesOptions
	store      *gomlxmodel.Store
	devBatches []training.Batch
	lossExec   *gomlxmodel.Exec // the dev loss graph, compiled at the first evaluation
}

// Training implements Backbone: the examples in length-bucketed batches, sharded for data
// parallelism.
func (n *network) Training() training.Options {
	h, shards := n.o.Hyperparams, n.o.Shards
	if shards == 0 {
		shards = training.DataParallelShards(n.o.Backend)
	}
	return training.Options{
		Backend: n.o.Backend,
		Store:   n.store,
		Loss: func(scope *gomlxmodel.Scope, inputs []*Node) *Node {
			return LossGraph(scope, h, BatchFromInputs(inputs))
		},
		Batches: func(epoch int) ([]training.Batch, error) {
			return makeBatches(h, n.o.Train, n.o.Loop.BatchSize, rand.New(rand.NewPCG(uint64(n.o.Seed), uint64(epoch)))), nil
		},
		Shards: shards,
		Split:  h.SplitBatch,
	}
}

// DevLoss implements Backbone: the mean token NLL over the dev batches.
func (n *network) DevLoss(ctx context.Context) (float64, error) {
	h := n.o.Hyperparams
	if n.lossExec == nil {
		var err error
		n.lossExec, err = gomlxmodel.NewExec(n.o.Backend, n.store, func(_ *gomlxmodel.Scope, inputs []*Node) []*Node {
			nll, mask := TokenNLLGraph(n.store.Scope(tsmodel.ModelScope), h, BatchFromInputs(inputs))
			return []*Node{ReduceAllSum(Mul(nll, mask)), ReduceAllSum(mask)}
		})
		if err != nil {
			return 0, err
		}
	}
	var sum, count float64
	for _, b := range n.devBatches {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		out, err := n.lossExec.Call(b.Inputs...)
		if err != nil {
			return 0, fmt.Errorf("dev loss: %w", err)
		}
		sum += float64(tensors.ToScalar[float32](out[0]))
		count += float64(tensors.ToScalar[float32](out[1]))
	}
	return sum / max(count, 1), nil
}

// DevSummaries implements Backbone: greedy decoding with the decoding rules of inference
// (no-repeat n-grams, minimum lengths, copy bonuses, word rule), so that the checkpoint is
// selected under the decoding it will be used with.
func (n *network) DevSummaries(_ context.Context, k int) ([]string, training.Metrics, error) {
	o, h := n.o, n.o.Hyperparams
	net, err := netFromVariables(h, n.store)
	if err != nil {
		return nil, nil, err
	}
	net.Suppress(o.Suppress)
	net.ChainBonus = o.ChainBonus
	net.StartBonus = o.StartBonus
	if o.Detok != nil {
		net.LabelLen = LabelLen(o.Detok)
	}
	net.Words = o.Words
	dev := o.Dev[:k]
	opts := decode.Options{BeamSize: 1, MaxLen: h.MaxSummaryLen, MinLen: 1, NoRepeatNgram: o.NoRepeatNgram, BOS: h.BosID, EOS: h.EosID}
	if o.MinLenRatio > 0 {
		opts.MinLens = make([]int, len(dev))
		for i, ex := range dev {
			opts.MinLens[i] = MinLenFor(ex.CitedLen, o.MinLenRatio, opts.MaxLen, opts.MinLen)
		}
	}
	preds := DecodeExamples(net, dev, opts)
	out := make([]string, len(preds))
	for i, p := range preds {
		out[i] = o.Detok(p)
	}
	return out, nil, nil
}

// DecodeExamples decodes the examples' sources with net, in chunks, and returns the generated ids.
func DecodeExamples(net *Net, exs []Example, o decode.Options) [][]int32 {
	const chunk = 16
	out := make([][]int32, 0, len(exs))
	for start := 0; start < len(exs); start += chunk {
		part := exs[start:min(start+chunk, len(exs))]
		ids, segs, aspects := make([][]int32, len(part)), make([][]int32, len(part)), make([]int32, len(part))
		for i, ex := range part {
			ids[i], segs[i], aspects[i] = ex.Src, ex.Seg, ex.Aspect
		}
		states := make([]*DecState, len(part))
		for i, src := range net.EncodeAll(ids, segs, aspects) {
			states[i] = net.NewState(src)
		}
		co := o
		if o.MinLens != nil { // per-input minimums follow the chunk
			co.MinLens = o.MinLens[min(start, len(o.MinLens)):min(start+chunk, len(o.MinLens))]
		}
		for _, hyp := range decode.Search(net, states, co) {
			out = append(out, hyp.Tokens)
		}
	}
	return out
}

// netFromVariables builds a decoding Net (on tsmodel.DecodingBackend, as Load does) from the
// store's current model variables.
func netFromVariables(h Hyperparams, store *gomlxmodel.Store) (*Net, error) {
	backend, err := tsmodel.DecodingBackend()
	if err != nil {
		return nil, err
	}
	vars := map[string]*tensors.Tensor{}
	for v := range store.IterVariables() {
		rel, ok := strings.CutPrefix(v.Path(), tsmodel.ModelScope+"/")
		if !ok {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", v.Path(), err)
		}
		vars[rel] = t
	}
	return NewNet(backend, h, vars)
}

// Length buckets: each distinct (source, target) padded shape compiles its own graph, so lengths
// are rounded up to these steps.
const (
	srcBucket = 32
	tgtBucket = 16
)

// makeBatches groups examples into padded batches. With rng (training) examples are shuffled, then
// sorted by length within windows of 20 batches (so batches hold similar lengths and padding stays
// small) and the batch order is shuffled; without rng (dev) order is by length.
func makeBatches(h Hyperparams, exs []Example, batchSize int, rng *rand.Rand) []training.Batch {
	idx := make([]int, len(exs))
	for i := range idx {
		idx[i] = i
	}
	byLen := func(a, b int) int { return cmp.Compare(len(exs[a].Src), len(exs[b].Src)) }
	if rng != nil {
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		window := 20 * batchSize
		for s := 0; s < len(idx); s += window {
			slices.SortStableFunc(idx[s:min(s+window, len(idx))], byLen)
		}
	} else {
		slices.SortStableFunc(idx, byLen)
	}
	genIndex := h.genIndex()
	var batches []training.Batch
	for s := 0; s < len(idx); s += batchSize {
		batches = append(batches, padBatch(h, genIndex, exs, idx[s:min(s+batchSize, len(idx))]))
	}
	if rng != nil {
		rng.Shuffle(len(batches), func(i, j int) { batches[i], batches[j] = batches[j], batches[i] })
	}
	return batches
}

func roundUp(n, step int) int { return (n + step - 1) / step * step }

// padBatch pads the examples at idx into the four [batch, len] int32 inputs of the loss graph.
func padBatch(h Hyperparams, genIndex map[int32]int32, exs []Example, idx []int) training.Batch {
	srcLen, tgtLen := 1, 1
	for _, i := range idx {
		srcLen = max(srcLen, len(exs[i].Src))
		tgtLen = max(tgtLen, len(exs[i].Tgt)+1)
	}
	srcLen = min(roundUp(srcLen, srcBucket), h.MaxSourceLen)
	tgtLen = min(roundUp(tgtLen, tgtBucket), h.MaxSummaryLen)
	src, seg, tin, tout := make([][]int32, len(idx)), make([][]int32, len(idx)), make([][]int32, len(idx)), make([][]int32, len(idx))
	tgen, ingen := make([][]int32, len(idx)), make([][]float32, len(idx))
	aspects := make([]int32, len(idx))
	tokens := 0
	for k, i := range idx {
		ex := exs[i]
		src[k], seg[k] = make([]int32, srcLen), make([]int32, srcLen)
		for j := range srcLen {
			src[k][j] = h.PadID
		}
		copy(src[k], ex.Src)
		copy(seg[k], ex.Seg)
		tin[k], tout[k] = make([]int32, tgtLen), make([]int32, tgtLen)
		for j := range tgtLen {
			tin[k][j], tout[k][j] = h.PadID, h.PadID
		}
		tin[k][0] = h.BosID
		copy(tin[k][1:], ex.Tgt)
		copy(tout[k], ex.Tgt)
		tout[k][len(ex.Tgt)] = h.EosID
		tgen[k], ingen[k] = make([]int32, tgtLen), make([]float32, tgtLen)
		for j, id := range tout[k] {
			if gi, ok := genIndex[id]; ok {
				tgen[k][j], ingen[k][j] = gi, 1
			}
		}
		aspects[k] = ex.Aspect
		tokens += len(ex.Src) + len(ex.Tgt) + 1
	}
	inputs := []any{src, seg, tin, tout, tgen, ingen}
	if h.NumAspects > 0 {
		inputs = append(inputs, aspects)
	}
	return training.Batch{Inputs: inputs, Examples: len(idx), Tokens: tokens}
}
