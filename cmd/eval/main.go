// Command tracksum-eval is tracksum's built-in evaluator: TracSum claim and citation metrics, exact
// citation metrics, ROUGE and PCoA phrase metrics, with a lexical or an LLM judge, text tables,
// report.json, instances.jsonl and a self-contained report.html.
//
//	tracksum-eval --pred PRED.jsonl --ref REF.jsonl [--judge lexical|llm] [--out DIR]
//	tracksum-eval compare A.jsonl B.jsonl --ref REF.jsonl
//	tracksum-eval agreement --scores instances.jsonl --human H.jsonl
package main

import (
	"github.com/tracksum/tracksum/eval"
	"github.com/tracksum/tracksum/internal/cli"
)

func main() { cli.Main(eval.Command()) }
