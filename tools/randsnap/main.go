// Command randsnap writes a tiny Hugging Face snapshot with random weights, to try
// `tracksum-train --pretrained` and `tracksum-export` without downloading a model (scripts/pretrained-demo.sh).
// With --tokenizer it copies a real checkpoint's tokenizer.json and tokenizer_config.json (with its chat
// template) and sizes the vocabulary and the special ids from them; without, it writes a small byte-level
// test tokenizer (every byte one token, a chatml template).
//
//	go run ./tools/randsnap --out runs/snap --tokenizer hf/tokenizer/testdata/hf/llama3
//
// With --quantize nf4 the layers' projections are written in bitsandbytes' 4-bit layout (a QLoRA base, as
// unsloth's "-bnb-4bit" snapshots).
//
// The weights are random: what runs on them tests the plumbing and the file formats, never quality.
package main

import (
	"cmp"
	"context"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/cli"
)

func main() { cli.Main(command()) }

func command() cli.Command {
	fs := cli.NewFlags("randsnap")
	fs.String("out", "", "snapshot directory to write (required)")
	fs.String("tokenizer", "", "directory with a real tokenizer.json + tokenizer_config.json to copy (e.g. hf/tokenizer/testdata/hf/llama3,\n"+
		"fetched by tools/hftokenizer/fetch.sh); empty: a small byte-level test tokenizer")
	fs.String("model-type", "llama", strings.Join(family.Names(family.CausalLM), ", ")+" (causal LMs) or "+strings.Join(family.Names(family.Encoder), ", ")+" (encoders)")
	fs.Int("hidden", 64, "hidden_size")
	fs.Int("layers", 2, "num_hidden_layers")
	fs.Int("heads", 4, "num_attention_heads")
	fs.Int("kv-heads", 2, "num_key_value_heads (causal LMs)")
	fs.Int("intermediate", 128, "intermediate_size")
	fs.Int("vocab", 0, "vocab_size; 0: the copied tokenizer's size (highest id + 1), else 300 (bert: 100)")
	fs.String("dtype", "bfloat16", "weights' dtype: float32, bfloat16 or float16")
	fs.Bool("tied", false, "tie the LM head to the embeddings (no lm_head.weight)")
	fs.Uint64("seed", 1, "seed of the weights (the same seed writes the same bytes)")
	fs.StringSlice("labels", nil, "encoders ("+strings.Join(family.Names(family.Encoder), ", ")+"): id2label of a sequence-classification head, e.g. entailment,neutral,contradiction (an NLI snapshot for tracksum-eval --judge nli)")
	fs.String("quantize", "", "nf4: the causal LM's layer projections in bitsandbytes' 4-bit layout (what transformers saves with\n"+
		"load_in_4bit, nf4, double quantization: a QLoRA base like unsloth's -bnb-4bit snapshots); empty: none")
	fs.Bool("overwrite", false, "replace an existing non-empty --out")
	_ = fs.MarkHidden("config") // cli.NewFlags' --config: no config key applies here
	return cli.Command{
		Name:     "randsnap",
		Synopsis: "--out DIR [--tokenizer DIR] [--model-type llama] [flags]",
		Description: "Writes a tiny random Hugging Face snapshot (config.json, model.safetensors, generation_config.json,\n" +
			"tokenizer.json, tokenizer_config.json) for trying tracksum-train --pretrained. A llama snapshot with\n" +
			"--tokenizer has Llama 3.1's rope (theta 500000, llama3 scaling) and the tokenizer's special ids.\n" +
			"Random weights: for trials of the plumbing only. The output appears complete or not at all.",
		Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unexpected arguments %v", args)
			}
			var o options
			o.out, _ = fs.GetString("out")
			o.tokenizer, _ = fs.GetString("tokenizer")
			o.modelType, _ = fs.GetString("model-type")
			o.hidden, _ = fs.GetInt("hidden")
			o.layers, _ = fs.GetInt("layers")
			o.heads, _ = fs.GetInt("heads")
			o.kvHeads, _ = fs.GetInt("kv-heads")
			o.intermediate, _ = fs.GetInt("intermediate")
			o.vocab, _ = fs.GetInt("vocab")
			o.dtype, _ = fs.GetString("dtype")
			o.tied, _ = fs.GetBool("tied")
			o.seed, _ = fs.GetUint64("seed")
			o.overwrite, _ = fs.GetBool("overwrite")
			o.labels, _ = fs.GetStringSlice("labels")
			o.quantize, _ = fs.GetString("quantize")
			if o.out == "" {
				return cli.Usagef("--out is required")
			}
			return write(o)
		},
	}
}

type options struct {
	out, tokenizer, modelType, dtype, quantize          string
	hidden, layers, heads, kvHeads, intermediate, vocab int
	tied, overwrite                                     bool
	seed                                                uint64
	labels                                              []string
}

// write builds the snapshot in a temporary sibling of o.out and renames it into place.
func write(o options) error {
	dt, ok := map[string]dtypes.DType{"float32": dtypes.Float32, "bfloat16": dtypes.BFloat16, "float16": dtypes.Float16}[o.dtype]
	if !ok {
		return cli.Usagef("--dtype %q: want float32, bfloat16 or float16", o.dtype)
	}
	if o.hidden <= 0 || o.layers <= 0 || o.heads <= 0 || o.intermediate <= 0 || o.vocab < 0 {
		return cli.Usagef("--hidden, --layers, --heads and --intermediate must be positive, --vocab >= 0")
	}
	if o.quantize != "" && o.quantize != "nf4" {
		return cli.Usagef("--quantize %q: want nf4 (or nothing)", o.quantize)
	}
	if o.hidden%o.heads != 0 {
		return cli.Usagef("--hidden %d is not a multiple of --heads %d", o.hidden, o.heads)
	}
	var tok randsnap.TokenizerInfo
	if o.tokenizer != "" {
		var err error
		if tok, err = randsnap.ReadTokenizerInfo(o.tokenizer); err != nil {
			return err
		}
	}
	dir, err := atomicio.NewDir(o.out, o.overwrite)
	if err != nil {
		return err
	}
	defer dir.Abort()
	fam, _ := family.Lookup(o.modelType)
	if len(o.labels) > 0 && fam.Kind != family.Encoder {
		return cli.Usagef("--labels: only the encoders (--model-type %s) have a classification head", strings.Join(family.Names(family.Encoder), ", "))
	}
	if fam.Kind == family.Encoder {
		if o.quantize != "" {
			return cli.Usagef("--quantize: only the causal LMs are written quantized")
		}
		e := randsnap.Encoder{ModelType: o.modelType, Vocab: o.vocab, Hidden: o.hidden, Layers: o.layers, Heads: o.heads,
			Intermediate: o.intermediate, Prefix: fam.KeyPrefix, Pooler: o.modelType == "bert", DType: dt, Seed: o.seed,
			TokenizerDir: o.tokenizer, Labels: o.labels}
		if e.Vocab == 0 {
			e.Vocab = cmp.Or(tok.Size, map[string]int{"bert": 100}[o.modelType], 300)
		}
		err = randsnap.WriteEncoder(dir.Tmp, e)
	} else {
		if o.kvHeads <= 0 || o.heads%o.kvHeads != 0 {
			return cli.Usagef("--kv-heads %d must be positive and divide --heads %d", o.kvHeads, o.heads)
		}
		d := randsnap.Decoder{ModelType: o.modelType, Vocab: o.vocab, Hidden: o.hidden, Layers: o.layers, Heads: o.heads,
			KVHeads: o.kvHeads, Intermediate: o.intermediate, Tied: o.tied, DType: dt, Seed: o.seed, TokenizerDir: o.tokenizer,
			Quantize: o.quantize}
		if d.Vocab == 0 {
			d.Vocab = cmp.Or(tok.Size, 300)
		}
		if o.tokenizer != "" {
			if d.Vocab < tok.Size {
				return cli.Usagef("--vocab %d is smaller than the tokenizer's %d ids", d.Vocab, tok.Size)
			}
			d.Extra = map[string]any{}
			if tok.BOS >= 0 {
				d.Extra["bos_token_id"] = tok.BOS
			}
			if len(tok.EOS) > 0 {
				d.Extra["eos_token_id"] = tok.EOS
			}
			if o.modelType == "llama" {
				// Llama 3.1's position encoding (its config.json), so that the rope_scaling path runs too.
				d.RopeTheta = 500000
				d.RopeScaling = map[string]any{"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
					"original_max_position_embeddings": 8192, "rope_type": "llama3"}
				d.Extra["max_position_embeddings"] = 131072
			}
		}
		err = randsnap.WriteDecoder(dir.Tmp, d)
	}
	if err != nil {
		return err
	}
	return dir.Commit()
}
