// Package prepare turns benchmark JSONL files (or the built-in synthetic sample) into a prepared
// directory: reproducible splits, a tokenizer learned from the training split, and zstd Parquet
// shards for every training task, described by manifest.json.
//
// It streams: the input is read three times (validate and collect split keys; learn the tokenizer
// from the training split; tokenize and write the shards), and only per-abstract keys and hashes
// are kept in memory, never the documents. Output goes to a temporary directory that is renamed at
// the end, so an error leaves nothing behind.
//
// # Example
//
//	sum, err := prepare.Run(ctx, cfg, prepare.Options{Inputs: []string{"data.jsonl"}, Out: "prepared"})
//	if err != nil {
//		return err
//	}
//	sum.Print(os.Stdout)
package prepare

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/progress"
	"github.com/tracksum/tracksum/subword"
	"go.yaml.in/yaml/v3"
)

// Options are the parts of a prepare run that are not configuration.
type Options struct {
	// Inputs are TracSum/PCoA JSONL files; empty means the built-in synthetic sample
	// (cfg.Prepare.SampleSize abstracts from cfg.Seed).
	Inputs []string
	// Out is the prepared directory to create.
	Out string
	// Overwrite allows replacing an existing non-empty Out.
	Overwrite bool
	// Progress receives the progress bar; nil disables it.
	Progress io.Writer
}

// Summary is what a run produced, for the closing report.
type Summary struct {
	Manifest *dataset.Manifest
	Elapsed  time.Duration
	// InputBytes is the size of the input files (0 for the synthetic sample).
	InputBytes int64
}

// Run prepares opts.Out from the configured inputs. On error nothing is left at opts.Out (a
// previous directory there is only replaced on success).
func Run(ctx context.Context, cfg *config.Config, opts Options) (*Summary, error) {
	start := time.Now()
	if opts.Out == "" {
		return nil, errors.New("prepare: no output directory")
	}
	workers := cfg.Prepare.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	src := &source{inputs: opts.Inputs, set: cfg.Prepare.AspectSet, seed: cfg.Seed, sampleSize: cfg.Prepare.SampleSize, workers: workers}

	// Lock and check the output before the long passes: a file or a foreign directory at --out, or
	// another run writing it, fails now, and no other run can take the output until Commit.
	dir, err := atomicio.NewDir(opts.Out, opts.Overwrite)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer dir.Abort()

	// Pass 1: validate everything and collect the split keys before any output exists.
	newBar := func(label string, total int64, unit string) *progress.Bar {
		if opts.Progress == nil {
			return nil
		}
		return progress.NewTo(opts.Progress, label, total, unit)
	}
	scanBar := newBar("validate", 0, "instances")
	scan, err := src.scan(ctx, cfg.Prepare.SplitBy, scanBar)
	finish(scanBar)
	if err != nil {
		return nil, err
	}
	if scan.counts.Instances == 0 {
		return nil, fmt.Errorf("prepare: no instances in %v", opts.Inputs)
	}
	splits, err := dataset.MakeSplits(scan.keys, cfg.Prepare.SplitBy, cfg.Prepare.TrainRatio, cfg.Prepare.DevRatio, cfg.Prepare.TestRatio, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if cfg.Prepare.Folds > 0 {
		if splits.Folds, err = dataset.MakeFolds(dataset.GroupPMIDs(splits.By, scan.keys), cfg.Prepare.Folds, cfg.Seed); err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
	}
	scan.keys = nil
	if len(splits.IDs[dataset.SplitTrain]) == 0 {
		return nil, errors.New("prepare: the training split is empty (too few abstracts for prepare.train_ratio)")
	}

	// Pass 2: learn the tokenizer from the training split only.
	tokBar := newBar("tokenizer", 0, "texts")
	tokInfo, tok, err := learnTokenizer(ctx, src, splits, cfg.Tokenizer, dir.Path(dataset.TokenizerFile), tokBar)
	finish(tokBar)
	if err != nil {
		return nil, err
	}

	// Pass 3: tokenize and write the shards.
	bar := newBar("shards", int64(scan.counts.Instances), "instances")
	tasks, err := writeShards(ctx, src, splits, tok, cfg.Prepare, dir.Tmp, bar)
	finish(bar)
	if err != nil {
		return nil, err
	}

	ete := tasks[dataset.TaskEndToEnd]
	scan.counts.Negatives = 0
	for _, sp := range ete.Splits {
		scan.counts.Negatives += sp.Rows - sp.Positives
	}
	m := &dataset.Manifest{
		SchemaVersion: dataset.ShardSchemaVersion,
		Source:        "input",
		Inputs:        scan.inputs,
		Seed:          cfg.Seed,
		AspectSet:     scan.aspectSet,
		Counts:        scan.counts,
		SplitInfo: dataset.SplitInfo{File: dataset.SplitsFile, By: splits.By, Ratios: splits.Ratios,
			Groups: splits.Sizes()},
		Tokenizer: tokInfo,
		Tasks:     tasks,
	}
	if len(opts.Inputs) == 0 {
		m.Source, m.SampleSize, m.Inputs = "sample", cfg.Prepare.SampleSize, []dataset.InputFile{}
	}
	if m.Config, err = configMap(cfg); err != nil {
		return nil, err
	}
	if err := writeJSON(dir.Path(dataset.SplitsFile), splits); err != nil {
		return nil, err
	}
	if err := cfg.WriteFile(dir.Path(dataset.ConfigFile)); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := writeJSON(dir.Path(dataset.ManifestFile), m); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := dir.Commit(); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	var inBytes int64
	for _, in := range scan.inputs {
		inBytes += in.Bytes
	}
	return &Summary{Manifest: m, Elapsed: time.Since(start), InputBytes: inBytes}, nil
}

// source yields the instances of the run: JSONL files (validated on every pass) or the synthetic
// sample (regenerated on every pass: cheaper than holding it).
type source struct {
	inputs     []string
	set        string
	seed       int64
	sampleSize int
	// resolved is the aspect set found by scan; later passes decode with it, unvalidated.
	resolved string
	workers  int
}

// abstracts yields runs of instances that share a PMID (consecutive in the input), so that each
// document is tokenized once for all its aspects. It decodes files without validation: call it only
// after scan.
func (s *source) abstracts(ctx context.Context) iter.Seq2[[]dataset.Instance, error] {
	return func(yield func([]dataset.Instance, error) bool) {
		if len(s.inputs) == 0 {
			for i := range s.sampleSize {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				if !yield(dataset.SyntheticAbstract(s.seed, i), nil) {
					return
				}
			}
			return
		}
		var run []dataset.Instance
		decode := func(l dataset.Line) (dataset.Instance, error) { return dataset.DecodeValid(l, s.resolved) }
		for d, err := range parallelDecode(ctx, s.lines(), s.workers, decode) {
			if err == nil {
				err = d.err
			}
			if err != nil {
				yield(nil, err)
				return
			}
			in := d.in
			if len(run) > 0 && run[0].PMID != in.PMID {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				if !yield(run, nil) {
					return
				}
				run = nil
			}
			run = append(run, in)
		}
		if len(run) > 0 {
			yield(run, nil)
		}
	}
}

// lines yields the lines of all input files in order.
func (s *source) lines() iter.Seq2[dataset.Line, error] {
	return func(yield func(dataset.Line, error) bool) {
		for _, path := range s.inputs {
			for l, err := range dataset.Lines(path) {
				if !yield(l, err) || err != nil {
					return
				}
			}
		}
	}
}

type scanResult struct {
	keys      []string
	counts    dataset.Counts
	inputs    []dataset.InputFile
	aspectSet string
}

// scan validates the whole input and returns the split keys and counts.
func finish(b *progress.Bar) {
	if b != nil {
		b.Finish()
	}
}

func (s *source) scan(ctx context.Context, by string, bar *progress.Bar) (*scanResult, error) {
	res := &scanResult{inputs: []dataset.InputFile{}}
	if len(s.inputs) == 0 {
		// The sample's keys are known without generating it.
		res.aspectSet = dataset.AspectSetTracSum
		s.resolved = res.aspectSet
		aspects := dataset.Aspects(dataset.AspectSetTracSum)
		for i := range s.sampleSize {
			pmid := dataset.SyntheticPMID(i)
			if by == dataset.SplitByPMID {
				res.keys = append(res.keys, pmid)
			} else {
				for _, a := range aspects {
					res.keys = append(res.keys, dataset.GroupKey(by, pmid, a.Code))
				}
			}
		}
		// Negatives are counted from the end_to_end rows once written.
		res.counts = dataset.Counts{Abstracts: s.sampleSize, Instances: s.sampleSize * len(aspects)}
		return res, nil
	}
	v := dataset.NewValidator(s.set)
	seenPMID := map[string]struct{}{}
	for _, path := range s.inputs {
		info := dataset.InputFile{Path: path}
		sum, size, err := fileSHA256(path)
		if err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
		info.SHA256, info.Bytes = sum, size
		for in, err := range s.validated(ctx, v, path) {
			if err != nil {
				return nil, err
			}
			info.Instances++
			if bar != nil {
				bar.Add(1)
			}
			res.counts.Instances++
			if _, ok := seenPMID[in.PMID]; !ok {
				seenPMID[in.PMID] = struct{}{}
				res.counts.Abstracts++
				if by == dataset.SplitByPMID {
					res.keys = append(res.keys, in.PMID)
				}
			}
			if by == dataset.SplitByInstance {
				res.keys = append(res.keys, dataset.GroupKey(by, in.PMID, in.Aspect))
			}
		}
		res.inputs = append(res.inputs, info)
	}
	res.aspectSet = v.AspectSet()
	s.resolved = res.aspectSet
	return res, nil
}

// validated yields the records of one file checked by v, which is shared across files so that
// duplicates between files are caught too. Records are decoded and checked on their own in
// parallel; the checks against earlier records run here, in input order. The first record of the
// run goes through v.Parse alone, since it may decide the aspect set the others are parsed with.
func (s *source) validated(ctx context.Context, v *dataset.Validator, path string) iter.Seq2[dataset.Instance, error] {
	return func(yield func(dataset.Instance, error) bool) {
		lines := dataset.Lines(path)
		if v.AspectSet() == "auto" {
			var first *dataset.Line
			for l, err := range lines {
				if err != nil {
					yield(dataset.Instance{}, err)
					return
				}
				first = &l
				break
			}
			if first == nil {
				return
			}
			in, err := v.Parse(first.File, first.Num, first.Data)
			if !yield(in, err) || err != nil {
				return
			}
			lines = skipLines(dataset.Lines(path), 1)
		}
		for d, err := range parallelDecode(ctx, lines, s.workers, func(l dataset.Line) (dataset.Instance, error) {
			return v.ParseRecord(l.File, l.Num, l.Data)
		}) {
			if err == nil {
				err = d.err
			}
			if err == nil {
				err = v.Check(d.line.File, d.line.Num, &d.in)
			}
			if !yield(d.in, err) || err != nil {
				return
			}
		}
	}
}

func skipLines(seq iter.Seq2[dataset.Line, error], n int) iter.Seq2[dataset.Line, error] {
	return func(yield func(dataset.Line, error) bool) {
		i := 0
		for l, err := range seq {
			if err == nil && i < n {
				i++
				continue
			}
			if !yield(l, err) {
				return
			}
		}
	}
}

func fileSHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// learnTokenizer trains the subword vocabulary on the training split's sentences (each abstract
// once) and summaries, writes it to path and loads it back the way every later stage will.
func learnTokenizer(ctx context.Context, src *source, splits *dataset.SplitAssignment, tc config.Tokenizer, path string,
	bar *progress.Bar) (dataset.TokenizerInfo, *subword.Tokenizer, error) {
	var readErr error
	texts := 0
	seen := map[string]struct{}{}
	corpus := func(yield func(string) bool) {
		emit := func(s string) bool {
			if tc.MaxTrainTexts > 0 && texts >= tc.MaxTrainTexts {
				return false
			}
			texts++
			if bar != nil {
				bar.Add(1)
			}
			return yield(s)
		}
		for run, err := range src.abstracts(ctx) {
			if err != nil {
				readErr = err
				return
			}
			for _, in := range run {
				if splits.Split(in.PMID, in.Aspect) != dataset.SplitTrain {
					continue
				}
				if _, ok := seen[in.PMID]; !ok {
					seen[in.PMID] = struct{}{}
					for _, s := range in.Document {
						if !emit(s) {
							return
						}
					}
				}
				if !emit(in.Summary) {
					return
				}
			}
		}
	}
	vocab, err := subword.Train(corpus, subword.TrainOptions{Kind: tc.Kind, VocabSize: tc.VocabSize, MinFrequency: tc.MinFrequency})
	if readErr != nil {
		return dataset.TokenizerInfo{}, nil, readErr
	}
	if err != nil {
		return dataset.TokenizerInfo{}, nil, fmt.Errorf("prepare: tokenizer: %w", err)
	}
	if err := vocab.WriteFile(path); err != nil {
		return dataset.TokenizerInfo{}, nil, fmt.Errorf("prepare: tokenizer: %w", err)
	}
	tok, err := subword.Load(path)
	if err != nil {
		return dataset.TokenizerInfo{}, nil, fmt.Errorf("prepare: tokenizer: %w", err)
	}
	sum, _, err := fileSHA256(path)
	if err != nil {
		return dataset.TokenizerInfo{}, nil, fmt.Errorf("prepare: tokenizer: %w", err)
	}
	return dataset.TokenizerInfo{File: dataset.TokenizerFile, Kind: tc.Kind, VocabSize: tok.VocabSize(), TrainTexts: texts, SHA256: sum}, tok, nil
}

func configMap(cfg *config.Config) (map[string]any, error) {
	b, err := cfg.YAML()
	if err != nil {
		return nil, fmt.Errorf("prepare: config: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("prepare: config: %w", err)
	}
	return m, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("prepare: %s: %w", filepath.Base(path), err)
	}
	if err := atomicio.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// batch is a unit of work of the tokenizing pool: a few abstracts in, their rows out.
type batch struct {
	runs  [][]dataset.Instance
	lines []dataset.Line // input files: decoded by the worker, in parallel
	set   string
	rows  [3]taskRows // per split
	err   error
}

type taskRows struct {
	tracker    []dataset.TrackerRow
	summarizer []dataset.SummarizerRow
	stt        []dataset.SumThenTrackRow
	ete        []dataset.EndToEndRow
}

const (
	batchAbstracts = 32
	batchLines     = 128
)

// writeShards tokenizes every instance and writes the rows of all tasks. Abstracts are tokenized by
// a pool of workers, and rows written by this goroutine in input order, so the output does not
// depend on scheduling.
func writeShards(ctx context.Context, src *source, splits *dataset.SplitAssignment, tok *subword.Tokenizer,
	pc config.Prepare, root string, bar *progress.Bar) (map[string]dataset.TaskInfo, error) {
	workers := pc.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	sep, ok := tok.SpecialID("[SEP]")
	if !ok {
		return nil, errors.New("prepare: tokenizer has no [SEP] token")
	}
	var readErr, writeErr error
	produce := func(ctx context.Context, emit func(*batch) bool) {
		cur := &batch{}
		send := func() bool {
			if !emit(cur) {
				return false
			}
			cur = &batch{}
			return true
		}
		if len(src.inputs) == 0 {
			for run, err := range src.abstracts(ctx) {
				if err != nil {
					readErr = err
					return
				}
				cur.runs = append(cur.runs, run)
				if len(cur.runs) == batchAbstracts && !send() {
					return
				}
			}
		} else {
			// Lines go to the workers undecoded: JSON decoding is the costliest part of reading.
			for l, err := range src.lines() {
				if err != nil {
					readErr = err
					return
				}
				cur.lines, cur.set = append(cur.lines, l), src.resolved
				if len(cur.lines) == batchLines && !send() {
					return
				}
			}
		}
		if len(cur.runs) > 0 || len(cur.lines) > 0 {
			send()
		}
	}
	work := func(b *batch) *batch {
		buildRows(b, splits, tok, sep)
		return b
	}
	w := newWriters(root, pc)
	defer w.abort()
	consume := func(b *batch) bool {
		if b.err != nil {
			writeErr = b.err
			return false
		}
		n := 0
		for _, r := range b.runs {
			n += len(r)
		}
		if err := w.write(b); err != nil {
			writeErr = err
			return false
		}
		if bar != nil {
			bar.Add(int64(n))
		}
		return true
	}
	if err := orderedParallel(ctx, workers, produce, work, consume); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if writeErr != nil {
		return nil, writeErr
	}
	if readErr != nil {
		return nil, readErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	return w.close()
}

// buildRows tokenizes each sentence of an abstract once and reuses the ids in every row of every
// aspect and task.
func buildRows(b *batch, splits *dataset.SplitAssignment, tok *subword.Tokenizer, sep int32) {
	for _, l := range b.lines {
		in, err := dataset.DecodeValid(l, b.set)
		if err != nil {
			b.err = err
			return
		}
		if n := len(b.runs); n > 0 && b.runs[n-1][0].PMID == in.PMID {
			b.runs[n-1] = append(b.runs[n-1], in)
		} else {
			b.runs = append(b.runs, []dataset.Instance{in})
		}
	}
	b.lines = nil
	for _, run := range b.runs {
		var docIDs [][]int32
		var docFlat []int32
		for _, in := range run {
			split := splits.Split(in.PMID, in.Aspect)
			si := slices.Index(dataset.Splits, split)
			if si < 0 {
				continue
			}
			if docIDs == nil {
				docIDs = make([][]int32, len(in.Document))
				for k, s := range in.Document {
					docIDs[k] = tok.Encode(s)
				}
				docFlat = joinIDs(docIDs, nil, sep)
			}
			appendRows(&b.rows[si], &in, docIDs, docFlat, tok, sep)
		}
	}
}

func joinIDs(parts [][]int32, idx []int32, sep int32) []int32 {
	var out []int32
	if idx == nil {
		for k, p := range parts {
			if k > 0 {
				out = append(out, sep)
			}
			out = append(out, p...)
		}
		return out
	}
	for k, i := range idx {
		if k > 0 {
			out = append(out, sep)
		}
		out = append(out, parts[i]...)
	}
	return out
}

func appendRows(r *taskRows, in *dataset.Instance, docIDs [][]int32, docFlat []int32, tok *subword.Tokenizer, sep int32) {
	n := len(in.Document)
	cited := make([]bool, n)
	idx := make([]int32, 0, len(in.Indexes))
	for _, i := range in.Indexes {
		cited[i] = true
		idx = append(idx, int32(i))
	}
	// Document order: what a tracker hands the summarizer at inference time.
	slices.Sort(idx)
	summaryIDs := tok.Encode(in.Summary)
	for k, s := range in.Document {
		r.tracker = append(r.tracker, dataset.TrackerRow{
			PMID: in.PMID, Aspect: in.Aspect, SentenceIndex: int32(k), Sentence: s, Label: cited[k],
			DocLength: int32(n), RelPosition: float32(k) / float32(max(n-1, 1)), SentenceIDs: docIDs[k],
		})
	}
	if !in.IsNegative() {
		citedSents := make([]string, len(idx))
		for k, i := range idx {
			citedSents[k] = in.Document[i]
		}
		r.summarizer = append(r.summarizer, dataset.SummarizerRow{
			PMID: in.PMID, Aspect: in.Aspect, CitedIndexes: idx, CitedSentences: citedSents, Document: in.Document,
			Summary: in.Summary, CitedIDs: joinIDs(docIDs, idx, sep), DocumentIDs: docFlat, SummaryIDs: summaryIDs,
		})
		for k, s := range in.Document {
			r.stt = append(r.stt, dataset.SumThenTrackRow{
				PMID: in.PMID, Aspect: in.Aspect, SentenceIndex: int32(k), Sentence: s, Summary: in.Summary,
				Label: cited[k], SentenceIDs: docIDs[k], SummaryIDs: summaryIDs,
			})
		}
	}
	r.ete = append(r.ete, dataset.EndToEndRow{
		PMID: in.PMID, Aspect: in.Aspect, Document: in.Document, Summary: in.Summary, Citations: idx,
		DocumentIDs: docFlat, SummaryIDs: summaryIDs,
	})
}

// writers holds one shard writer per task and split, plus the counts for the manifest.
type writers struct {
	tracker    [3]*dataset.ShardWriter[dataset.TrackerRow]
	summarizer [3]*dataset.ShardWriter[dataset.SummarizerRow]
	stt        [3]*dataset.ShardWriter[dataset.SumThenTrackRow]
	ete        [3]*dataset.ShardWriter[dataset.EndToEndRow]
	counts     map[string]*[3]dataset.SplitShards
}

func newWriters(root string, pc config.Prepare) *writers {
	w := &writers{counts: map[string]*[3]dataset.SplitShards{}}
	for si, split := range dataset.Splits {
		w.tracker[si] = dataset.NewShardWriter[dataset.TrackerRow](root, dataset.TaskTracker, split, pc.RowsPerShard, pc.RowGroupRows)
		w.summarizer[si] = dataset.NewShardWriter[dataset.SummarizerRow](root, dataset.TaskSummarizer, split, pc.RowsPerShard, pc.RowGroupRows)
		w.stt[si] = dataset.NewShardWriter[dataset.SumThenTrackRow](root, dataset.TaskSumThenTrack, split, pc.RowsPerShard, pc.RowGroupRows)
		w.ete[si] = dataset.NewShardWriter[dataset.EndToEndRow](root, dataset.TaskEndToEnd, split, pc.RowsPerShard, pc.RowGroupRows)
	}
	for _, t := range dataset.Tasks {
		c := &[3]dataset.SplitShards{}
		for si := range c {
			c[si].PositivesByAspect = map[string]int{}
		}
		w.counts[t] = c
	}
	return w
}

func count(c *dataset.SplitShards, aspect string, positive bool) {
	c.Rows++
	if positive {
		c.Positives++
		c.PositivesByAspect[aspect]++
	}
}

func writeAll[T any](sw *dataset.ShardWriter[T], rows []T) error {
	for _, r := range rows {
		if err := sw.Write(r); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
	}
	return nil
}

func (w *writers) write(b *batch) error {
	for si := range b.rows {
		r := &b.rows[si]
		for _, row := range r.tracker {
			count(&w.counts[dataset.TaskTracker][si], row.Aspect, row.Label)
		}
		for _, row := range r.summarizer {
			count(&w.counts[dataset.TaskSummarizer][si], row.Aspect, true)
		}
		for _, row := range r.stt {
			count(&w.counts[dataset.TaskSumThenTrack][si], row.Aspect, row.Label)
		}
		for _, row := range r.ete {
			count(&w.counts[dataset.TaskEndToEnd][si], row.Aspect, len(row.Citations) > 0)
		}
		if err := errors.Join(writeAll(w.tracker[si], r.tracker), writeAll(w.summarizer[si], r.summarizer),
			writeAll(w.stt[si], r.stt), writeAll(w.ete[si], r.ete)); err != nil {
			return err
		}
		*r = taskRows{}
	}
	return nil
}

func (w *writers) close() (map[string]dataset.TaskInfo, error) {
	out := map[string]dataset.TaskInfo{}
	for _, t := range dataset.Tasks {
		out[t] = dataset.TaskInfo{Splits: map[string]dataset.SplitShards{}}
	}
	for si, split := range dataset.Splits {
		for _, c := range []struct {
			task  string
			close func() ([]dataset.ShardInfo, error)
		}{
			{dataset.TaskTracker, w.tracker[si].Close},
			{dataset.TaskSummarizer, w.summarizer[si].Close},
			{dataset.TaskSumThenTrack, w.stt[si].Close},
			{dataset.TaskEndToEnd, w.ete[si].Close},
		} {
			shards, err := c.close()
			if err != nil {
				return nil, fmt.Errorf("prepare: %w", err)
			}
			s := w.counts[c.task][si]
			s.Shards = shards
			out[c.task].Splits[split] = s
		}
	}
	return out, nil
}

func (w *writers) abort() {
	for si := range dataset.Splits {
		w.tracker[si].Abort()
		w.summarizer[si].Abort()
		w.stt[si].Abort()
		w.ete[si].Abort()
	}
}
