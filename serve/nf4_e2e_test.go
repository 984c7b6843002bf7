package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/export"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/pretrained"
	"github.com/tracksum/tracksum/model/pretrained/pretrainedtest"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/serve"
)

// TestNF4CheckpointEndToEnd is issue 32's "Checked by" on the tiny snapshots: QLoRA trackers
// (generative and lm_cls heads) on a bitsandbytes 4-bit snapshot (randsnap --quantize nf4) and a
// QLoRA summarizer on a plain one quantized when loaded (--quantize nf4), each trained 2 steps
// (tracksum-train --max-steps 2); their manifests record the quantization; tracksum-infer runs the
// generative tracker and the summarizer together; tracksum-serve --model serves the summarizer;
// tracksum-export writes each as a plain snapshot; and the generative tracker's adapters opened on
// the unquantized snapshot (export --base) are refused in one line.
func TestNF4CheckpointEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("fine-tunes two tiny models (-short)")
	}
	cfg, data, llm := pretrainedtest.Setup(t)
	nf4 := pretrainedtest.NF4Snapshot(t)
	root := t.TempDir()
	trk, sum := filepath.Join(root, "tracker"), filepath.Join(root, "summarizer")

	cfg.Tracker.Pretrained, cfg.Tracker.Head = nf4, config.HeadGenerative
	cfg.Tracker.LoRA.Rank, cfg.Tracker.LoRA.Alpha = 4, 8
	cfg.Tracker.LoRA.TargetModules = []string{"q_proj", "v_proj", "down_proj"}
	pretrainedtest.Loop(&cfg.Tracker.Train)
	cfg.Tracker.Train.MaxSteps, cfg.Tracker.Train.EvalEvery = 2, 2
	cfg.Tracker.Train.Quantization = config.QuantizationNF4
	if err := pretrained.TrainTracker(context.Background(), cfg, data, trk, pretrained.TrainOptions{Log: pretrainedtest.Log()}); err != nil {
		t.Fatal(err)
	}
	// The lm_cls head on the same 4-bit base.
	cls := filepath.Join(root, "tracker-lm_cls")
	cfg.Tracker.Head = config.HeadLMCLS
	if err := pretrained.TrainTracker(context.Background(), cfg, data, cls, pretrained.TrainOptions{Log: pretrainedtest.Log()}); err != nil {
		t.Fatal(err)
	}
	tr, err := pretrained.LoadTracker(context.Background(), cls)
	if err != nil {
		t.Fatal(err)
	}
	if probs, err := tr.ScoreBatch([]tracker.Request{{Doc: []string{"We studied drug X.", "Pain decreased."}, Aspect: "a"}}); err != nil || len(probs) != 1 || len(probs[0]) != 2 {
		t.Fatalf("lm_cls tracker on the nf4 base: %v, %v", probs, err)
	}
	pretrainedtest.SummarizerConfig(cfg, llm)
	cfg.Summarizer.Train.MaxSteps, cfg.Summarizer.Train.EvalEvery = 2, 2
	cfg.Summarizer.Train.Quantization = config.QuantizationNF4
	if err := pretrained.TrainSummarizer(context.Background(), cfg, data, sum, pretrained.TrainOptions{Log: pretrainedtest.Log()}); err != nil {
		t.Fatal(err)
	}
	for _, ck := range []string{trk, cls, sum} {
		m, err := checkpoint.Open(context.Background(), ck)
		if err != nil {
			t.Fatal(err)
		}
		if m.Backbone.Quantization != config.QuantizationNF4 {
			t.Errorf("%s: checkpoint.json's backbone quantization %q, want nf4", filepath.Base(ck), m.Backbone.Quantization)
		}
	}

	// tracksum-infer --tracker TRK --summarizer SUM
	out := filepath.Join(root, "pred.jsonl")
	if _, err := infer.Run(context.Background(), cfg, infer.Options{Tracker: trk, Summarizer: sum, Input: data, Split: "test", Out: out, Log: pretrainedtest.Log()}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || strings.Count(string(b), "\n") == 0 {
		t.Fatalf("predictions: %d bytes, err %v", len(b), err)
	}

	// tracksum-serve --model SUM: one chat completion.
	mode, dir, err := serve.ChooseMode("", infer.Options{Model: sum})
	if err != nil || mode != serve.ModeChat || dir != sum {
		t.Fatalf("serve --model: mode %q dir %q err %v, want chat on %s", mode, dir, err, sum)
	}
	scfg := config.Default()
	b, err := serve.LoadChat(context.Background(), &scfg, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(b, serve.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	if resp, raw := post(t, hs.URL+"/v1", chatBody("", "Pain decreased with drug X.", `,"max_tokens":4`)); resp.StatusCode != http.StatusOK {
		t.Fatalf("chat completion: status %d: %s", resp.StatusCode, raw)
	}

	// tracksum-export of each: a plain snapshot, its provenance saying nf4.
	for _, ck := range []string{trk, cls, sum} {
		dst := filepath.Join(root, "export-"+filepath.Base(ck))
		prov, err := export.Export(context.Background(), export.Options{Checkpoint: ck, Out: dst})
		if err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		if s.Quant != nil || prov.Quantization != config.QuantizationNF4 {
			t.Errorf("export of %s: quantization_config %v, provenance quantization %q; want a plain snapshot from nf4", filepath.Base(ck), s.Quant, prov.Quantization)
		}
		var p map[string]any
		if b, err := os.ReadFile(filepath.Join(dst, export.ProvenanceFile)); err != nil || json.Unmarshal(b, &p) != nil || p["quantization"] != "nf4" {
			t.Errorf("%s: %v (err %v), want quantization nf4", export.ProvenanceFile, p, err)
		}
	}
	_, err = export.Export(context.Background(), export.Options{Checkpoint: trk, Out: filepath.Join(root, "refused"), Base: llm})
	if want := "is an unquantized snapshot, the checkpoint was trained on a bitsandbytes nf4 (4-bit) snapshot"; err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("export --base of the unquantized snapshot: err %v, want one line with %q", err, want)
	}
}
