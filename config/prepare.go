package config

import (
	"errors"
	"fmt"
	"math"
)

// Prepare configures the prepare stage: how instances are grouped and split, the built-in sample
// and the layout of the Parquet shards.
type Prepare struct {
	// SplitBy groups instances before splitting: "pmid" keeps every abstract in one split (no
	// leakage between splits); "instance" splits (PMID, aspect) pairs independently, as the
	// TracSum paper did.
	SplitBy string `mapstructure:"split_by" yaml:"split_by"`
	// TrainRatio, DevRatio and TestRatio are the shares of groups in each split; they must sum to 1.
	// A zero ratio leaves that split empty (the paper uses 0.8/0/0.2).
	TrainRatio float64 `mapstructure:"train_ratio" yaml:"train_ratio"`
	DevRatio   float64 `mapstructure:"dev_ratio" yaml:"dev_ratio"`
	TestRatio  float64 `mapstructure:"test_ratio" yaml:"test_ratio"`
	// AspectSet is the aspect registry the input must use: "tracsum" (7 aspects), "pcoa" (16) or
	// "auto" (decided by the first record of the input).
	AspectSet string `mapstructure:"aspect_set" yaml:"aspect_set"`
	// SampleSize is the number of synthetic abstracts prepare generates when no --input is given.
	SampleSize int `mapstructure:"sample_size" yaml:"sample_size"`
	// RowsPerShard caps the rows of one Parquet file; a split with more rows gets more shards.
	RowsPerShard int `mapstructure:"rows_per_shard" yaml:"rows_per_shard"`
	// RowGroupRows is the number of rows buffered before a Parquet row group is flushed: it bounds
	// the writer's memory whatever the shard size.
	RowGroupRows int `mapstructure:"row_group_rows" yaml:"row_group_rows"`
	// Workers is the number of goroutines that tokenize abstracts; 0 means one per CPU.
	Workers int `mapstructure:"workers" yaml:"workers"`
	// Folds is the number of cross-validation folds (by PMID, seeded) recorded in splits.json for
	// `tracksum-train cv`; 0 means none. The train/dev/test split is made as without folds.
	Folds int `mapstructure:"folds" yaml:"folds"`

	// The run settings of tracksum-prepare (its flags; see commands.go): left out of YAML.

	// Input lists benchmark files, comma-separated (empty: the built-in synthetic sample).
	Input string `mapstructure:"input" yaml:"-"`
	// Out is the prepared directory to create.
	Out string `mapstructure:"out" yaml:"-"`
	// Overwrite replaces Out (or the WriteSample file) when it exists.
	Overwrite bool `mapstructure:"overwrite" yaml:"-"`
	// WriteSample, when set, only writes the synthetic sample to this file.
	WriteSample string `mapstructure:"write_sample" yaml:"-"`
}

// DefaultPrepare returns the built-in prepare settings.
func DefaultPrepare() Prepare {
	return Prepare{
		SplitBy:      "pmid",
		TrainRatio:   0.8,
		DevRatio:     0.1,
		TestRatio:    0.1,
		AspectSet:    "auto",
		SampleSize:   500,
		RowsPerShard: 100000,
		RowGroupRows: 4096,
		Workers:      0,
	}
}

// Validate reports invalid prepare settings, naming each key.
func (c Prepare) Validate() error {
	var errs []error
	switch c.SplitBy {
	case "pmid", "instance":
	default:
		errs = append(errs, fmt.Errorf("prepare.split_by: must be \"pmid\" or \"instance\", got %q", c.SplitBy))
	}
	for _, r := range []struct {
		key string
		v   float64
	}{{"prepare.train_ratio", c.TrainRatio}, {"prepare.dev_ratio", c.DevRatio}, {"prepare.test_ratio", c.TestRatio}} {
		if r.v < 0 || r.v > 1 || math.IsNaN(r.v) {
			errs = append(errs, fmt.Errorf("%s: must be in [0, 1], got %g", r.key, r.v))
		}
	}
	if sum := c.TrainRatio + c.DevRatio + c.TestRatio; math.Abs(sum-1) > 1e-6 {
		errs = append(errs, fmt.Errorf("prepare.train_ratio + prepare.dev_ratio + prepare.test_ratio: must sum to 1, got %.6g", sum))
	}
	if c.TrainRatio <= 0 {
		errs = append(errs, fmt.Errorf("prepare.train_ratio: must be > 0 (the tokenizer is learned from the training split), got %g", c.TrainRatio))
	}
	switch c.AspectSet {
	case "auto", "tracsum", "pcoa":
	default:
		errs = append(errs, fmt.Errorf("prepare.aspect_set: must be \"auto\", \"tracsum\" or \"pcoa\", got %q", c.AspectSet))
	}
	if c.SampleSize <= 0 {
		errs = append(errs, fmt.Errorf("prepare.sample_size: must be > 0, got %d", c.SampleSize))
	}
	if c.RowsPerShard <= 0 {
		errs = append(errs, fmt.Errorf("prepare.rows_per_shard: must be > 0, got %d", c.RowsPerShard))
	}
	if c.RowGroupRows <= 0 {
		errs = append(errs, fmt.Errorf("prepare.row_group_rows: must be > 0, got %d", c.RowGroupRows))
	}
	if c.Folds < 0 || c.Folds == 1 {
		errs = append(errs, fmt.Errorf("prepare.folds: must be 0 (no folds) or >= 2, got %d", c.Folds))
	}
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("prepare.workers: must be >= 0 (0 = one per CPU), got %d", c.Workers))
	}
	return errors.Join(errs...)
}
