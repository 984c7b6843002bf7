// Command tracksum-infer runs Track-then-Sum inference: the tracker keeps the sentences relevant to
// each aspect, the summarizer writes the aspect summary from them.
//
//	tracksum-infer --tracker CKPT [--summarizer CKPT] --input X --out PRED.jsonl [--threshold 0.5]
//	               [--full-context] [--aspects a,i,o] [--split test] [--refs REF.jsonl]
//
// X is a prepared directory (its --split), a TracSum/PCoA JSONL file, or raw text abstracts (one per
// file or separated by blank lines). Without --summarizer it is track-only inference.
//
//	tracksum-infer --method prompt|intrinsic|prior|posthoc --llm-model M --input X --out PRED.jsonl
//
// runs an LLM method through the OpenAI-compatible endpoint of eval.llm instead (package
// infer/llmmethods); --tracker llm and --summarizer llm prompt one component of Track-then-Sum.
//
//	tracksum-infer --method stt|ete --model CKPT --input X --out PRED.jsonl
//
// runs TracSum's Table 6 variants SUM-THEN-TRACK and END-TO-END (train --task sum_then_track |
// end_to_end; docs/variants.md); --method tts is the default Track-then-Sum.
package main

import (
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/internal/cli"
)

func main() { cli.Main(infer.Command()) }
