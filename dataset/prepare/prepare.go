// Package prepare turns benchmark JSONL files (or the built-in synthetic sample) into a prepared
// directory: reproducible splits, a tokenizer learned from the training split, and zstd Parquet
// shards for every training task, described by manifest.json.
//
// Files: prepare.go runs the passes and writes splits, config and manifest; source.go reads and
// validates the input (any dataset.Format, or the synthetic sample); tokenizer.go learns the
// vocabulary; writers.go tokenizes and writes the shards of the four tasks through one table.
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
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/internal/progress"
	"go.yaml.in/yaml/v3"
)

// Options are the parts of a prepare run that are not configuration.
type Options struct {
	// Inputs are TracSum/PCoA files, each read by its dataset.Format (JSONL unless another format
	// claims its name); empty means the built-in synthetic sample
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
	src := newSource(opts.Inputs, cfg.Prepare.AspectSet, cfg.Seed, cfg.Prepare.SampleSize, workers)
	if err := checkOutput(opts); err != nil {
		return nil, err
	}
	// Lock and check the output before the long passes: a file or a foreign directory at --out, or
	// another run writing it, fails now, and no other run can take the output until Commit.
	dir, err := atomicio.NewDirWith(opts.Out, atomicio.DirOptions{Overwrite: opts.Overwrite, Previous: previousOutput})
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer dir.Abort()

	newBar := func(label string, total int64, unit string) *progress.Bar {
		if opts.Progress == nil {
			return nil
		}
		return progress.NewTo(opts.Progress, label, total, unit)
	}
	// Pass 1: validate everything and collect the split keys before any output exists.
	scan, splits, err := scanAndSplit(ctx, cfg, opts, src, newBar("validate", 0, "instances"))
	if err != nil {
		return nil, err
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
	if err := writeMetadata(ctx, cfg, dir, m, splits); err != nil {
		return nil, err
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

// checkOutput refuses an --out that is, or holds, an input: replacing it would delete the input
// (issue 22 defect 7).
func checkOutput(opts Options) error {
	inputs := map[string]string{}
	for i, in := range opts.Inputs {
		name := "--input"
		if i > 0 {
			name = fmt.Sprintf("--input (file %d)", i+1)
		}
		inputs[name] = in
	}
	if err := cli.CheckOutputs(inputs, map[string]string{"--out": opts.Out}); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// scanAndSplit is the first pass: it validates every instance (bar counts them; it is finished
// here) and splits the abstracts (and folds them with prepare.folds) before any output exists.
func scanAndSplit(ctx context.Context, cfg *config.Config, opts Options, src *source, bar *progress.Bar) (*scanResult, *dataset.SplitAssignment, error) {
	scan, err := src.scan(ctx, cfg.Prepare.SplitBy, bar)
	finish(bar)
	if err != nil {
		return nil, nil, err
	}
	if scan.counts.Instances == 0 {
		return nil, nil, fmt.Errorf("prepare: no instances in %v", opts.Inputs)
	}
	p := cfg.Prepare
	splits, err := dataset.MakeSplits(scan.keys, p.SplitBy, p.TrainRatio, p.DevRatio, p.TestRatio, cfg.Seed)
	if err != nil {
		return nil, nil, fmt.Errorf("prepare: %w", err)
	}
	if p.Folds > 0 {
		if splits.Folds, err = dataset.MakeFolds(dataset.GroupPMIDs(splits.By, scan.keys), p.Folds, cfg.Seed); err != nil {
			return nil, nil, fmt.Errorf("prepare: %w", err)
		}
	}
	scan.keys = nil // the split keys are the largest part of the scan, and no longer needed
	if len(splits.IDs[dataset.SplitTrain]) == 0 {
		return nil, nil, errors.New("prepare: the training split is empty (too few abstracts for prepare.train_ratio)")
	}
	return scan, splits, nil
}

// writeMetadata writes the files beside the shards (splits.json, config.yaml, manifest.json with
// the resolved config, the dataset card) into dir, still uncommitted.
func writeMetadata(ctx context.Context, cfg *config.Config, dir *atomicio.Dir, m *dataset.Manifest, splits *dataset.SplitAssignment) error {
	var err error
	if m.Config, err = configMap(cfg); err != nil {
		return err
	}
	if err := writeJSON(dir.Path(dataset.SplitsFile), splits); err != nil {
		return err
	}
	if err := cfg.WriteFile(dir.Path(dataset.ConfigFile)); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if err := writeJSON(dir.Path(dataset.ManifestFile), m); err != nil {
		return err
	}
	if err := atomicio.WriteFile(dir.Path(dataset.CardFile), []byte(dataset.Card(m)), 0o644); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// previousOutput recognises a prepared directory that --overwrite may replace: its manifest.json
// lists everything prepare wrote (the shards, splits.json, tokenizer.json, config.yaml), and it
// holds nothing else. The manifest is read without its schema check, so that a directory made by
// an earlier build can be replaced too.
func previousOutput(dir string) error {
	files := []string{dataset.ManifestFile, dataset.SplitsFile, dataset.TokenizerFile, dataset.ConfigFile, dataset.CardFile}
	var m dataset.Manifest
	err := atomicio.ReadJSON(filepath.Join(dir, dataset.ManifestFile), &m, false)
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		if err := atomicio.OnlyFiles(dir, "tracksum-prepare", files); err != nil {
			return err
		}
		return fmt.Errorf("has no %s (not a prepared directory)", dataset.ManifestFile)
	}
	if err != nil {
		return fmt.Errorf("has an unreadable %s (not a prepared directory: %v)", dataset.ManifestFile, err)
	}
	for _, t := range m.Tasks {
		for _, sp := range t.Splits {
			for _, sh := range sp.Shards {
				if filepath.IsLocal(filepath.FromSlash(sh.Path)) {
					files = append(files, sh.Path)
				}
			}
		}
	}
	return atomicio.OnlyFiles(dir, "tracksum-prepare", files)
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

// writeJSON writes v in the one JSON layout (atomicio.WriteJSON), errors prefixed by the stage.
func writeJSON(path string, v any) error {
	if err := atomicio.WriteJSON(path, v); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// finish ends a progress bar, if any.
func finish(b *progress.Bar) {
	if b != nil {
		b.Finish()
	}
}
