package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/pretrained"
	"github.com/tracksum/tracksum/model/summarizer"
)

func generateCommand() cli.Command {
	fs := cli.NewFlags("gpucheck generate")
	fs.String("checkpoint", "", "a pretrained summarizer checkpoint (gpucheck train --task summarizer)")
	fs.String("data", "", "its prepared directory: the summarizer rows whose prompts are generated from")
	fs.String("prompts", "", "JSONL file to write: each prompt's ids and our greedy answer's ids (the largest batch's)")
	fs.String("batches", "1,8,32", "batch sizes, comma-separated")
	fs.String("beams", "1,4", "beam sizes, comma-separated (1: greedy)")
	fs.Int("max-new", 64, "new tokens at most (the end token included)")
	fs.String("precision", "f32", "f32 or bf16: the precision the checkpoint is loaded in")
	return cli.Command{
		Name: "gpucheck generate", Synopsis: "--checkpoint CK --data DIR --prompts FILE [flags]", Flags: fs,
		Description: "tracksum-infer's summarizer generation (Track-then-Sum's prompts of the prepared rows, real lengths)\n" +
			"at each batch and beam size: tokens/s of the second call (the first compiles); the largest batch's\n" +
			"prompts and greedy ids for peft_check.py generate to compare with transformers' generate.",
		Run: func(ctx context.Context, args []string) error {
			ck, _ := fs.GetString("checkpoint")
			data, _ := fs.GetString("data")
			prompts, _ := fs.GetString("prompts")
			bs, _ := fs.GetString("batches")
			ks, _ := fs.GetString("beams")
			maxNew, _ := fs.GetInt("max-new")
			prec, _ := fs.GetString("precision")
			if ck == "" || data == "" || prompts == "" || len(args) > 0 {
				return cli.Usagef("--checkpoint, --data and --prompts are required")
			}
			batches, err := intList("--batches", bs)
			if err != nil {
				return err
			}
			beams, err := intList("--beams", ks)
			if err != nil {
				return err
			}
			if maxNew < 1 {
				return cli.Usagef("--max-new must be >= 1")
			}
			return generate(ctx, ck, data, prompts, batches, beams, maxNew, prec)
		},
	}
}

// intList parses "1,8,32" into positive ints.
func intList(flag, s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, cli.Usagef("%s: %q is not a list of positive integers", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// summaryRequests reads n requests from the prepared summarizer rows (test, dev, then train,
// cycled when fewer).
func summaryRequests(dir string, n int) ([]summarizer.Request, error) {
	var all []summarizer.Request
	for _, split := range []string{dataset.SplitTest, dataset.SplitDev, dataset.SplitTrain} {
		for r, err := range dataset.ReadShards[dataset.SummarizerRow](dir, dataset.TaskSummarizer, split) {
			if err != nil {
				return nil, err
			}
			all = append(all, summarizer.Request{Aspect: r.Aspect, Cited: r.CitedSentences, Document: r.Document})
		}
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%s: no summarizer rows", dir)
	}
	out := make([]summarizer.Request, n)
	for i := range out {
		out[i] = all[i%len(all)]
	}
	return out, nil
}

// promptRow is one line of the prompts file: a prompt's ids and our greedy answer's.
type promptRow struct {
	Prompt []int32 `json:"prompt"`
	Greedy []int32 `json:"greedy"`
}

func generate(ctx context.Context, ck, data, promptsFile string, batches, beams []int, maxNew int, prec string) error {
	s, err := pretrained.LoadSummarizer(ctx, ck, pretrained.LoadOptions{Precision: prec})
	if err != nil {
		return err
	}
	most := 0
	for _, b := range batches {
		most = max(most, b)
	}
	reqs, err := summaryRequests(data, most)
	if err != nil {
		return err
	}
	for _, k := range beams {
		for _, b := range batches {
			o := decode.Options{BeamSize: k, MaxLen: maxNew}
			res := map[string]any{"step": "generate", "checkpoint": ck, "precision": prec, "batch": b, "beam": k, "max_new_tokens": maxNew}
			// The first call compiles the prefill and step graphs of the shapes: not timed.
			if _, _, err := s.Tokens(reqs[:b], o); err != nil {
				res["ok"], res["error"] = false, err.Error()
				_ = emit(os.Stdout, res)
				return err
			}
			t0 := time.Now()
			prompts, ids, err := s.Tokens(reqs[:b], o)
			secs := time.Since(t0).Seconds()
			if err != nil {
				res["ok"], res["error"] = false, err.Error()
				_ = emit(os.Stdout, res)
				return err
			}
			promptTok, newTok := 0, 0
			for i := range ids {
				promptTok += len(prompts[i])
				newTok += len(ids[i])
			}
			res["seconds"], res["new_tokens"], res["prompt_tokens_mean"] = secs, newTok, float64(promptTok)/float64(b)
			res["tokens_per_sec"], res["ok"] = float64(newTok)/max(secs, 1e-9), true
			if err := emit(os.Stdout, res); err != nil {
				return err
			}
			if k == 1 && b == most {
				if err := atomicio.WriteWith(promptsFile, 0o644, func(w io.Writer) error {
					for i := range ids {
						if err := emit(w, promptRow{Prompt: prompts[i], Greedy: ids[i]}); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
