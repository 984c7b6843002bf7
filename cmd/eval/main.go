// Command tracksum-eval is tracksum's built-in evaluator: TracSum claim and citation metrics, exact
// citation metrics, ROUGE and PCoA phrase metrics, with a lexical or an LLM judge, text tables,
// report.json, instances.jsonl and a self-contained report.html.
//
//	tracksum-eval --pred PRED.jsonl --ref REF.jsonl [--judge lexical|llm] [--out DIR]
//	tracksum-eval compare A.jsonl B.jsonl --ref REF.jsonl
//	tracksum-eval agreement --scores instances.jsonl --human H.jsonl
package main

import (
	"os"

	"github.com/tracksum/tracksum/eval"
	"github.com/tracksum/tracksum/internal/cli"
)

func main() {
	cmd := eval.Command()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "compare":
			cmd = eval.CompareCommand()
		case "agreement":
			cmd = eval.AgreementCommand()
		}
		if cmd.Name != "tracksum-eval" {
			// The subcommand's own flag set parses what follows its name.
			os.Args = append(os.Args[:1], os.Args[2:]...)
		}
	}
	cli.Main(cmd)
}
