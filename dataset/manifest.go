package dataset

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/internal/atomicio"
)

// Task names: the sub-directories of a prepared directory, one per training task.
const (
	TaskTracker      = "tracker"        // TrackerRow
	TaskSummarizer   = "summarizer"     // SummarizerRow
	TaskSumThenTrack = "sum_then_track" // SumThenTrackRow
	TaskEndToEnd     = "end_to_end"     // EndToEndRow
)

// Split names.
const (
	SplitTrain = "train"
	SplitDev   = "dev"
	SplitTest  = "test"
)

// Tasks lists the task names in the order prepare writes them.
var Tasks = []string{TaskTracker, TaskSummarizer, TaskSumThenTrack, TaskEndToEnd}

// Splits lists the split names in order.
var Splits = []string{SplitTrain, SplitDev, SplitTest}

// File names inside a prepared directory.
const (
	ManifestFile  = "manifest.json"
	SplitsFile    = "splits.json"
	TokenizerFile = "tokenizer.json"
	ConfigFile    = "config.yaml"
)

// ErrShardMismatch marks a shard that does not match its manifest entry (sha256, row count) or a
// manifest entry that is inconsistent: the prepared directory was modified after prepare wrote it.
var ErrShardMismatch = errors.New("shard does not match manifest.json")

// Manifest describes a prepared directory (OUT/manifest.json): where every shard is, how many rows
// and positives it holds and its sha256, plus what produced it (config, seed, input checksums).
// It holds no timestamps so that the same input and config give a byte-identical file.
type Manifest struct {
	SchemaVersion int `json:"schema_version"`
	// Source is "sample" (built-in synthetic abstracts) or "input" (JSONL files).
	Source     string      `json:"source"`
	SampleSize int         `json:"sample_size,omitempty"`
	Inputs     []InputFile `json:"inputs"`
	Seed       int64       `json:"seed"`
	AspectSet  string      `json:"aspect_set"`
	// Config is the resolved configuration (also written as config.yaml).
	Config    map[string]any      `json:"config"`
	Counts    Counts              `json:"counts"`
	SplitInfo SplitInfo           `json:"split"`
	Tokenizer TokenizerInfo       `json:"tokenizer"`
	Tasks     map[string]TaskInfo `json:"tasks"`
}

// InputFile identifies one input file by checksum.
type InputFile struct {
	Path      string `json:"path"`
	SHA256    string `json:"sha256"`
	Bytes     int64  `json:"bytes"`
	Instances int    `json:"instances"`
}

// Counts summarises the input.
type Counts struct {
	Instances int `json:"instances"`
	Abstracts int `json:"abstracts"`
	Negatives int `json:"negatives"`
}

// SplitInfo records how splits were made; the ids are in splits.json.
type SplitInfo struct {
	File   string             `json:"file"`
	By     string             `json:"by"`
	Ratios map[string]float64 `json:"ratios"`
	// Groups is the number of PMIDs (by pmid) or instances (by instance) per split.
	Groups map[string]int `json:"groups"`
}

// TokenizerInfo describes OUT/tokenizer.json.
type TokenizerInfo struct {
	File       string `json:"file"`
	Kind       string `json:"kind"`
	VocabSize  int    `json:"vocab_size"`
	TrainTexts int    `json:"train_texts"`
	SHA256     string `json:"sha256"`
}

// TaskInfo lists the shards of one task per split.
type TaskInfo struct {
	Splits map[string]SplitShards `json:"splits"`
}

// SplitShards describes the shards of one task and split. Positives counts rows with a positive
// label (tracker, sum_then_track) or positive instances (summarizer: all rows, end_to_end: rows
// with citations); PositivesByAspect breaks it down by aspect code.
type SplitShards struct {
	Rows              int            `json:"rows"`
	Positives         int            `json:"positives"`
	PositivesByAspect map[string]int `json:"positives_by_aspect"`
	Shards            []ShardInfo    `json:"shards"`
}

// ShardInfo is one Parquet file, its path relative to the prepared directory.
type ShardInfo struct {
	Path   string `json:"path"`
	Rows   int    `json:"rows"`
	SHA256 string `json:"sha256"`
}

// ReadManifest loads dir/manifest.json and checks its schema version.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	var m Manifest
	err := atomicio.ReadJSON(path, &m, false)
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if err != nil {
		return nil, err // names the file
	}
	if m.SchemaVersion != ShardSchemaVersion {
		return nil, fmt.Errorf("%s: %w: %d (this build reads %d; re-run prepare)", path, ErrSchemaVersion, m.SchemaVersion, ShardSchemaVersion)
	}
	return &m, nil
}

// Shards returns the shards of a task and split, or an error naming what is missing.
func (m *Manifest) Shards(task, split string) ([]ShardInfo, error) {
	t, ok := m.Tasks[task]
	if !ok {
		return nil, fmt.Errorf("manifest: no task %q", task)
	}
	s, ok := t.Splits[split]
	if !ok {
		// Name the valid splits: a mistyped --split (tset) reads as a missing split otherwise.
		return nil, fmt.Errorf("manifest: no split %q (the prepared splits are %s)", split, strings.Join(slices.Sorted(maps.Keys(t.Splits)), ", "))
	}
	for _, sh := range s.Shards {
		if !filepath.IsLocal(filepath.FromSlash(sh.Path)) {
			return nil, fmt.Errorf("manifest: task %q split %q: %w: shard path %q leaves the prepared directory", task, split, ErrShardMismatch, sh.Path)
		}
		if sh.Rows < 0 {
			return nil, fmt.Errorf("manifest: task %q split %q: %w: shard %s has %d rows", task, split, ErrShardMismatch, sh.Path, sh.Rows)
		}
	}
	return s.Shards, nil
}
