// Command tracksum-prepare turns TracSum/PCoA JSONL files, or the built-in synthetic sample, into a
// prepared directory: splits.json, tokenizer.json, Parquet shards per task and split, manifest.json
// and the resolved config.yaml.
//
//	tracksum-prepare --input FILE[,FILE...] --out DIR [--config FILE] [flags]
//	tracksum-prepare --out DIR                      # built-in synthetic sample
//	tracksum-prepare --write-sample FILE --sample-size N
package main

import (
	"github.com/tracksum/tracksum/dataset/prepare"
	"github.com/tracksum/tracksum/internal/cli"
)

func main() { cli.Main(prepare.Command()) }
