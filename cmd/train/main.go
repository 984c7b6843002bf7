// Command tracksum-train trains a model on a prepared directory with GoMLX:
//
//	tracksum-train --task tracker --data PREPARED_DIR --out checkpoints/NAME [--config FILE] [flags]
//	tracksum-train --task tracker --folds K [--cv-model lexical] --data PREPARED_DIR --out checkpoints/CV   # model/cv
//
// The checkpoint directory receives everything needed to use the model without the training config
// (hyperparameters, tokenizer, resolved config, best-on-dev variables) plus metrics.jsonl, curves.png
// and a resume point: after Ctrl-C, rerunning the same command continues where it stopped.
package main

import (
	"context"
	"os"

	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/model/cv"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
)

func main() {
	fs := cli.NewFlags("tracksum-train")
	fs.String("task", "tracker", "model to train: tracker or summarizer")
	fs.String("data", "", "prepared directory (output of tracksum-prepare)")
	fs.String("out", "", "checkpoint directory, e.g. checkpoints/tracker")
	fs.Int64("seed", 3407, "random seed (initialisation, shuffling, dropout)")
	fs.Int("epochs", 0, "TASK.train.epochs")
	fs.Int("max-steps", 0, "TASK.train.max_steps (0: epochs decide)")
	fs.Int("batch-size", 0, "TASK.train.batch_size")
	fs.Float64("learning-rate", 0, "TASK.train.learning_rate")
	fs.Int("eval-every", 0, "TASK.train.eval_every (0: each epoch)")
	fs.String("architecture", "", "tracker.architecture: transformer or ngram")
	fs.Int("folds", 0, "cross-validate the tracker on the K folds of --data (prepare --folds K): --out gets cv.json, oof.jsonl, fold-k/")
	fs.String("cv-model", cv.ModelTracker, "with --folds: tracker (the configured tracker) or lexical (TF-IDF + logistic regression baseline)")
	fs.Float64("dev-share", cv.DefaultDevShare, "with --folds: share of the training folds' abstracts used as dev (model selection)")
	fs.Bool("allow-changed-config", false, "resume a checkpoint although seed or TASK settings differ from its config.yaml (refused by default)")
	cli.Main(cli.Command{
		Name: "tracksum-train",
		Synopsis: "--task tracker|summarizer --data PREPARED_DIR --out CHECKPOINT_DIR [--config FILE] [flags]\n" +
			"       tracksum-train --task tracker --folds K [--cv-model tracker|lexical] --data PREPARED_DIR --out CV_DIR",
		Description: "Trains the tracker (sentence relevance) or the summarizer on a prepared directory. The backend is\n" +
			"GOMLX_BACKEND when set (e.g. xla:cuda), else xla:cpu when a PJRT plugin is installed, else the pure-Go backend.",
		Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			task, _ := fs.GetString("task")
			data, _ := fs.GetString("data")
			out, _ := fs.GetString("out")
			switch {
			case len(args) > 0:
				return cli.Usagef("unexpected arguments %v", args)
			case task != "tracker" && task != "summarizer":
				return cli.Usagef("--task must be tracker or summarizer, got %q", task)
			case data == "" || out == "":
				return cli.Usagef("--data and --out are required")
			}
			keys := map[string]string{"seed": "seed", "epochs": task + ".train.epochs", "max-steps": task + ".train.max_steps",
				"batch-size": task + ".train.batch_size", "learning-rate": task + ".train.learning_rate", "eval-every": task + ".train.eval_every"}
			if task == "tracker" {
				keys["architecture"] = "tracker.architecture"
			}
			for name := range keys {
				if !fs.Changed(name) {
					delete(keys, name) // unchanged flags must not override the profile with their zero defaults
				}
			}
			cfg, err := cli.LoadConfig(fs, keys)
			if err != nil {
				return err
			}
			allow, _ := fs.GetBool("allow-changed-config")
			if folds, _ := fs.GetInt("folds"); folds != 0 || fs.Changed("cv-model") || fs.Changed("dev-share") {
				if task != "tracker" || folds < 2 {
					return cli.Usagef("--folds K (K >= 2) cross-validates --task tracker only; --cv-model and --dev-share need it")
				}
				m, _ := fs.GetString("cv-model")
				share, _ := fs.GetFloat64("dev-share")
				_, err := cv.Run(ctx, cfg, cv.Options{Data: data, Out: out, Folds: folds, Model: m, DevShare: share, AllowChangedConfig: allow, Log: os.Stderr})
				return err
			}
			if task == "summarizer" {
				return summarizer.Train(ctx, cfg, data, out, summarizer.RunOptions{AllowChangedConfig: allow, Log: os.Stderr})
			}
			_, _, err = tracker.Train(ctx, cfg, data, out, tracker.TrainOptions{Log: os.Stderr, AllowChangedConfig: allow})
			return err
		},
	})
}
