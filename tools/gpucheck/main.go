// Command gpucheck is the Go side of scripts/gpu-check.sh: one stripped binary carried to a lent
// GPU machine (which has no Go toolchain), doing every step that needs tracksum's code on the
// backend GOMLX_BACKEND names (e.g. xla:/abs/path/xla_cuda_plugin.so, or the pure-Go backend).
// Each subcommand prints one JSON object on one line (the script appends it to its results):
//
//	gpucheck snapshot --out DIR --shape tiny|smollm2-135m|llama-3.2-1b|llama-3.1-8b-2l|llama-3.1-8b [--tokenizer DIR] [--quantize nf4]
//	gpucheck parity [--goldens hf/decoder/testdata]      every family's goldens (forward, LoRA, loss)
//	gpucheck train --task tracker|summarizer --snapshot DIR --out DIR [--steps 3 --batch 8 --seq 128]
//	gpucheck generate --checkpoint CK --data DIR --prompts FILE   the summarizer's generation (batch 1, 8, 32; greedy, beam 4)
//	gpucheck decode [--sources 7 --tokens 48]             the from-scratch summarizer's graph decoding vs the go backend
//	gpucheck nli --work DIR [--model tiny-deberta]        the nli judge on the backend vs the go backend, and its speed
//	gpucheck logits --checkpoint CK --out FILE            our logits of a fixed batch (for PEFT's)
//	gpucheck export --checkpoint CK --out DIR             the merged Hugging Face snapshot
//	gpucheck report --in RESULTS.jsonl --json FILE --md FILE   the report, after every step
//
// Build (docs/gpu.md): GOEXPERIMENT=simd go build -ldflags "-s -w" -o gpucheck/bin/gpucheck ./tools/gpucheck
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/tracksum/tracksum/internal/cli"
)

func main() { cli.Main(command()) }

func command() cli.Command {
	return cli.Command{
		Name:        "gpucheck",
		Synopsis:    "snapshot|parity|decode|nli|train|generate|logits|export|report [flags]",
		Description: "The Go side of scripts/gpu-check.sh (docs/gpu.md): each subcommand prints one JSON line.",
		Run: func(context.Context, []string) error {
			return cli.Usagef("want a subcommand: snapshot, parity, decode, nli, train, generate, logits or export")
		},
		Subcommands: []cli.Command{snapshotCommand(), parityCommand(), decodeCommand(), nliCommand(), trainCommand(), generateCommand(), logitsCommand(), exportCommand(), reportCommand()},
	}
}

// emit writes one result as a JSON line.
func emit(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// emitComparison writes the row of a comparison with the go backend (decode, nli): err, if any,
// recorded in it; then err, or mismatch when the row is not ok.
func emitComparison(res map[string]any, err error, mismatch string) error {
	if err != nil {
		res["error"] = err.Error()
	}
	if e := emit(os.Stdout, res); e != nil {
		return e
	}
	if err != nil {
		return err
	}
	if ok, _ := res["ok"].(bool); !ok {
		return fmt.Errorf("%s (see the JSON line)", mismatch)
	}
	return nil
}
