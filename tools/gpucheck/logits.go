package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/export"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/internal/tensorio"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// The fixed batch whose logits PEFT and transformers must reproduce: 2 rows of 16 tokens drawn
// from a seed, all real (no padding: both sides then agree on positions without conventions).
const (
	logitsRows = 2
	logitsLen  = 16
)

func logitsCommand() cli.Command {
	fs := cli.NewFlags("gpucheck logits")
	fs.String("checkpoint", "", "a pretrained causal-LM checkpoint with LoRA (adapter/)")
	fs.String("out", "", "safetensors file to write: tokens [2, 16] int32 and logits [2, 16, V] float32")
	return cli.Command{
		Name: "gpucheck logits", Synopsis: "--checkpoint CK --out FILE", Flags: fs,
		Description: "Our logits (base + the checkpoint's adapter, unmerged) of a fixed token batch, for\n" +
			"scripts/gpucheck/peft_check.py to compare with PeftModel.from_pretrained and the merged export.",
		Run: func(ctx context.Context, args []string) error {
			ck, _ := fs.GetString("checkpoint")
			out, _ := fs.GetString("out")
			if ck == "" || out == "" || len(args) > 0 {
				return cli.Usagef("--checkpoint and --out are required")
			}
			snap, _, err := peft.OpenBase(ctx, ck, checkpoint.DirFiles(ck), "")
			if err != nil {
				return err
			}
			ad, err := peft.Read(filepath.Join(ck, peft.AdapterDir))
			if err != nil {
				return err
			}
			c := ad.Config
			// A QLoRA checkpoint's adapters apply to the NF4 base, as its inference loads it.
			man, err := checkpoint.Read(ck)
			if err != nil {
				return err
			}
			quantization := decoder.QuantNone
			if man.Backbone.Quantization == config.QuantizationNF4 {
				quantization = decoder.QuantNF4
			}
			store := gomlxmodel.NewStore()
			m, err := decoder.LoadQuantized(ctx, snap, store, config.LoRA{Rank: c.R, Alpha: c.LoRAAlpha, RSLoRA: c.UseRSLoRA, TargetModules: c.TargetModules}, 0, quantization)
			if err != nil {
				return err
			}
			vars := m.LoRAVariables()
			for k, v := range ad.Tensors {
				lv, ok := vars[k]
				if !ok {
					continue // a head (modules_to_save) is not part of the LM's logits
				}
				if err := lv.SetValue(v); err != nil {
					return fmt.Errorf("%s: %s: %w", ck, k, err)
				}
			}
			r := rand.New(rand.NewPCG(7, 7))
			tok := make([]int32, logitsRows*logitsLen)
			msk := make([]int32, len(tok))
			for i := range tok {
				tok[i], msk[i] = int32(r.IntN(m.Config().Vocab)), 1
			}
			b, name, err := model.Backend()
			if err != nil {
				return err
			}
			exec, err := gomlxmodel.NewExec(b, store, func(scope *gomlxmodel.Scope, t, k *Node) *Node {
				return m.Logits(scope, m.Hidden(scope, t, k))
			})
			if err != nil {
				return err
			}
			tokens := tensors.FromFlatDataAndDimensions(tok, logitsRows, logitsLen)
			res, err := exec.Exec(tokens, tensors.FromFlatDataAndDimensions(msk, logitsRows, logitsLen))
			if err != nil {
				return err
			}
			if err := tensorio.WriteTensors(out, map[string]*tensors.Tensor{"tokens": tokens, "logits": res[0]}); err != nil {
				return err
			}
			return emit(os.Stdout, map[string]any{"step": "logits", "checkpoint": ck, "file": out, "backend": name, "ok": true})
		},
	}
}

func exportCommand() cli.Command {
	fs := cli.NewFlags("gpucheck export")
	fs.String("checkpoint", "", "a pretrained checkpoint")
	fs.String("out", "", "merged Hugging Face snapshot to write (replaced)")
	return cli.Command{
		Name: "gpucheck export", Synopsis: "--checkpoint CK --out DIR", Flags: fs,
		Description: "tracksum-export's merge (export): base + scale * B @ A as a Hugging Face snapshot.",
		Run: func(ctx context.Context, args []string) error {
			ck, _ := fs.GetString("checkpoint")
			out, _ := fs.GetString("out")
			if ck == "" || out == "" || len(args) > 0 {
				return cli.Usagef("--checkpoint and --out are required")
			}
			prov, err := export.Export(ctx, export.Options{Checkpoint: ck, Out: out, Overwrite: true})
			if err != nil {
				return err
			}
			return emit(os.Stdout, map[string]any{"step": "export", "checkpoint": ck, "dir": out, "mode": prov.Mode, "merged": len(prov.Merged), "ok": true})
		},
	}
}
