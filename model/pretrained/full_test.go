package pretrained_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/export"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/internal/tensorio"
	"github.com/tracksum/tracksum/model/training"
)

// TestCausalLMFullFineTuning: lora.rank 0 on the random Llama snapshot (generative tracker), end to
// end: every base weight is trained and written to full/ under its Hugging Face key, infer runs on
// the checkpoint, and tracksum-export's snapshot holds exactly the trained weights (the base is
// float32, so nothing is rounded).
func TestCausalLMFullFineTuning(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model (~5 s)")
	}
	cfg, data, llm := setup(t)
	cfg.Tracker.Pretrained, cfg.Tracker.Head = llm, config.HeadGenerative
	cfg.Tracker.LoRA.Rank = 0
	loop(&cfg.Tracker.Train)
	cfg.Tracker.Train.MaxSteps, cfg.Tracker.Train.EvalEvery = 2, 2
	ck := filepath.Join(t.TempDir(), "tracker")
	trainTask(t, "tracker", cfg, data, ck)

	snap, err := snapshot.Open(llm)
	if err != nil {
		t.Fatal(err)
	}
	base, err := snap.Tensors(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	full, err := tensorio.ReadTensors(filepath.Join(ck, peft.FullDir, peft.FullWeights))
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != len(base) {
		t.Fatalf("full/ holds %d tensors, the base %d: want every base weight", len(full), len(base))
	}
	changed := 0
	for name, b := range base {
		f, ok := full[name]
		if !ok {
			t.Fatalf("full/ lacks base weight %s", name)
		}
		if !slices.Equal(flat(f), flat(b)) {
			changed++
		}
	}
	// Every tensor gets a gradient (the embeddings through the prompt's rows), so all move.
	if changed != len(base) {
		t.Errorf("%d of %d base weights changed after 2 steps of full fine-tuning, want all", changed, len(base))
	}

	out := filepath.Join(t.TempDir(), "pred.jsonl")
	if _, err := infer.Run(context.Background(), cfg, infer.Options{Tracker: ck, Input: data, Split: "test", Out: out, Log: testLog()}); err != nil {
		t.Fatal(err)
	}
	for _, p := range readPredictions(t, out) {
		for _, s := range p.Scores {
			if s < 0 || s > 1 {
				t.Fatalf("%s/%s: score %g outside [0, 1]", p.PMID, p.Aspect, s)
			}
		}
	}

	exported := filepath.Join(t.TempDir(), "export")
	if _, err := export.Export(context.Background(), export.Options{Checkpoint: ck, Out: exported}); err != nil {
		t.Fatal(err)
	}
	merged, err := tensorio.ReadTensors(filepath.Join(exported, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range full {
		if !slices.Equal(flat(merged[name]), flat(f)) {
			t.Errorf("export's %s differs from the trained full/ weight", name)
		}
	}

	// The summarizer pointed at this tracker checkpoint is refused as such, not as changed settings.
	cfg.Summarizer.Pretrained = llm
	loop(&cfg.Summarizer.Train)
	task, _ := training.LookupTask("summarizer")
	err = task.Train(context.Background(), cfg, training.Request{Data: data, Out: ck, Log: testLog()})
	if err == nil || !strings.Contains(err.Error(), "holds a pretrained tracker checkpoint, not a summarizer one") {
		t.Errorf("summarizer into a tracker checkpoint: err %v", err)
	}
}
