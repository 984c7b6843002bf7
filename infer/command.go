package infer

import (
	"context"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/cli"
)

// inferFlagKeys binds every flag of tracksum-infer to its config key (cli.LoadConfig applies those
// given); the command reads its settings from the resolved config only.
var inferFlagKeys = map[string]string{
	"tracker":              "infer.tracker",
	"summarizer":           "infer.summarizer",
	"method":               "infer.method",
	"model":                "infer.model",
	"llm-model":            "infer.llm.model",
	"demos":                "infer.llm.demos",
	"temperature":          "infer.llm.temperature",
	"refine":               "infer.refine",
	"input":                "infer.input",
	"split":                "infer.split",
	"out":                  "infer.out",
	"refs":                 "infer.refs",
	"threshold":            "infer.threshold",
	"full-context":         "infer.full_context",
	"grounding":            "infer.grounding",
	"aspects":              "infer.aspects",
	"workers":              "infer.workers",
	"precision":            "infer.precision",
	"beam-size":            "infer.decoding.beam_size",
	"length-penalty":       "infer.decoding.length_penalty",
	"no-repeat-ngram":      "infer.decoding.no_repeat_ngram",
	"min-length-ratio":     "infer.decoding.min_length_ratio",
	"copy-chain-bonus":     "infer.decoding.copy_chain_bonus",
	"repeat-source-ngrams": "infer.decoding.repeat_source_ngrams",
	"word-rule":            "infer.decoding.word_rule",
	"sample-temperature":   "infer.decoding.sample_temperature",
	"top-p":                "infer.decoding.top_p",
	"max-length":           "infer.decoding.max_length",
}

// OptionsOf returns the models, input and outputs of tracksum-infer as cfg's infer section names
// them (infer.tracker, infer.input, ...).
func OptionsOf(cfg *config.Config) Options {
	c := cfg.Infer
	return Options{Tracker: c.Tracker, Summarizer: c.Summarizer, Method: c.Method, Model: c.Model,
		Input: c.Input, Split: c.Split, Out: c.Out, Refs: c.Refs, Refine: c.Refine}
}

// Command returns tracksum-infer: Track-then-Sum inference with checkpoints, or an LLM method.
func Command() cli.Command {
	fs := cli.NewFlags("tracksum-infer")
	fs.String("tracker", "", "tracker checkpoint directory, or a cross-validation directory (train --folds K: the mean of its fold-k checkpoints' probabilities) (required without --method); \"gold\": the input's reference citations; \"llm\": prompted")
	fs.String("summarizer", "", "summarizer checkpoint directory; omit for track-only inference; \"extractive\": copy the tracked sentences; \"llm\": prompted")
	fs.String("method", "", "tts (Track-then-Sum: --tracker [--summarizer], the default; TTS (+) f is --full-context), stt (SUM-THEN-TRACK: --model, or --summarizer and --tracker), ete (END-TO-END: --model), or an LLM method instead of --tracker/--summarizer: prompt (TracSum two-shot), intrinsic, prior or posthoc (PCoA attribution)")
	fs.String("model", "", "checkpoint of --method stt (train --task sum_then_track) or ete (train --task end_to_end)")
	fs.String("llm-model", "", "infer.llm.model: model name at the eval.llm.base_url endpoint (default: eval.llm.model)")
	fs.String("demos", "", "infer.llm.demos: demonstrations of --method prompt: prepared directory (train split) or JSONL (default: --input's train split)")
	fs.Float64("temperature", 1, "infer.llm.temperature: sampling temperature of the LLM methods (TracSum: 1.0)")
	fs.Int("refine", 0, "refine each positive summary with LongSumEval QA feedback for at most N rounds (eval.qa.*, endpoint eval.llm, model infer.llm.model)")
	fs.String("input", "", "prepared directory, benchmark .jsonl file, or raw text file (required)")
	fs.String("split", "test", "split of a prepared directory to run on")
	fs.String("out", "", "prediction JSONL file (required; an existing file is replaced once the new one is complete)")
	fs.String("refs", "", "also write the input's reference instances here (eval format)")
	fs.Float64("threshold", 0, "infer.threshold: keep sentences with probability >= this (0: every one; default: the tracker checkpoint's tracker.threshold, else 0.5)")
	fs.Bool("full-context", false, "infer.full_context: give the summarizer the whole abstract too (TTS (+) f)")
	fs.String("grounding", "off", "infer.grounding: a tracked sentence that supports no claim of its summary is appended to it (restore), dropped from the citations (prune) or left (off); trained summarizers only")
	fs.StringSlice("aspects", nil, "infer.aspects: aspect codes to summarize (default: the input's, or all for raw text)")
	fs.Int("workers", 0, "infer.workers: abstracts processed in parallel (0 = number of CPUs)")
	fs.String("precision", "", "infer.precision: compute precision of --pretrained checkpoints: f32, bf16 or auto (bf16 on CUDA, else f32); default: the checkpoint's")
	fs.Int("beam-size", 0, "beam size (default: the summarizer checkpoint's; 1 = greedy)")
	fs.Float64("length-penalty", 0, "GNMT length penalty alpha (default: the checkpoint's)")
	fs.Int("no-repeat-ngram", 0, "forbid repeating n-grams of this size, 0 = off (default: the checkpoint's)")
	fs.Float64("min-length-ratio", 0, "minimum summary tokens per tracked-sentence token (default: the checkpoint's summarizer.min_len_ratio)")
	fs.Float64("copy-chain-bonus", 0, "copy-score bonus for continuing the longest copied span (default: the checkpoint's summarizer.copy_chain_bonus)")
	fs.Bool("repeat-source-ngrams", false, "let an n-gram the summarizer's source holds c times occur c times despite --no-repeat-ngram (default: the checkpoint's summarizer.repeat_source_ngrams)")
	fs.Bool("word-rule", false, "forbid subword pieces that glue a word found neither in the source nor in the training summaries (default: the checkpoint's summarizer.word_rule)")
	fs.Float64("sample-temperature", 0, "with a pretrained summarizer (train --pretrained): sample each token at this temperature instead of searching (0: greedy/beam)")
	fs.Float64("top-p", 1, "with --sample-temperature: sample from the smallest set of tokens holding this probability mass")
	fs.Int("max-length", 0, "maximum summary tokens, [EOS] included (default: the checkpoint's limit, the larger of max_decode_len and max_summary_len; past max_summary_len a from-scratch decoder reuses its last trained position)")
	return cli.Command{
		Name: "tracksum-infer",
		Synopsis: "--tracker CKPT|gold|llm [--summarizer CKPT|extractive|llm] --input X --out PRED.jsonl [flags]\n" +
			"       tracksum-infer --method stt|ete --model CKPT --input X --out PRED.jsonl [flags]\n" +
			"       tracksum-infer --method stt --summarizer STT/summarizer --tracker STT/tracker --input X --out PRED.jsonl [flags]\n" +
			"       tracksum-infer --method prompt|intrinsic|prior|posthoc --llm-model M --input X --out PRED.jsonl [flags]",
		Description: "Track-then-Sum inference. For each abstract and aspect the tracker scores every sentence, those with\n" +
			"probability >= threshold are kept and summarized; when none is kept the summary is \"Unknown.\" with no\n" +
			"citation. Output: one JSON object per (PMID, aspect) with Summary, Indexes and per-sentence Scores.\n" +
			"TracSum's Table 6 variants write the same records: stt summarizes the whole abstract, then cites the\n" +
			"sentences its pair tracker scores >= threshold against the summary; ete writes summary and indices at once.",
		Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unexpected arguments %v", args)
			}
			cfg, err := cli.LoadConfig(fs, inferFlagKeys)
			if err != nil {
				return err
			}
			o := OptionsOf(cfg)
			if o.Refine < 0 {
				return cli.Usagef("--refine must be >= 0")
			}
			if err := CheckDecoding(cfg.Infer.Decoding); err != nil {
				return cli.Usagef("%v", err)
			}
			if (o.Tracker == "" && o.Method == "") || o.Input == "" || o.Out == "" {
				return cli.Usagef("--tracker (or --method), --input and --out are required")
			}
			if err := CheckMethod(o); err != nil {
				return cli.Usagef("%v", err)
			}
			_, err = Run(ctx, cfg, o)
			return err
		},
	}
}
