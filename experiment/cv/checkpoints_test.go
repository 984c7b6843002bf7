package cv

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/internal/testlog"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/export"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/ete"
	"github.com/tracksum/tracksum/model/pretrained"
	"github.com/tracksum/tracksum/model/pretrained/pretrainedtest"
	"github.com/tracksum/tracksum/model/stt"
	"github.com/tracksum/tracksum/serve"
	"github.com/tracksum/tracksum/serve/servetest"
)

func TestMain(m *testing.M) {
	code := servetest.Main(m)
	pretrainedtest.Cleanup()
	os.Exit(code)
}

// kindCheckpoint is one kind of checkpoint of TestCheckpointKinds.
type kindCheckpoint struct {
	name string // checkpoint.Manifest.Name()
	what string // what it is, in messages, when the name does not say it (a pretrained tracker's head)
	dir  string
	// damage is a file (relative to dir) whose flipped byte Open must refuse.
	damage string
}

// TestCheckpointKinds: every command path that loads checkpoints (infer's --tracker, --summarizer
// and --method stt|ete --model, serve's --summarizer and --tracker, export's --checkpoint, train
// --final --folds-from) opens each kind of checkpoint it takes, and refuses every other kind with
// a message naming the kind found and the flag; a checkpoint with a flipped byte is refused naming
// the file; a checkpoint of an older release (no checkpoint.json) opens with a warning, and once
// migrated (tracksum-train --migrate) opens verified. The checkpoints are tiny: servetest's tracker
// and summarizer, a 3-fold tracker cross-validation, SUM-THEN-TRACK and END-TO-END, a pretrained
// tracker of each head (encoder_cls on a random BERT; lm_cls and generative on a random Llama), and
// a pretrained (LoRA) summarizer, SUM-THEN-TRACK and END-TO-END on that Llama, each trained for a
// few steps.
func TestCheckpointKinds(t *testing.T) {
	if testing.Short() {
		t.Skip("trains tiny checkpoints of every kind (~1 min)")
	}
	ctx := context.Background()
	summ, trk, data := servetest.Checkpoints(t)
	cfg, _, cvDir := tinyCV(t)
	cfg.Prepare.SampleSize = 24
	cfg.Summarizer.Train.MaxSteps, cfg.Summarizer.Train.EvalEvery, cfg.Summarizer.DevDecodeLimit = 2, 2, 2
	cfg.Tracker.Train.MaxSteps, cfg.Tracker.Train.EvalEvery = 2, 2
	dir := t.TempDir()
	sttDir, eteDir := filepath.Join(dir, "stt"), filepath.Join(dir, "ete")
	if _, _, err := stt.Train(ctx, cfg, data, sttDir, stt.TrainOptions{Log: testlog.Writer(t)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ete.Train(ctx, cfg, data, eteDir, ete.TrainOptions{Log: testlog.Writer(t)}); err != nil {
		t.Fatal(err)
	}
	bert, ptDir := filepath.Join(dir, "bert"), filepath.Join(dir, "pretrained-tracker")
	if err := randsnap.WriteEncoder(bert, randsnap.Encoder{Vocab: 120, Hidden: 16, Layers: 1, Heads: 2, Intermediate: 32,
		Prefix: "bert.", Pooler: true, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	pc := *cfg
	pc.Tracker.Pretrained, pc.Tracker.Head = bert, config.HeadAuto
	pc.Tracker.LoRA.Rank, pc.Tracker.LoRA.Alpha, pc.Tracker.LoRA.TargetModules = 4, 8, []string{"q_proj", "v_proj"}
	pc.Tracker.Train.BatchSize, pc.Tracker.Train.WarmupSteps, pc.Tracker.Train.GradAccumulation = 4, 0, 1
	if err := pretrained.TrainTracker(ctx, &pc, data, ptDir, pretrained.TrainOptions{Log: testlog.Writer(t)}); err != nil {
		t.Fatal(err)
	}
	// The causal-LM backbone's kinds, on pretrainedtest's random Llama.
	lcfg, ldata, llm := pretrainedtest.Setup(t)
	lmTracker := func(head string) string {
		c := *lcfg
		c.Tracker.Pretrained, c.Tracker.Head = llm, head
		c.Tracker.LoRA.Rank, c.Tracker.LoRA.Alpha, c.Tracker.LoRA.TargetModules = 4, 8, []string{"q_proj", "v_proj"}
		pretrainedtest.Loop(&c.Tracker.Train)
		out := filepath.Join(dir, "pretrained-tracker-"+head)
		if err := pretrained.TrainTracker(ctx, &c, ldata, out, pretrained.TrainOptions{Log: testlog.Writer(t)}); err != nil {
			t.Fatalf("%s tracker: %v", head, err)
		}
		return out
	}
	lmCLS, generative := lmTracker(config.HeadLMCLS), lmTracker(config.HeadGenerative)
	scfg := *lcfg
	pretrainedtest.SummarizerConfig(&scfg, llm)
	scfg.Tracker.Pretrained, scfg.Tracker.Head = llm, config.HeadLMCLS
	scfg.Tracker.LoRA = scfg.Summarizer.LoRA
	pretrainedtest.Loop(&scfg.Tracker.Train)
	ptSTT, ptETE := filepath.Join(dir, "pretrained-stt"), filepath.Join(dir, "pretrained-ete")
	if err := pretrained.TrainSumThenTrack(ctx, &scfg, ldata, ptSTT, pretrained.VariantOptions{Log: testlog.Writer(t)}); err != nil {
		t.Fatalf("pretrained sum_then_track: %v", err)
	}
	if err := pretrained.TrainEndToEnd(ctx, &scfg, ldata, ptETE, pretrained.VariantOptions{Log: testlog.Writer(t)}); err != nil {
		t.Fatalf("pretrained end_to_end: %v", err)
	}

	kinds := []kindCheckpoint{
		{"tracker", "", trk, "best/model.safetensors"},
		{"summarizer", "", summ, "summarizer.json"},
		{"sum_then_track", "", sttDir, "tracker/best/model.safetensors"},
		{"sum_then_track (its summarizer part)", "", filepath.Join(sttDir, checkpoint.VariantSummarizerDir), "tokenizer.json"},
		{"end_to_end", "", eteDir, "best/model.safetensors"},
		{"pretrained tracker", "pretrained tracker (encoder_cls, BERT)", ptDir, "adapter/adapter_model.safetensors"},
		{"pretrained tracker", "pretrained tracker (lm_cls, Llama)", lmCLS, "adapter/adapter_model.safetensors"},
		{"pretrained tracker", "pretrained tracker (generative, Llama)", generative, "adapter/adapter_model.safetensors"},
		{"pretrained summarizer", "", pretrainedtest.Summarizer(t), "adapter/adapter_model.safetensors"},
		{"pretrained sum_then_track", "", ptSTT, "tracker/adapter/adapter_model.safetensors"},
		{"pretrained end_to_end", "", ptETE, "adapter/adapter_model.safetensors"},
		{"tracker cross-validation (fold ensemble)", "", cvDir, "fold-1/best/model.safetensors"},
	}
	for i, k := range kinds {
		if kinds[i].what == "" {
			kinds[i].what = k.name
		}
		m, err := checkpoint.Open(t.Context(), k.dir)
		if err != nil || m.Migrated || m.Name() != k.name {
			t.Fatalf("%s: Open: %v, %v", k.dir, m, err)
		}
	}

	run := func(o infer.Options, log *bytes.Buffer) error {
		o.Input, o.Split, o.Out, o.Log = data, dataset.SplitTest, filepath.Join(t.TempDir(), "pred.jsonl"), log
		_, err := infer.Run(ctx, &pc, o)
		return err
	}
	loaders := []struct {
		desc, flag string
		takes      []string // the kinds it opens
		load       func(dir string, log *bytes.Buffer) error
	}{
		{"infer --tracker", "--tracker", []string{"tracker", "pretrained tracker", "tracker cross-validation (fold ensemble)"},
			func(d string, log *bytes.Buffer) error { return run(infer.Options{Tracker: d}, log) }},
		{"infer --summarizer", "--summarizer", []string{"summarizer", "pretrained summarizer"},
			func(d string, log *bytes.Buffer) error { return run(infer.Options{Tracker: trk, Summarizer: d}, log) }},
		{"infer --method stt", "--model", []string{"sum_then_track", "pretrained sum_then_track"},
			func(d string, log *bytes.Buffer) error {
				return run(infer.Options{Method: infer.MethodSTT, Model: d}, log)
			}},
		{"infer --method ete", "--model", []string{"end_to_end", "pretrained end_to_end"},
			func(d string, log *bytes.Buffer) error {
				return run(infer.Options{Method: infer.MethodETE, Model: d}, log)
			}},
		{"serve --summarizer", "--summarizer", []string{"summarizer", "pretrained summarizer"},
			func(d string, _ *bytes.Buffer) error { _, err := serve.LoadTrackSum(d, "", ""); return err }},
		{"serve --tracker", "--tracker", []string{"tracker", "pretrained tracker", "tracker cross-validation (fold ensemble)"},
			func(d string, _ *bytes.Buffer) error { _, err := serve.LoadTrackSum(summ, d, ""); return err }},
		{"export --checkpoint", "--checkpoint", []string{"pretrained tracker", "pretrained summarizer", "pretrained end_to_end"},
			func(d string, log *bytes.Buffer) error {
				_, err := export.Export(ctx, export.Options{Checkpoint: d, Out: filepath.Join(t.TempDir(), "hf"), Log: log})
				return err
			}},
		// Past the kind check, Final refuses the missing prepared directory: the ensemble is taken.
		{"train --final --folds-from", "--folds-from", []string{"tracker cross-validation (fold ensemble)"},
			func(d string, log *bytes.Buffer) error {
				_, _, err := Final(ctx, cfg, FinalOptions{Data: filepath.Join(t.TempDir(), "none"), Out: filepath.Join(t.TempDir(), "final"), CV: d, Log: log})
				if err != nil && !errors.Is(err, checkpoint.ErrCheckpoint) {
					return nil
				}
				return err
			}},
	}
	t.Run("kinds", func(t *testing.T) {
		for _, l := range loaders {
			for _, k := range kinds {
				err := l.load(k.dir, &bytes.Buffer{})
				takes := slices.Contains(l.takes, k.name)
				switch {
				case takes && err != nil:
					t.Errorf("%s %s: %v", l.desc, k.what, err)
				case !takes && (!errors.Is(err, checkpoint.ErrCheckpoint) || !strings.Contains(err.Error(), " "+k.name+" checkpoint; ") ||
					!strings.Contains(err.Error(), l.flag+" wants")):
					t.Errorf("%s %s: err = %v, want ErrCheckpoint naming %q and %s", l.desc, k.what, err, k.name, l.flag)
				}
			}
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		for _, k := range kinds {
			path := filepath.Join(k.dir, filepath.FromSlash(k.damage))
			restore := editFile(t, path, func(b []byte) []byte { b = slices.Clone(b); b[len(b)/2] ^= 0x10; return b })
			for _, l := range loaders {
				if !slices.Contains(l.takes, k.name) {
					continue
				}
				err := l.load(k.dir, &bytes.Buffer{})
				if !errors.Is(err, checkpoint.ErrCheckpoint) || !strings.Contains(err.Error(), path+" has sha256") || strings.Contains(err.Error(), "\n") {
					t.Errorf("%s of %s with a flipped byte in %s: err = %v", l.desc, k.what, k.damage, err)
				}
			}
			restore()
		}
	})
	t.Run("migrated", func(t *testing.T) {
		for _, k := range kinds {
			unseal(t, k.dir)
			for _, l := range loaders {
				if !slices.Contains(l.takes, k.name) || strings.HasPrefix(l.desc, "serve") {
					continue
				}
				var log bytes.Buffer
				if err := l.load(k.dir, &log); err != nil || !strings.Contains(log.String(), "has no checkpoint.json") {
					t.Errorf("%s of %s without manifests: %v; log %q", l.desc, k.what, err, log.String())
				}
			}
			if _, wrote, err := checkpoint.Migrate(t.Context(), k.dir); err != nil || !wrote {
				t.Fatalf("migrating %s: %v, %v", k.dir, wrote, err)
			}
			for _, l := range loaders {
				if !slices.Contains(l.takes, k.name) {
					continue
				}
				var log bytes.Buffer
				if err := l.load(k.dir, &log); err != nil || strings.Contains(log.String(), "checkpoint.json") {
					t.Errorf("%s of migrated %s: %v; log %q", l.desc, k.what, err, log.String())
				}
			}
		}
	})
}

// unseal removes every manifest under dir: the checkpoint as an older release wrote it.
func unseal(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Name() == checkpoint.ManifestFile {
			err = os.Remove(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
