package main

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/tracksum/tracksum/eval/judge"
	"github.com/tracksum/tracksum/eval/judge/nli"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/model"
)

// nliTol bounds the entailment probabilities of the nli judge on the backend against the pure-Go
// backend's (float32, TF32 off; the parity tests hold the Go backend to transformers' to 1e-4).
const nliTol = 1e-4

// nliModels are the snapshots `gpucheck nli` can judge with: tools/randsnap's tiny NLI snapshots
// (hidden 64, 2 layers, 4 heads; test tokenizers of about one token per character, so pairs of up
// to ~500 tokens) and a BERT-base-shaped one (440 MB of float32 weights).
var nliModels = map[string]randsnap.Encoder{
	"tiny-bert":    {ModelType: "bert", Vocab: 100, Hidden: 64, Layers: 2, Heads: 4, Intermediate: 128, Pooler: true},
	"tiny-roberta": {ModelType: "roberta", Vocab: 300, Hidden: 64, Layers: 2, Heads: 4, Intermediate: 128},
	"tiny-deberta": {ModelType: "deberta-v2", Vocab: 300, Hidden: 64, Layers: 2, Heads: 4, Intermediate: 128},
	"bert-base":    {ModelType: "bert", Vocab: 30522, Hidden: 768, Layers: 12, Heads: 12, Intermediate: 3072, Pooler: true},
}

func nliCommand() cli.Command {
	fs := cli.NewFlags("gpucheck nli")
	fs.String("work", "", "directory for the random snapshots (required)")
	fs.String("model", "tiny-deberta", "tiny-bert, tiny-roberta, tiny-deberta or bert-base")
	fs.Int("pairs", 2700, "synthetic pairs timed (the 544 TracSum dev instances ask about 2,700)")
	fs.Int("parity", 32, "pairs whose probabilities are compared with the pure-Go backend's")
	return cli.Command{
		Name: "gpucheck nli", Synopsis: "--work DIR [--model tiny-deberta] [--pairs 2700 --parity 32]", Flags: fs,
		Description: "The nli judge (tracksum-eval --judge nli) on the backend: a random NLI snapshot of the model's shape, " +
			"synthetic premise/hypothesis pairs (our own words, lengths spread over the model's range, seeded); the " +
			"entailment probabilities of the first --parity pairs against the pure-Go backend's in the same process, then " +
			"every pair in one call as the evaluator asks them (no cache): seconds, pairs/s, passes and graphs. One JSON line.",
		Run: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unexpected arguments %v", args)
			}
			work, _ := fs.GetString("work")
			name, _ := fs.GetString("model")
			pairs, _ := fs.GetInt("pairs")
			parity, _ := fs.GetInt("parity")
			e, ok := nliModels[name]
			switch {
			case work == "":
				return cli.Usagef("--work is required")
			case !ok:
				return cli.Usagef("--model %q: want tiny-bert, tiny-roberta, tiny-deberta or bert-base", name)
			case pairs < 1 || parity < 0 || parity > pairs:
				return cli.Usagef("--pairs must be positive and --parity within 0..--pairs")
			}
			res, err := checkNLI(ctx, filepath.Join(work, "nli-"+name), name, e, pairs, parity)
			return emitComparison(res, err, "nli: the backend's probabilities differ from the go backend's")
		},
	}
}

// nliWords are the synthetic pairs' words (ours, medical-sounding; a random snapshot's verdicts
// mean nothing, only the lengths and the plumbing matter).
var nliWords = strings.Fields("patients were randomized to placebo or drug and the primary outcome was pain at week twelve " +
	"adverse events included nausea headache and dizziness in both arms the trial enrolled adults with chronic disease " +
	"mean age years dose mg daily follow up months significant reduction compared with control group")

// nliPairs returns n seeded pairs: premises of 40 to 440 characters, hypotheses of 20 to 80 (the
// tiny snapshots' test tokenizers give about one token per character, BERT-base's ~1.2 per word).
func nliPairs(n int) []judge.Pair {
	rng := rand.New(rand.NewPCG(7, 8))
	text := func(chars int) string {
		var b strings.Builder
		for b.Len() < chars {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(nliWords[rng.IntN(len(nliWords))])
		}
		return b.String()
	}
	out := make([]judge.Pair, n)
	for i := range out {
		out[i] = judge.Pair{Premise: text(40+rng.IntN(401)) + ".", Hypothesis: text(20+rng.IntN(61)) + "."}
	}
	return out
}

// checkNLI writes the snapshot (when absent), compares and times, and returns the result row.
func checkNLI(ctx context.Context, dir, name string, e randsnap.Encoder, n, parity int) (map[string]any, error) {
	res := map[string]any{"step": "nli", "model": name, "pairs": n, "parity_pairs": parity, "tolerance": nliTol}
	_, backendName, err := model.Backend()
	if err != nil {
		return res, err
	}
	res["backend"] = backendName
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err != nil {
		fam, ok := family.Lookup(e.ModelType)
		if !ok {
			return res, fmt.Errorf("unknown model type %q", e.ModelType)
		}
		e.Prefix, e.Seed = fam.KeyPrefix, 1 // DType: float32
		e.Labels = []string{"contradiction", "entailment", "neutral"}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return res, err
		}
		if err := randsnap.WriteEncoder(dir, e); err != nil {
			return res, err
		}
	}
	open := func(b compute.Backend) (*nli.Judge, error) {
		return nli.New(ctx, nli.Options{Dir: dir, Threshold: 0.5, BatchSize: 16, Backend: b,
			Decomposer: judge.NewLexical(judge.LexicalOptions{})})
	}
	pairs := nliPairs(n)
	ok := true
	if parity > 0 {
		ref, err := compute.NewWithConfig(model.GoBackendConfig)
		if err != nil {
			return res, fmt.Errorf("go backend: %w", err)
		}
		jr, err := open(ref)
		if err != nil {
			return res, err
		}
		jd, err := open(nil)
		if err != nil {
			return res, err
		}
		want, err := jr.Probabilities(ctx, pairs[:parity])
		if err != nil {
			return res, fmt.Errorf("go backend: %w", err)
		}
		got, err := jd.Probabilities(ctx, pairs[:parity])
		if err != nil {
			return res, err
		}
		worst := 0.0
		for i := range want {
			worst = max(worst, math.Abs(got[i]-want[i]))
		}
		res["max_prob_diff"] = worst
		ok = worst <= nliTol
	}
	j, err := open(nil)
	if err != nil {
		return res, err
	}
	start := time.Now()
	if _, err := j.EntailsAll(ctx, pairs); err != nil {
		return res, err
	}
	secs := time.Since(start).Seconds()
	st := j.Stats()
	res["seconds"], res["pairs_per_sec"] = secs, float64(n)/cmp.Or(secs, 1e-9)
	res["computed"], res["batches"], res["graphs"], res["chunked"] = st.Computed, st.Batches, st.Graphs, st.Chunked
	res["ok"] = ok
	return res, nil
}
