package export

import (
	"context"
	"os"

	"github.com/tracksum/tracksum/internal/cli"
)

// Command is tracksum-export.
func Command() cli.Command {
	fs := cli.NewFlags("tracksum-export")
	fs.String("checkpoint", "", "tracksum checkpoint of a pretrained model (base.json + adapter/ or full/) (required)")
	fs.String("out", "", "directory of the merged Hugging Face snapshot to write (required)")
	fs.Bool("overwrite", false, "replace an existing non-empty --out")
	fs.String("base", "", "base snapshot directory, when it moved since training (default: the one base.json names); its weights must be unchanged")
	_ = fs.MarkHidden("config") // cli.NewFlags' --config: export reads no config key (the checkpoint holds its own)
	return cli.Command{
		Name:     "tracksum-export",
		Synopsis: "--checkpoint CK --out DIR [--overwrite] [--base DIR]",
		Description: "Merges a pretrained checkpoint's LoRA adapters into its base model (W + scale * B @ A, in float32,\n" +
			"stored in the base's dtype) and writes a Hugging Face snapshot that transformers loads without\n" +
			"tracksum or PEFT: config.json, model.safetensors under the base's key names, and the base's\n" +
			"tokenizer and generation files. A classification head (tracker.head lm_cls or encoder_cls) makes it\n" +
			"a *ForSequenceClassification model. The base's weights must still have the sha256 recorded at\n" +
			"training, and the checkpoint's files the sha256 its manifest (checkpoint.json) records; a checkpoint of\n" +
			"another kind (from scratch, a cross-validation, a whole sum_then_track directory) is refused naming it.\n" +
			"The output appears complete or not at all.",
		Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unexpected arguments %v", args)
			}
			var o Options
			o.Checkpoint, _ = fs.GetString("checkpoint")
			o.Out, _ = fs.GetString("out")
			o.Overwrite, _ = fs.GetBool("overwrite")
			o.Base, _ = fs.GetString("base")
			if o.Checkpoint == "" || o.Out == "" {
				return cli.Usagef("--checkpoint and --out are required")
			}
			o.Log = os.Stderr
			_, err := Export(ctx, o)
			return err
		},
	}
}
