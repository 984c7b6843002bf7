package prepare

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/internal/progress"
)

// flagKeys binds every flag of the command to its config key (flag > env > --config file >
// defaults); cli.LoadConfig applies only the flags given. --quiet is the one every command has
// (cli's, read through package progress).
var flagKeys = map[string]string{
	"seed":           "seed",
	"split-by":       "prepare.split_by",
	"train-ratio":    "prepare.train_ratio",
	"dev-ratio":      "prepare.dev_ratio",
	"test-ratio":     "prepare.test_ratio",
	"aspect-set":     "prepare.aspect_set",
	"sample-size":    "prepare.sample_size",
	"rows-per-shard": "prepare.rows_per_shard",
	"workers":        "prepare.workers",
	"folds":          "prepare.folds",
	"tokenizer":      "tokenizer.kind",
	"vocab-size":     "tokenizer.vocab_size",
	"input":          "prepare.input",
	"out":            "prepare.out",
	"overwrite":      "prepare.overwrite",
	"write-sample":   "prepare.write_sample",
}

// Command returns the tracksum-prepare command. Its output goes to stdout (closing summary) and
// stderr (progress bar).
func Command() cli.Command {
	return command(os.Stdout, os.Stderr)
}

func command(stdout, stderr io.Writer) cli.Command {
	fs := cli.NewFlags("tracksum-prepare")
	fs.String("input", "", "TracSum/PCoA JSONL file(s), comma-separated; the built-in synthetic sample when empty")
	fs.String("out", "", "prepared directory to create (required unless --write-sample)")
	fs.Bool("overwrite", false, "replace a previous prepared directory in --out, or the --write-sample file (kept until the new one is complete); without it an existing one is refused, and a directory holding anything else is never replaced")
	fs.String("write-sample", "", "only write the synthetic sample as TracSum JSONL to this file, then exit")
	fs.Bool("quiet", false, "no progress bar")
	// Defaults shown by --help are the built-in ones; a flag only overrides the config when passed.
	d := config.Default()
	fs.Int64("seed", d.Seed, "seed of splits and synthetic sample (config: seed)")
	fs.String("split-by", d.Prepare.SplitBy, "pmid (no abstract in two splits) or instance (config: prepare.split_by)")
	fs.Float64("train-ratio", d.Prepare.TrainRatio, "share of the train split (config: prepare.train_ratio)")
	fs.Float64("dev-ratio", d.Prepare.DevRatio, "share of the dev split (config: prepare.dev_ratio)")
	fs.Float64("test-ratio", d.Prepare.TestRatio, "share of the test split (config: prepare.test_ratio)")
	fs.String("aspect-set", d.Prepare.AspectSet, "auto, tracsum or pcoa (config: prepare.aspect_set)")
	fs.Int("sample-size", d.Prepare.SampleSize, "synthetic abstracts when there is no --input (config: prepare.sample_size)")
	fs.Int("rows-per-shard", d.Prepare.RowsPerShard, "rows per Parquet shard (config: prepare.rows_per_shard)")
	fs.Int("workers", d.Prepare.Workers, "tokenizing goroutines, 0 = one per CPU (config: prepare.workers)")
	fs.Int("folds", d.Prepare.Folds, "cross-validation folds by PMID recorded in splits.json, 0 = none (config: prepare.folds)")
	fs.String("tokenizer", d.Tokenizer.Kind, "bpe or wordpiece (config: tokenizer.kind)")
	fs.Int("vocab-size", d.Tokenizer.VocabSize, "tokenizer vocabulary size (config: tokenizer.vocab_size)")
	return cli.Command{
		Name:     "tracksum-prepare",
		Synopsis: "--input FILE[,FILE...] --out DIR [flags]   |   --write-sample FILE [--sample-size N]",
		Description: "Validates benchmark JSONL files (or generates the built-in synthetic sample), splits them\n" +
			"reproducibly, learns a tokenizer from the training split and writes Parquet shards for the\n" +
			"tracker, summarizer, sum_then_track and end_to_end tasks, with manifest.json, splits.json,\n" +
			"tokenizer.json and config.yaml. Output is all-or-nothing.",
		Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unexpected arguments %q", args)
			}
			cfg, err := cli.LoadConfig(fs, flagKeys)
			if err != nil {
				return err
			}
			c := cfg.Prepare
			if c.WriteSample != "" {
				if c.Input != "" || c.Out != "" {
					return cli.Usagef("--write-sample cannot be combined with --input or --out")
				}
				if _, err := os.Lstat(c.WriteSample); err == nil && !c.Overwrite {
					return fmt.Errorf("--write-sample %s already exists: refusing to replace it without --overwrite", c.WriteSample)
				}
				err := atomicio.WriteWith(c.WriteSample, 0o644, func(w io.Writer) error {
					return dataset.WriteSynthetic(w, cfg.Seed, cfg.Prepare.SampleSize)
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "wrote %d synthetic abstracts (%d instances, seed %d) to %s\n",
					cfg.Prepare.SampleSize, cfg.Prepare.SampleSize*len(dataset.Aspects(dataset.AspectSetTracSum)), cfg.Seed, c.WriteSample)
				return nil
			}
			if c.Out == "" {
				return cli.Usagef("--out is required")
			}
			var inputs []string
			for _, p := range strings.Split(c.Input, ",") {
				if p = strings.TrimSpace(p); p != "" {
					inputs = append(inputs, p)
				}
			}
			opts := Options{Inputs: inputs, Out: c.Out, Overwrite: c.Overwrite}
			if !progress.Quiet() { // cli.Main's --quiet
				opts.Progress = stderr
			}
			sum, err := Run(ctx, cfg, opts)
			if err != nil {
				return err
			}
			sum.Print(stdout)
			fmt.Fprintf(stdout, "wrote %s\n", c.Out)
			return nil
		},
	}
}
