package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/cli"
)

// shape is a random snapshot's architecture, named after the public checkpoint it imitates.
type shape struct {
	hidden, layers, heads, kvHeads, intermediate, vocab int
	tied                                                bool
}

// shapes are the architectures of the check: "tiny" for the CPU mode; two real small models;
// Llama-3.1-8B's layer shape with 2 layers, for the memory and time of one 8B layer (the plan's
// per-layer figures); and Llama-3.1-8B's full depth (16 GB in bf16: its normal draws run on every
// core). Vocabularies are at least the carried tokenizer's.
var shapes = map[string]shape{
	"tiny":            {hidden: 64, layers: 2, heads: 4, kvHeads: 2, intermediate: 128, vocab: 300},
	"smollm2-135m":    {hidden: 576, layers: 30, heads: 9, kvHeads: 3, intermediate: 1536, vocab: 49152, tied: true},
	"llama-3.2-1b":    {hidden: 2048, layers: 16, heads: 32, kvHeads: 8, intermediate: 8192, vocab: 128256, tied: true},
	"llama-3.1-8b-2l": {hidden: 4096, layers: 2, heads: 32, kvHeads: 8, intermediate: 14336, vocab: 128256},
	"llama-3.1-8b":    {hidden: 4096, layers: 32, heads: 32, kvHeads: 8, intermediate: 14336, vocab: 128256},
}

func snapshotCommand() cli.Command {
	fs := cli.NewFlags("gpucheck snapshot")
	fs.String("out", "", "snapshot directory to write (replaced)")
	fs.String("shape", "tiny", "tiny, smollm2-135m, llama-3.2-1b, llama-3.1-8b-2l or llama-3.1-8b")
	fs.String("tokenizer", "", "directory with a real tokenizer.json + tokenizer_config.json (Llama 3.1's); empty: randsnap's byte-level one")
	fs.String("dtype", "bfloat16", "weights' dtype: bfloat16 or float32")
	fs.String("quantize", "", "nf4: the projections stored as bitsandbytes NF4 (a bnb-4bit snapshot); empty: none")
	return cli.Command{
		Name: "gpucheck snapshot", Synopsis: "--out DIR --shape NAME [--tokenizer DIR]", Flags: fs,
		Description: "Writes a random snapshot of a real model's shape (hf/randsnap).",
		Run: func(_ context.Context, args []string) error {
			out, _ := fs.GetString("out")
			name, _ := fs.GetString("shape")
			tok, _ := fs.GetString("tokenizer")
			dt, _ := fs.GetString("dtype")
			quantize, _ := fs.GetString("quantize")
			if quantize != "" && quantize != "nf4" {
				return cli.Usagef("--quantize %q: want nf4 or nothing", quantize)
			}
			sh, ok := shapes[name]
			if !ok || out == "" || len(args) > 0 {
				return cli.Usagef("--out DIR and --shape tiny|smollm2-135m|llama-3.2-1b|llama-3.1-8b-2l|llama-3.1-8b are required")
			}
			dtype := map[string]dtypes.DType{"bfloat16": dtypes.BFloat16, "float32": dtypes.Float32}[dt]
			if dtype == dtypes.InvalidDType {
				return cli.Usagef("--dtype %q: want bfloat16 or float32", dt)
			}
			start := time.Now()
			d := randsnap.Decoder{ModelType: "llama", Vocab: sh.vocab, Hidden: sh.hidden, Layers: sh.layers, Heads: sh.heads,
				KVHeads: sh.kvHeads, Intermediate: sh.intermediate, Tied: sh.tied, DType: dtype, Seed: 1, TokenizerDir: tok, Quantize: quantize}
			if tok != "" {
				info, err := randsnap.ReadTokenizerInfo(tok)
				if err != nil {
					return err
				}
				d.Vocab = max(d.Vocab, info.Size)
				d.Extra = map[string]any{"eos_token_id": info.EOS, "max_position_embeddings": 131072}
				if info.BOS >= 0 {
					d.Extra["bos_token_id"] = info.BOS
				}
				d.RopeTheta = 500000
				d.RopeScaling = map[string]any{"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
					"original_max_position_embeddings": 8192, "rope_type": "llama3"}
			}
			dir, err := atomicio.NewDir(out, true)
			if err != nil {
				return err
			}
			defer dir.Abort()
			if err := randsnap.WriteDecoder(dir.Tmp, d); err != nil {
				return err
			}
			if err := dir.Commit(); err != nil {
				return err
			}
			return emit(os.Stdout, map[string]any{"step": "snapshot", "shape": name, "dir": out, "vocab": d.Vocab,
				"dtype": dt, "quantize": quantize, "seconds": time.Since(start).Seconds(), "ok": true, "detail": fmt.Sprintf("%d layers, hidden %d", sh.layers, sh.hidden)})
		},
	}
}
