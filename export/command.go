package export

import (
	"context"
	"os"

	"github.com/tracksum/tracksum/internal/cli"
)

// exportFlagKeys binds every flag of tracksum-export to its config key (cli.LoadConfig applies those
// given). The checkpoint holds its own model settings; export reads only these keys.
var exportFlagKeys = map[string]string{
	"checkpoint": "export.checkpoint",
	"out":        "export.out",
	"overwrite":  "export.overwrite",
	"base":       "export.base",
	"dtype":      "export.dtype",
}

// Command is tracksum-export.
func Command() cli.Command {
	fs := cli.NewFlags("tracksum-export")
	fs.String("checkpoint", "", "tracksum checkpoint of a pretrained model (base.json + adapter/ or full/) (required)")
	fs.String("out", "", "directory of the merged Hugging Face snapshot to write (required)")
	fs.Bool("overwrite", false, "replace a previous export in --out (kept until the new one is complete); without it a non-empty --out is refused, and a directory holding anything else is never replaced")
	fs.String("base", "", "base snapshot directory, when it moved since training (default: the one base.json names); its weights must be unchanged")
	fs.String("dtype", "", "dtype of the written float tensors: float32 (the merge unrounded), bfloat16 or float16; empty: each base tensor's own")
	return cli.Command{
		Name:     "tracksum-export",
		Synopsis: "--checkpoint CK --out DIR [--overwrite] [--base DIR] [--dtype float32]",
		Description: "Merges a pretrained checkpoint's LoRA adapters into its base model (W + scale * B @ A, in float32,\n" +
			"stored in the base's dtype, or in --dtype's) and writes a Hugging Face snapshot that transformers loads without\n" +
			"tracksum or PEFT: config.json, model.safetensors under the base's key names, and the base's\n" +
			"tokenizer and generation files. A classification head (tracker.head lm_cls or encoder_cls) makes it\n" +
			"a *ForSequenceClassification model. A QLoRA checkpoint (tracksum-train --quantize nf4, or a bitsandbytes\n" +
			"4-bit base) is merged into the NF4 weights dequantized, the ones it was trained on, and written as a plain\n" +
			"snapshot in the base's dtype (bfloat16 for a 4-bit snapshot's bf16 quant_state) or --dtype's, never as\n" +
			"4-bit codes; its adapter/ directory stays PEFT's, for a base loaded with bitsandbytes' nf4. The base's\n" +
			"weights must still have the sha256 recorded at training, and the checkpoint's files the sha256 its manifest (checkpoint.json) records; a checkpoint of\n" +
			"another kind (from scratch, a cross-validation, a whole sum_then_track directory) is refused naming it.\n" +
			"The output appears complete or not at all.",
		Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unexpected arguments %v", args)
			}
			cfg, err := cli.LoadConfig(fs, exportFlagKeys)
			if err != nil {
				return err
			}
			c := cfg.Export
			o := Options{Checkpoint: c.Checkpoint, Out: c.Out, Overwrite: c.Overwrite, Base: c.Base, DType: c.DType}
			if o.Checkpoint == "" || o.Out == "" {
				return cli.Usagef("--checkpoint and --out are required")
			}
			o.Log = os.Stderr
			_, err = Export(ctx, o)
			return err
		},
	}
}
