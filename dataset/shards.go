package dataset

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"iter"
	"os"
	"path/filepath"
	"reflect"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// ReadShards yields the rows of one task and split of a prepared directory, shard after shard in
// manifest order. T must be the task's row type (TrackerRow for "tracker", SummarizerRow for
// "summarizer", SumThenTrackRow for "sum_then_track", EndToEndRow for "end_to_end"). Errors name
// the shard file; after an error the sequence ends.
//
// # Example
//
//	for row, err := range dataset.ReadShards[dataset.TrackerRow](dir, dataset.TaskTracker, dataset.SplitTrain) {
//		if err != nil {
//			return err
//		}
//		use(row)
//	}
func ReadShards[T any](dir, task, split string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if want := taskRowType(task); want != nil && want != reflect.TypeOf(zero) {
			yield(zero, fmt.Errorf("read shards: task %q holds %v rows, not %T", task, want, zero))
			return
		}
		m, err := ReadManifest(dir)
		if err != nil {
			yield(zero, err)
			return
		}
		shards, err := m.Shards(task, split)
		if err != nil {
			yield(zero, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err))
			return
		}
		for _, sh := range shards {
			path := filepath.Join(dir, sh.Path)
			if err := verifyShard(path, sh); err != nil {
				yield(zero, err)
				return
			}
			rows := 0
			for row, err := range ReadShardFile[T](path) {
				if err == nil {
					rows++
				}
				if !yield(row, err) || err != nil {
					return
				}
			}
			if rows != sh.Rows {
				yield(zero, fmt.Errorf("%s: %w: %d rows read, manifest.json says %d", path, ErrShardMismatch, rows, sh.Rows))
				return
			}
		}
	}
}

// verifyShard checks a shard file against its manifest entry before any row is read: its sha256
// (one sequential pass, far cheaper than the training it feeds) and the row count of its Parquet
// footer. A shard swapped in from another prepared directory, truncated or edited fails here with
// one error naming the file, instead of training silently on the wrong rows.
func verifyShard(path string, sh ShardInfo) error {
	if sh.SHA256 == "" {
		return fmt.Errorf("%s: %w: manifest.json lists no sha256 for it", path, ErrShardMismatch)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read shard: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("read shard %s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sh.SHA256 {
		return fmt.Errorf("%s: %w: sha256 %s, manifest.json says %s (file replaced or modified after prepare; re-run prepare)",
			path, ErrShardMismatch, got, sh.SHA256)
	}
	pf, err := parquet.OpenFile(f, size)
	if err != nil {
		return fmt.Errorf("read shard %s: %w", path, err)
	}
	if n := pf.NumRows(); n != int64(sh.Rows) {
		return fmt.Errorf("%s: %w: %d rows, manifest.json says %d", path, ErrShardMismatch, n, sh.Rows)
	}
	return nil
}

func taskRowType(task string) reflect.Type {
	switch task {
	case TaskTracker:
		return reflect.TypeFor[TrackerRow]()
	case TaskSummarizer:
		return reflect.TypeFor[SummarizerRow]()
	case TaskSumThenTrack:
		return reflect.TypeFor[SumThenTrackRow]()
	case TaskEndToEnd:
		return reflect.TypeFor[EndToEndRow]()
	}
	return nil
}

// ReadShardFile yields the rows of one Parquet shard. A corrupt file is an error, not a panic.
func ReadShardFile[T any](path string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		f, err := os.Open(path)
		if err != nil {
			yield(zero, fmt.Errorf("read shard: %w", err))
			return
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			yield(zero, fmt.Errorf("read shard: %w", err))
			return
		}
		// OpenFile validates the footer first: NewGenericReader panics on a corrupt file.
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			yield(zero, fmt.Errorf("read shard %s: %w", path, err))
			return
		}
		r := parquet.NewGenericReader[T](pf)
		defer r.Close()
		buf := make([]T, 256)
		for {
			// Zeroed elements make the reader allocate fresh slices, so that yielded rows never
			// share memory with the next batch.
			clear(buf)
			n, err := r.Read(buf)
			for i := range n {
				if !yield(buf[i], nil) {
					return
				}
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(zero, fmt.Errorf("read shard %s: %w", path, err))
				return
			}
			if n == 0 {
				return
			}
		}
	}
}

// ShardWriter writes the rows of one task and split as numbered Parquet shards, zstd, rolling
// over every rowsPerShard rows, named as Hugging Face datasets names them:
// dir/<task>/<split>-NNNNN-of-MMMMM.parquet (written as <split>-NNNNN.parquet and renamed by Close,
// when the count is known).
type ShardWriter[T any] struct {
	root, task, split string
	rowsPerShard      int
	rowGroupRows      int

	shards []ShardInfo
	file   *os.File
	bw     *bufio.Writer
	sum    hash.Hash
	pw     *parquet.GenericWriter[T]
	rows   int
	buf    []T
}

// NewShardWriter prepares a writer; no file is created before the first row.
func NewShardWriter[T any](root, task, split string, rowsPerShard, rowGroupRows int) *ShardWriter[T] {
	return &ShardWriter[T]{root: root, task: task, split: split, rowsPerShard: rowsPerShard, rowGroupRows: rowGroupRows}
}

// zstdCodec is shared by all writers: encoders are pooled inside. One goroutine per encoder keeps
// the output byte-identical from run to run.
var zstdCodec = &zstd.Codec{Level: zstd.SpeedFastest, Concurrency: 1}

func (w *ShardWriter[T]) open() error {
	rel := filepath.Join(w.task, fmt.Sprintf("%s-%05d.parquet", w.split, len(w.shards)))
	path := filepath.Join(w.root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create shard: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create shard: %w", err)
	}
	w.file = f
	w.sum = sha256.New()
	w.bw = bufio.NewWriterSize(io.MultiWriter(f, w.sum), 1<<20)
	w.pw = parquet.NewGenericWriter[T](w.bw,
		parquet.Compression(zstdCodec),
		parquet.MaxRowsPerRowGroup(int64(w.rowGroupRows)),
		parquet.CreatedBy("tracksum-prepare", fmt.Sprint(ShardSchemaVersion), ""),
	)
	w.rows = 0
	w.shards = append(w.shards, ShardInfo{Path: filepath.ToSlash(rel)})
	return nil
}

// Write appends one row, starting a new shard when the current one is full.
func (w *ShardWriter[T]) Write(row T) error {
	if w.pw != nil && w.rows+len(w.buf) >= w.rowsPerShard {
		if err := w.closeShard(); err != nil {
			return err
		}
	}
	if w.pw == nil {
		if err := w.open(); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, row)
	if len(w.buf) >= 256 {
		return w.flushBuf()
	}
	return nil
}

func (w *ShardWriter[T]) flushBuf() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.pw.Write(w.buf); err != nil {
		return fmt.Errorf("write shard %s: %w", w.shards[len(w.shards)-1].Path, err)
	}
	w.rows += len(w.buf)
	clear(w.buf)
	w.buf = w.buf[:0]
	return nil
}

func (w *ShardWriter[T]) closeShard() error {
	cur := &w.shards[len(w.shards)-1]
	if err := w.flushBuf(); err != nil {
		return err
	}
	err := w.pw.Close()
	if err == nil {
		err = w.bw.Flush()
	}
	if cerr := w.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write shard %s: %w", cur.Path, err)
	}
	cur.Rows = w.rows
	cur.SHA256 = hex.EncodeToString(w.sum.Sum(nil))
	w.pw, w.file, w.bw = nil, nil, nil
	return nil
}

// Close finishes the last shard and returns all shards written (none when no row was written).
func (w *ShardWriter[T]) Close() ([]ShardInfo, error) {
	if w.pw != nil {
		if err := w.closeShard(); err != nil {
			return nil, err
		}
	}
	if w.shards == nil {
		return []ShardInfo{}, nil
	}
	for i := range w.shards {
		rel := filepath.Join(w.task, fmt.Sprintf("%s-%05d-of-%05d.parquet", w.split, i, len(w.shards)))
		if err := os.Rename(filepath.Join(w.root, filepath.FromSlash(w.shards[i].Path)), filepath.Join(w.root, rel)); err != nil {
			return nil, fmt.Errorf("write shard: %w", err)
		}
		w.shards[i].Path = filepath.ToSlash(rel)
	}
	return w.shards, nil
}

// Abort closes any open file without finishing it (the caller removes the directory).
func (w *ShardWriter[T]) Abort() {
	if w.file != nil {
		w.file.Close()
		w.file = nil
	}
}
