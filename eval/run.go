package eval

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/judge"
	"github.com/tracksum/tracksum/eval/judge/nli"
	"github.com/tracksum/tracksum/eval/report"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/progress"
	"github.com/tracksum/tracksum/textmetrics/rouge"
)

// NewJudge builds the judge named by cfg.Judge. The llm judge's API key is read from the
// environment variable cfg.LLM.APIKeyEnv; the nli judge loads the snapshot cfg.NLI.Model and
// decomposes summaries as the lexical judge does, and says on log (os.Stderr when nil) when its
// disk cache is off.
func NewJudge(ctx context.Context, cfg config.Eval, log io.Writer) (judge.Judge, error) {
	switch cfg.Judge {
	case "lexical", "nli":
		w := cfg.Workers
		if w == 0 {
			w = runtime.GOMAXPROCS(0)
		}
		lex := judge.NewLexical(judge.LexicalOptions{
			Threshold: cfg.Lexical.Threshold, MinClauseWords: cfg.Lexical.MinClauseWords, Workers: w,
		})
		if cfg.Judge == "lexical" {
			return lex, nil
		}
		return nli.New(ctx, nli.Options{Dir: cfg.NLI.Model, Threshold: cfg.NLI.Threshold, BatchSize: cfg.NLI.BatchSize,
			MaxLength: cfg.NLI.MaxLength, CacheDir: cfg.NLI.CacheDir, Decomposer: lex, Log: log})
	case "llm":
		key := ""
		if cfg.LLM.APIKeyEnv != "" {
			key = os.Getenv(cfg.LLM.APIKeyEnv)
		}
		return judge.NewLLM(judge.LLMOptions{
			BaseURL: cfg.LLM.BaseURL, Model: cfg.LLM.Model, APIKey: key, CacheDir: cfg.LLM.CacheDir,
			Concurrency: cfg.LLM.Concurrency, MaxRetries: cfg.LLM.MaxRetries, Backoff: cfg.LLM.Backoff,
			Timeout: cfg.LLM.Timeout,
		}, cfg.LLM.EntailHints...)
	}
	return nil, fmt.Errorf("eval.judge: unknown judge %q", cfg.Judge)
}

// Options are the inputs of Run.
type Options struct {
	// Pred and Ref are the prediction and reference JSONL files.
	Pred, Ref string
	// Out is the output directory (report.json, instances.jsonl, report.html, config.yaml); empty
	// writes nothing but the tables.
	Out string
	// Config is the resolved configuration (its Eval section drives the evaluation).
	Config *config.Config
	// Overwrite allows replacing an existing non-empty Out that is a previous eval output (it is
	// kept until the new one is complete); anything else is never replaced.
	Overwrite bool
	// Stdout receives the tables; Stderr the progress line (nil: none).
	Stdout, Stderr io.Writer
}

// Outcome is what Run computed.
type Outcome struct {
	Pairs   []Pair
	Results []Result
	Report  *Report
	// LLM holds the optional LLM metrics (eval.metrics) by pair, and LLMReport their aggregate;
	// both nil when none was asked.
	LLM       []LLMResult
	LLMReport *LLMReport
}

// Evaluation runs the evaluation of pred against ref with the eval settings, without writing
// anything: it is the library form of `tracksum-eval`.
func Evaluation(ctx context.Context, pred, ref string, cfg config.Eval, stderr io.Writer) (*Outcome, error) {
	refs, err := dataset.ReadRecordsFile(ref)
	if err != nil {
		return nil, fmt.Errorf("references: %w", err)
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("references: %s: %w: the file holds no record", ref, ErrNoInstances)
	}
	preds, err := dataset.ReadRecordsFile(pred)
	if err != nil {
		return nil, fmt.Errorf("predictions: %w", err)
	}
	pairs, err := Join(refs, preds, cfg.Missing == "empty")
	if err != nil {
		return nil, err
	}
	j, err := NewJudge(ctx, cfg, stderr)
	if err != nil {
		return nil, err
	}
	phrases := false
	for i := range refs {
		phrases = phrases || refs[i].HasPhrases
	}
	sc := &Scorer{Judge: j, Rouge: rouge.New(rouge.Options{Stem: cfg.Stem}), Phrases: phrases}
	var tick func()
	var bar *progress.Bar
	if stderr != nil {
		bar = progress.NewTo(stderr, "eval", int64(len(pairs)), "instances")
		tick = func() { bar.Add(1) }
		if nj, ok := j.(*nli.Judge); ok {
			// The nli judge's work is in sentence pairs, not instances: show them too.
			tick = func() {
				st := nj.Stats()
				bar.Status("nli %d pairs, %d computed, %d cached", st.Pairs, st.Computed, st.CacheHits)
				bar.Add(1)
			}
		}
	}
	results, err := sc.Evaluate(ctx, pairs, cfg.Workers, tick)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return nil, err
	}
	settings := Settings{
		Pred: pred, Ref: ref, Judge: j.Name(), Stem: cfg.Stem, Missing: cfg.Missing,
		Bootstrap: bootstrapOptions(cfg),
	}
	if cfg.Judge == "lexical" || cfg.Judge == "nli" {
		settings.Lexical = map[string]float64{
			"threshold": cfg.Lexical.Threshold, "min_clause_words": float64(cfg.Lexical.MinClauseWords),
		}
	}
	if nj, ok := j.(*nli.Judge); ok {
		settings.NLI = &NLISettings{Model: cfg.NLI.Model, WeightsSHA256: nj.WeightsSHA256(), Files: nj.FileSHA256s(),
			ModelSHA256: nj.ModelSHA256(), Threshold: cfg.NLI.Threshold, MaxLength: nj.MaxLength()}
		if stderr != nil && !progress.Quiet() {
			fmt.Fprintf(stderr, "nli judge: %s\n", nj.Stats())
		}
	}
	rep := BuildReport(results, phrases, settings.Bootstrap, settings)
	out := &Outcome{Pairs: pairs, Results: results, Report: rep}
	if len(cfg.Metrics) > 0 {
		client, err := NewLLMClient(cfg)
		if err != nil {
			return nil, err
		}
		var tick func()
		var bar *progress.Bar
		if stderr != nil {
			bar = progress.NewTo(stderr, "llm metrics", int64(len(pairs)), "instances")
			tick = func() { bar.Add(1) }
		}
		out.LLM, err = LLMMetrics(ctx, client, pairs, cfg, tick)
		if bar != nil {
			bar.Finish()
		}
		if err != nil {
			return nil, err
		}
		out.LLMReport = BuildLLMReport(pairs, out.LLM, cfg.Metrics, client, settings.Bootstrap)
	}
	return out, nil
}

func bootstrapOptions(cfg config.Eval) BootstrapOptions {
	return BootstrapOptions{Resamples: cfg.Bootstrap.Resamples, Seed: cfg.Bootstrap.Seed, Level: cfg.Bootstrap.Level}
}

// Run evaluates, prints the tables and writes the output directory.
//
// The output directory is locked and checked before the evaluation starts (so that a wrong --out
// fails at once and no other run can write it meanwhile), written in full to a temporary sibling
// and put in place in one step at the end: a failed or interrupted run (a full disk included)
// leaves the previous content of --out as it was, and two runs on one --out never mix their
// files. An existing non-empty --out is refused unless it is a previous eval output and
// Options.Overwrite is set, the rule of every command's --overwrite.
func Run(ctx context.Context, opts Options) (*Outcome, error) {
	if err := checkOutDir(opts.Out, opts.Pred, opts.Ref); err != nil {
		return nil, err
	}
	var dir *atomicio.Dir
	if opts.Out != "" {
		var err error
		dir, err = atomicio.NewDirWith(opts.Out, atomicio.DirOptions{Overwrite: opts.Overwrite, Previous: PreviousOutput})
		if err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		defer dir.Abort()
	}
	out, err := Evaluation(ctx, opts.Pred, opts.Ref, opts.Config.Eval, opts.Stderr)
	if err != nil {
		return nil, err
	}
	if opts.Stdout != nil {
		if err := WriteTables(opts.Stdout, out.Report); err != nil {
			return nil, err
		}
		if out.LLMReport != nil {
			if err := WriteLLMTables(opts.Stdout, out.LLMReport, out.Report.Overall.Level); err != nil {
				return nil, err
			}
		}
	}
	// An LLM metric that got mostly malformed answers fails the run before anything is written,
	// unless asked to go on (the score is left out either way).
	if out.LLMReport != nil && !opts.Config.Eval.LLM.AllowMalformed {
		if err := out.LLMReport.NotMeaningful(); err != nil {
			return nil, err
		}
	}
	if dir == nil {
		return out, nil
	}
	if err := writeOutputs(dir.Tmp, out, opts.Config); err != nil {
		return nil, fmt.Errorf("eval: %s: %w", opts.Out, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := dir.Commit(); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if opts.Stdout != nil {
		fmt.Fprintf(opts.Stdout, "\nreport: %s (report.json, instances.jsonl beside it)\n", filepath.Join(opts.Out, "report.html"))
	}
	return out, nil
}

// OutputFiles are the files WriteOutputs creates (llm_metrics.json only with eval.metrics).
var OutputFiles = []string{"report.json", "instances.jsonl", "report.html", "config.yaml", "llm_metrics.json"}

// PreviousOutput returns nil when dir is a previous eval output (report.json and nothing but
// OutputFiles), which Run replaces with --overwrite; anything else (a prepared directory, a
// checkpoint, a user's files) is never replaced, with or without --overwrite.
func PreviousOutput(dir string) error {
	if err := atomicio.OnlyFiles(dir, "tracksum-eval", OutputFiles); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "report.json")); err != nil {
		return errors.New("has no report.json (not an eval output)")
	}
	return nil
}

// writeOutputs is WriteOutputs; tests replace it to fail half-way as a full disk would.
var writeOutputs = WriteOutputs

// WriteOutputs writes report.json, instances.jsonl, report.html and the resolved config.yaml into
// dir (each file through a temporary file and a rename). Run calls it on a temporary directory that
// it commits afterwards; called directly on a live directory, a failure can leave some files new
// and others old.
func WriteOutputs(dir string, out *Outcome, cfg *config.Config) error {
	rj, err := ReportJSON(out.Report)
	if err != nil {
		return err
	}
	if err := atomicio.WriteFile(filepath.Join(dir, "report.json"), rj, 0o644); err != nil {
		return err
	}
	if err := atomicio.WriteWith(filepath.Join(dir, "instances.jsonl"), 0o644, func(w io.Writer) error {
		return WriteInstances(w, out.Results, out.LLM)
	}); err != nil {
		return err
	}
	if out.LLMReport != nil {
		if err := atomicio.WriteJSON(filepath.Join(dir, "llm_metrics.json"), out.LLMReport); err != nil {
			return err
		}
	}
	// Streamed to the file: the page of a large evaluation is never held in memory whole.
	if err := atomicio.WriteWith(filepath.Join(dir, "report.html"), 0o644, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		if err := report.Write(bw, Page(out)); err != nil {
			return err
		}
		return bw.Flush()
	}); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	if cfg != nil {
		y, err := cfg.YAML()
		if err != nil {
			return err
		}
		if err := atomicio.WriteFile(filepath.Join(dir, "config.yaml"), y, 0o644); err != nil {
			return err
		}
	}
	return nil
}
