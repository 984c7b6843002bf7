package infer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
	"github.com/tracksum/tracksum/eval"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/ete"
	"github.com/tracksum/tracksum/model/pretrained"
	"github.com/tracksum/tracksum/model/stt"
)

func TestCheckMethod(t *testing.T) {
	for _, tc := range []struct {
		desc string
		o    Options
		want string // "" = accepted
	}{
		{"tts default", Options{Tracker: "T", Summarizer: "S"}, ""},
		{"tts named", Options{Method: MethodTTS, Tracker: "T"}, ""},
		{"tts without tracker", Options{Method: MethodTTS, Summarizer: "S"}, "needs --tracker"},
		{"tts with model", Options{Tracker: "T", Model: "M"}, "--model is the checkpoint of --method stt or ete"},
		{"stt model", Options{Method: MethodSTT, Model: "M"}, ""},
		{"stt parts", Options{Method: MethodSTT, Summarizer: "M/summarizer", Tracker: "M/tracker"}, ""},
		{"stt one part", Options{Method: MethodSTT, Tracker: "M/tracker"}, "needs --model STT_DIR"},
		{"stt nothing", Options{Method: MethodSTT}, "needs --model STT_DIR"},
		{"stt both forms", Options{Method: MethodSTT, Model: "M", Tracker: "T"}, "not both"},
		{"stt gold", Options{Method: MethodSTT, Summarizer: "S", Tracker: GoldTracker}, "checkpoint directories"},
		{"stt extractive", Options{Method: MethodSTT, Summarizer: ExtractiveSummarizer, Tracker: "T"}, "checkpoint directories"},
		{"ete model", Options{Method: MethodETE, Model: "M"}, ""},
		{"ete without model", Options{Method: MethodETE}, "--method ete needs --model"},
		{"ete with tracker", Options{Method: MethodETE, Model: "M", Tracker: "T"}, "neither --tracker"},
		{"llm", Options{Method: "prompt"}, ""},
		{"llm with model", Options{Method: "prompt", Model: "M"}, "leave out --tracker, --summarizer and --model"},
		{"unknown", Options{Method: "magic"}, `unknown method "magic"`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := CheckMethod(tc.o)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckMethod(%+v) = %v, want nil", tc.o, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckMethod(%+v) = %v, want %q", tc.o, err, tc.want)
			}
		})
	}
}

// TestCommandMethodUsage: a wrong combination is a usage error of the command (exit code 2),
// found before anything is read.
func TestCommandMethodUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--method", "ete", "--input", "x", "--out", "y"},
		{"--method", "stt", "--model", "m", "--tracker", "t", "--input", "x", "--out", "y"},
		{"--method", "tts", "--model", "m", "--tracker", "t", "--input", "x", "--out", "y"},
	} {
		cmd := Command()
		if err := cmd.Flags.Parse(args); err != nil {
			t.Fatal(err)
		}
		err := cmd.Run(context.Background(), cmd.Flags.Args())
		if !errors.Is(err, cli.ErrUsage) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}

// TestRunVariants trains SUM-THEN-TRACK and END-TO-END for a few steps on the synthetic sample
// (tiny profile), runs them through Run like tracksum-infer --method stt|ete, and scores the
// predictions with eval: the same records as Track-then-Sum's.
func TestRunVariants(t *testing.T) {
	ctx := context.Background()
	cfg, err := config.Load(viper.New(), "../configs/tiny.yaml", pflag.NewFlagSet("t", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prepare.SampleSize = 40
	cfg.Summarizer.Train.MaxSteps, cfg.Summarizer.Train.EvalEvery, cfg.Summarizer.DevDecodeLimit = 3, 3, 2
	cfg.Tracker.Train.MaxSteps = 3
	dir, data := t.TempDir(), preparetest.Dir(t, cfg)
	sttDir, eteDir := filepath.Join(dir, "stt"), filepath.Join(dir, "ete")
	if _, _, err := stt.Train(ctx, cfg, data, sttDir, stt.TrainOptions{Log: discard{}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ete.Train(ctx, cfg, data, eteDir, ete.TrainOptions{Log: discard{}}); err != nil {
		t.Fatal(err)
	}
	refs := filepath.Join(dir, "refs.jsonl")
	for _, tc := range []struct {
		desc string
		o    Options
	}{
		{"stt", Options{Method: MethodSTT, Model: sttDir}},
		{"stt parts", Options{Method: MethodSTT, Summarizer: filepath.Join(sttDir, checkpoint.VariantSummarizerDir),
			Tracker: filepath.Join(sttDir, checkpoint.VariantTrackerDir)}},
		{"ete", Options{Method: MethodETE, Model: eteDir}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			o := tc.o
			o.Input, o.Split, o.Out, o.Refs, o.Log = data, dataset.SplitTest, filepath.Join(dir, tc.desc+".jsonl"), refs, discard{}
			st, err := Run(ctx, cfg, o)
			if err != nil {
				t.Fatal(err)
			}
			preds, err := dataset.ReadRecordsFile(o.Out)
			if err != nil {
				t.Fatal(err)
			}
			if len(preds) != st.Predictions || st.Predictions == 0 {
				t.Fatalf("%d predictions read, %d written", len(preds), st.Predictions)
			}
			for _, p := range preds {
				if dataset.IsUnknownSummary(p.Summary) && len(p.Indexes) > 0 {
					t.Errorf("prediction %s/%s: a negative summary with citations %v", p.PMID, p.Aspect, p.Indexes)
				}
			}
			ec := cfg.Eval
			ec.Bootstrap.Resamples = 50
			out, err := eval.Evaluation(ctx, o.Out, refs, ec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Results) != len(preds) {
				t.Errorf("eval scored %d of %d predictions", len(out.Results), len(preds))
			}
		})
	}
	// The other variant's checkpoint, --full-context, and a plain summarizer are refused.
	for _, tc := range []struct {
		desc string
		o    Options
		full bool
	}{
		{"ete checkpoint as stt", Options{Method: MethodSTT, Model: eteDir}, false},
		{"stt checkpoint as ete", Options{Method: MethodETE, Model: sttDir}, false},
		{"full context", Options{Method: MethodETE, Model: eteDir}, true},
	} {
		c := *cfg
		c.Infer.FullContext = tc.full
		o := tc.o
		o.Input, o.Split, o.Out, o.Log = data, dataset.SplitTest, filepath.Join(dir, "refused.jsonl"), discard{}
		_, err := Run(ctx, &c, o)
		if err == nil || (!tc.full && !errors.Is(err, checkpoint.ErrCheckpoint)) {
			t.Errorf("%s: err = %v", tc.desc, err)
		}
		if _, err := os.Stat(o.Out); err == nil {
			t.Errorf("%s: an output was written", tc.desc)
		}
	}
}

// TestInferFlagAllocationCaps: issue 22 defect 11's rough edge. NaN passes every comparison, so
// --sample-temperature NaN, --top-p NaN and --length-penalty NaN were accepted, as were
// --max-length -5 and --beam-size 0: each is now a one-line usage error naming the flag. (The
// caps by the model's context and memory are model/pretrained's TestInferFlagAllocationCaps.)
func TestInferFlagAllocationCaps(t *testing.T) {
	base := []string{"--tracker", "gold", "--input", "x", "--out", "y"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sample-temperature", "NaN"}, "--sample-temperature NaN: want a finite number"},
		{[]string{"--top-p", "NaN"}, "--top-p NaN: want a finite number"},
		{[]string{"--top-p", "0"}, "--top-p 0: want a number in (0, 1]"},
		{[]string{"--length-penalty", "NaN"}, "--length-penalty NaN: want a finite number"},
		{[]string{"--min-length-ratio", "+Inf"}, "--min-length-ratio +Inf: want a finite number"},
		{[]string{"--max-length", "-5"}, "--max-length -5: want 1 or more"},
		{[]string{"--beam-size", "0"}, "--beam-size 0: want 1 or more"},
		{[]string{"--no-repeat-ngram", "-1"}, "--no-repeat-ngram -1: want 0 (off) or more"},
	} {
		cmd := Command()
		if err := cmd.Flags.Parse(append(slices.Clone(base), tc.args...)); err != nil {
			t.Fatal(err)
		}
		err := cmd.Run(context.Background(), cmd.Flags.Args())
		if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err = %v, want a one-line usage error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestSearchOverrides: an unset infer.decoding key keeps the checkpoint's value, a set one (from a
// flag, a profile, the environment or --set alike) replaces it.
func TestSearchOverrides(t *testing.T) {
	ckpt := decode.Options{BeamSize: 4, MaxLen: 60, LengthPenalty: 2, NoRepeatNgram: 4}
	beam, penalty, ngram := 1, 0.0, 0
	for _, tc := range []struct {
		desc string
		d    config.InferDecoding
		want decode.Options
	}{
		{"unset: the checkpoint's", config.InferDecoding{}, ckpt},
		{"greedy, no penalty, no blocking", config.InferDecoding{BeamSize: &beam, LengthPenalty: &penalty, NoRepeatNgram: &ngram},
			decode.Options{BeamSize: 1, MaxLen: 60, LengthPenalty: 0, NoRepeatNgram: 0}},
	} {
		if got := searchFlags(ckpt, tc.d); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.desc, got, tc.want)
		}
	}
}

// TestPretrainedDecodeSampling: a checkpoint that samples (summarizer.temperature from a
// generation_config.json with do_sample) keeps its top_k under --sample-temperature, and
// --sample-temperature 0 makes it search instead.
func TestPretrainedDecodeSampling(t *testing.T) {
	zero, hot, p := 0.0, 1.2, 0.5
	for _, tc := range []struct {
		desc string
		d    config.InferDecoding
		want pretrained.GenOptions
	}{
		{"the checkpoint's", config.InferDecoding{}, pretrained.GenOptions{Temperature: 0.6, TopP: 0.9, TopK: 50}},
		{"--sample-temperature 0 searches", config.InferDecoding{SampleTemperature: &zero}, pretrained.GenOptions{Temperature: 0, TopP: 0.9, TopK: 50}},
		{"--sample-temperature 1.2 --top-p 0.5", config.InferDecoding{SampleTemperature: &hot, TopP: &p}, pretrained.GenOptions{Temperature: 1.2, TopP: 0.5, TopK: 50}},
	} {
		s := &pretrained.Summarizer{Gen: pretrained.GenOptions{Temperature: 0.6, TopP: 0.9, TopK: 50, BeamSize: 1, MaxNewTokens: 9}}
		pretrainedDecode(s, tc.d)
		if s.Gen.Temperature != tc.want.Temperature || s.Gen.TopP != tc.want.TopP || s.Gen.TopK != tc.want.TopK {
			t.Errorf("%s: temperature %g top_p %g top_k %d, want %+v", tc.desc, s.Gen.Temperature, s.Gen.TopP, s.Gen.TopK, tc.want)
		}
	}
}
