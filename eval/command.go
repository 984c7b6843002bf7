package eval

import (
	"context"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/cli"
)

// Command is `tracksum-eval --pred PRED.jsonl --ref REF.jsonl [--judge lexical|llm|nli] [--out DIR]`,
// with the subcommands compare (CompareCommand) and agreement (AgreementCommand).
func Command() cli.Command {
	fs := cli.NewFlags("tracksum-eval")
	fs.String("pred", "", "predictions JSONL (PMID, Aspect, Summary, Indexes, optional Phrases)")
	fs.String("ref", "", "references JSONL (TracSum/PCoA layout, with Document)")
	fs.String("judge", "lexical", "judge: lexical (offline proxy), llm (OpenAI-compatible endpoint, eval.llm.*) or nli (local NLI snapshot, eval.nli.*)")
	fs.String("nli-model", "", "eval.nli.model: local BERT/RoBERTa/DeBERTa-v2 NLI snapshot directory for --judge nli (never downloaded)")
	fs.String("out", "", "output directory for report.json, instances.jsonl, report.html, config.yaml")
	fs.Bool("overwrite", false, "replace a previous eval output in --out (kept until the new one is complete); without it a non-empty --out is refused, and a directory holding anything else is never replaced")
	fs.String("missing", "error", "a reference without prediction: error, or empty (scored as \"Unknown.\")")
	fs.Int("workers", 0, "instances scored at once (0: one per CPU, or eval.llm.concurrency)")
	fs.StringSlice("metric", nil, "eval.metrics: LLM metrics to add through the eval.llm endpoint: fm (facet-aware, ScholarSum), qa (LongSumEval)")
	fs.Bool("allow-malformed", false, "eval.llm.allow_malformed: finish (without that metric's score) when over half of an LLM metric's answers are malformed, instead of failing")
	keys := map[string]string{"pred": "eval.pred", "ref": "eval.ref", "judge": "eval.judge", "nli-model": "eval.nli.model", "out": "eval.out",
		"overwrite": "eval.overwrite", "missing": "eval.missing", "workers": "eval.workers", "metric": "eval.metrics",
		"allow-malformed": "eval.llm.allow_malformed"}
	return cli.Command{
		Name:     "tracksum-eval",
		Synopsis: "--pred PRED.jsonl --ref REF.jsonl [--judge lexical|llm|nli [--nli-model DIR]] [--out DIR]\n       tracksum-eval compare A.jsonl B.jsonl --ref REF.jsonl\n       tracksum-eval agreement --scores instances.jsonl --human H.jsonl",
		Description: "Scores predictions against references with TracSum claim/citation metrics, exact citation " +
			"metrics, ROUGE and (when references carry Phrases) PCoA phrase metrics; prints Table 3 and Table 5 " +
			"style tables. Metric definitions: docs/eval.md.",
		Flags:       fs,
		Subcommands: []cli.Command{CompareCommand(), AgreementCommand()},
		Run: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unexpected arguments %v", args)
			}
			cfg, err := cli.LoadConfig(fs, keys)
			if err != nil {
				return err
			}
			c := cfg.Eval
			if c.Pred == "" || c.Ref == "" {
				return cli.Usagef("--pred and --ref are required")
			}
			if err := checkNLIModel(fs, c); err != nil {
				return err
			}
			_, err = Run(ctx, Options{Pred: c.Pred, Ref: c.Ref, Out: c.Out, Overwrite: c.Overwrite, Config: cfg, Stdout: os.Stdout, Stderr: os.Stderr})
			return err
		},
	}
}

// CompareCommand is `tracksum-eval compare A.jsonl B.jsonl --ref REF.jsonl`.
func CompareCommand() cli.Command {
	fs := cli.NewFlags("tracksum-eval compare")
	fs.String("ref", "", "references JSONL")
	fs.String("judge", "lexical", "judge: lexical, llm or nli")
	fs.String("nli-model", "", "eval.nli.model: local NLI snapshot directory for --judge nli")
	fs.String("missing", "error", "a reference without prediction: error or empty")
	fs.String("out", "", "optional JSON file for the comparison (an existing file is replaced once the new one is complete)")
	keys := map[string]string{"ref": "eval.ref", "judge": "eval.judge", "nli-model": "eval.nli.model", "missing": "eval.missing", "out": "eval.compare.out"}
	return cli.Command{
		Name:        "tracksum-eval compare",
		Synopsis:    "A.jsonl B.jsonl --ref REF.jsonl [--judge lexical|llm|nli [--nli-model DIR]] [--out FILE]",
		Description: "Paired-bootstrap significance of the difference between two systems on every metric.",
		Flags:       fs,
		Run: func(ctx context.Context, args []string) error {
			cfg, err := cli.LoadConfig(fs, keys)
			if err != nil {
				return err
			}
			ref, out := cfg.Eval.Ref, cfg.Eval.Compare.Out
			if len(args) != 2 || ref == "" {
				return cli.Usagef("need two prediction files and --ref")
			}
			if err := checkNLIModel(fs, cfg.Eval); err != nil {
				return err
			}
			if err := cli.CheckOutputs(map[string]string{"A": args[0], "B": args[1], "--ref": ref},
				map[string]string{"--out": out}); err != nil {
				return err
			}
			c, err := Compare(ctx, args[0], args[1], ref, cfg.Eval)
			if err != nil {
				return err
			}
			if err := WriteComparison(os.Stdout, c); err != nil {
				return err
			}
			return writeJSON(out, c)
		},
	}
}

// AgreementCommand is `tracksum-eval agreement --scores A.jsonl --human H.jsonl`.
func AgreementCommand() cli.Command {
	fs := cli.NewFlags("tracksum-eval agreement")
	fs.String("scores", "", "automatic per-instance scores (instances.jsonl written by tracksum-eval)")
	fs.String("human", "", "human scores JSONL: PMID, Aspect and metric fields named as in report.json")
	fs.String("out", "", "optional JSON file for the correlations (an existing file is replaced once the new one is complete)")
	keys := map[string]string{"scores": "eval.agreement.scores", "human": "eval.agreement.human", "out": "eval.agreement.out"}
	return cli.Command{
		Name:        "tracksum-eval agreement",
		Synopsis:    "--scores instances.jsonl --human H.jsonl [--out FILE]",
		Description: "Pearson, Spearman and Kendall tau-b (with p-values) between automatic and human scores, per metric.",
		Flags:       fs,
		Run: func(ctx context.Context, args []string) error {
			cfg, err := cli.LoadConfig(fs, keys)
			if err != nil {
				return err
			}
			a := cfg.Eval.Agreement
			scores, human := a.Scores, a.Human
			if scores == "" || human == "" || len(args) > 0 {
				return cli.Usagef("--scores and --human are required")
			}
			if err := cli.CheckOutputs(map[string]string{"--scores": scores, "--human": human},
				map[string]string{"--out": a.Out}); err != nil {
				return err
			}
			cs, err := Agreement(scores, human)
			if err != nil {
				return err
			}
			if err := WriteAgreement(os.Stdout, cs); err != nil {
				return err
			}
			return writeJSON(a.Out, cs)
		},
	}
}

// checkNLIModel refuses --nli-model with another judge than nli: the snapshot would be ignored,
// and the figures be the other judge's while the command line says NLI.
func checkNLIModel(fs *pflag.FlagSet, c config.Eval) error {
	if fs.Changed("nli-model") && c.Judge != "nli" {
		return cli.Usagef("--nli-model is the nli judge's snapshot, but the judge is %s: add --judge nli, or drop --nli-model", c.Judge)
	}
	return nil
}

// writeJSON writes v to the optional --out file path (nothing when empty) under the file's lock,
// so that two runs writing the same file never interleave.
func writeJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	path = filepath.Clean(path)
	lock, err := atomicio.LockFile(path)
	if err != nil {
		return err
	}
	defer lock.Release()
	return atomicio.WriteJSON(path, v)
}
