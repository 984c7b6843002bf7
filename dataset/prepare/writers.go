package prepare

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/progress"
	"github.com/tracksum/tracksum/subword"
)

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
		if len(src.inputs) == 0 || !src.allJSONL() {
			// The sample, or files of another format: whole abstracts, read by this goroutine.
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

// taskWriter writes the rows of one task to its shards (one writer per split) and counts them for
// the manifest. The four tasks differ only in their row type and in what makes a row positive:
// the table in newWriters.
type taskWriter interface {
	// write writes the task's rows of one split of a batch, in order.
	write(si int, rows *taskRows) error
	// close finishes every split and returns the task's manifest entry.
	close() (dataset.TaskInfo, error)
	// abort removes whatever was written.
	abort()
}

// rowWriter is the taskWriter of one row type.
type rowWriter[T any] struct {
	task string
	// rows picks the task's rows out of a batch's rows; label returns a row's aspect and whether
	// it counts as positive.
	rows   func(*taskRows) []T
	label  func(*T) (aspect string, positive bool)
	shards [3]*dataset.ShardWriter[T] // per split
	counts [3]dataset.SplitShards
}

func newRowWriter[T any](root string, pc config.Prepare, task string, rows func(*taskRows) []T,
	label func(*T) (string, bool)) *rowWriter[T] {
	w := &rowWriter[T]{task: task, rows: rows, label: label}
	for si, split := range dataset.Splits {
		w.shards[si] = dataset.NewShardWriter[T](root, task, split, pc.RowsPerShard, pc.RowGroupRows)
		w.counts[si].PositivesByAspect = map[string]int{}
	}
	return w
}

func (w *rowWriter[T]) write(si int, r *taskRows) error {
	rows := w.rows(r)
	c := &w.counts[si]
	for i := range rows {
		aspect, positive := w.label(&rows[i])
		c.Rows++
		if positive {
			c.Positives++
			c.PositivesByAspect[aspect]++
		}
	}
	for _, row := range rows {
		if err := w.shards[si].Write(row); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
	}
	return nil
}

func (w *rowWriter[T]) close() (dataset.TaskInfo, error) {
	info := dataset.TaskInfo{Splits: map[string]dataset.SplitShards{}}
	for si, split := range dataset.Splits {
		shards, err := w.shards[si].Close()
		if err != nil {
			return dataset.TaskInfo{}, fmt.Errorf("prepare: %w", err)
		}
		s := w.counts[si]
		s.Shards = shards
		info.Splits[split] = s
	}
	return info, nil
}

func (w *rowWriter[T]) abort() {
	for _, sw := range w.shards {
		sw.Abort()
	}
}

// writers holds the writer of every task, in dataset.Tasks order.
type writers struct {
	tasks []taskWriter
}

// newWriters is the table of the tasks: where each finds its rows in a batch, and which of its rows
// are positive (a cited sentence for the sentence-level tasks, every summarizer row since negatives
// have none, a cited instance for end_to_end).
func newWriters(root string, pc config.Prepare) *writers {
	return &writers{tasks: []taskWriter{
		newRowWriter(root, pc, dataset.TaskTracker,
			func(r *taskRows) []dataset.TrackerRow { return r.tracker },
			func(row *dataset.TrackerRow) (string, bool) { return row.Aspect, row.Label }),
		newRowWriter(root, pc, dataset.TaskSummarizer,
			func(r *taskRows) []dataset.SummarizerRow { return r.summarizer },
			func(row *dataset.SummarizerRow) (string, bool) { return row.Aspect, true }),
		newRowWriter(root, pc, dataset.TaskSumThenTrack,
			func(r *taskRows) []dataset.SumThenTrackRow { return r.stt },
			func(row *dataset.SumThenTrackRow) (string, bool) { return row.Aspect, row.Label }),
		newRowWriter(root, pc, dataset.TaskEndToEnd,
			func(r *taskRows) []dataset.EndToEndRow { return r.ete },
			func(row *dataset.EndToEndRow) (string, bool) { return row.Aspect, len(row.Citations) > 0 }),
	}}
}

// write writes the rows of a batch, every task and split, then drops them.
func (w *writers) write(b *batch) error {
	for si := range b.rows {
		for _, t := range w.tasks {
			if err := t.write(si, &b.rows[si]); err != nil {
				return err
			}
		}
		b.rows[si] = taskRows{}
	}
	return nil
}

// close finishes every shard and returns the manifest's task entries.
func (w *writers) close() (map[string]dataset.TaskInfo, error) {
	out := map[string]dataset.TaskInfo{}
	for i, t := range w.tasks {
		info, err := t.close()
		if err != nil {
			return nil, err
		}
		out[dataset.Tasks[i]] = info
	}
	return out, nil
}

func (w *writers) abort() {
	for _, t := range w.tasks {
		t.abort()
	}
}
