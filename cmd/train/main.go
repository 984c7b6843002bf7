// Command tracksum-train trains a model on a prepared directory with GoMLX:
//
//	tracksum-train --task tracker --data PREPARED_DIR --out checkpoints/NAME [--config FILE] [flags]
//	tracksum-train --task tracker --folds K [--cv-model lexical] --data PREPARED_DIR --out checkpoints/CV   # experiment/cv
//	tracksum-train --task tracker|summarizer --pretrained SNAPSHOT_DIR --data PREPARED_DIR --out checkpoints/NAME  # model/pretrained
//	tracksum-train --task sum_then_track|end_to_end --data PREPARED_DIR --out checkpoints/NAME   # model/stt, model/ete
//	tracksum-train --task sum_then_track|end_to_end --pretrained SNAPSHOT_DIR --data PREPARED_DIR --out checkpoints/NAME  # model/pretrained
//
// The checkpoint directory receives everything needed to use the model without the training config
// (hyperparameters, tokenizer, resolved config, best-on-dev variables) plus metrics.jsonl, curves.png/.svg
// and a resume point: after Ctrl-C, rerunning the same command continues where it stopped; with
// --overwrite it starts afresh instead, replacing the previous run once the new one has finished. The
// tasks are those linked in below (each registers itself with model/training); a new model is one
// more import.
package main

import (
	_ "github.com/tracksum/tracksum/experiment/cv"
	_ "github.com/tracksum/tracksum/experiment/cvtable6" // STT and ETE in --task pipeline --cv-model table6
	"github.com/tracksum/tracksum/internal/cli"
	_ "github.com/tracksum/tracksum/model/ete"        // --task end_to_end (TracSum Table 6)
	_ "github.com/tracksum/tracksum/model/pretrained" // --pretrained DIR for --task tracker, summarizer, sum_then_track, end_to_end
	_ "github.com/tracksum/tracksum/model/stt"        // --task sum_then_track (TracSum Table 6)
	_ "github.com/tracksum/tracksum/model/summarizer"
	_ "github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/train"
)

func main() { cli.Main(train.Command()) }
