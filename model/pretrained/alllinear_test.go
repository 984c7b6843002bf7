package pretrained_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/model/pretrained"
)

// Issue 32 item 6: a Phi-3 base trains a LoRA step with the default target_modules (all-linear),
// which resolve to its fused projections; the default used to be Llama's seven names, refused with
// "lora target module q_proj is not a phi3 layer". PEFT's adapter_config.json and pretrained.json
// record the resolved names, as PEFT writes target_modules after resolving all-linear.
func TestPhi3TrainsWithDefaultTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("slow end-to-end test: runs in make test-full")
	}
	cfg, data, _ := setup(t)
	snap := filepath.Join(t.TempDir(), "phi3")
	// randsnap's byte-level tokenizer: its prompts need the longer max_seq_len.
	if err := randsnap.WriteDecoder(snap, randsnap.Decoder{ModelType: "phi3", Vocab: 300, Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 32, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	cfg.Tracker.Pretrained, cfg.Tracker.Head, cfg.Tracker.MaxSeqLen = snap, config.HeadGenerative, 512
	cfg.Tracker.LoRA = config.DefaultLoRA()
	cfg.Tracker.LoRA.Rank, cfg.Tracker.LoRA.Alpha = 4, 8
	loop(&cfg.Tracker.Train)
	cfg.Tracker.Train.MaxSteps, cfg.Tracker.Train.EvalEvery = 1, 1
	ck := filepath.Join(t.TempDir(), "tracker")
	trainTask(t, "tracker", cfg, data, ck)

	want := []string{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}
	a, err := peft.Read(filepath.Join(ck, peft.AdapterDir))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Config.TargetModules, want) {
		t.Errorf("adapter_config.json target_modules %v, want %v", a.Config.TargetModules, want)
	}
	meta, err := pretrained.ReadMeta(ck)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(meta.LoRA.TargetModules, want) {
		t.Errorf("pretrained.json target_modules %v, want %v", meta.LoRA.TargetModules, want)
	}
	// 1 layer x 4 modules x {A, B}.
	checkAdapter(t, ck, 8)
}
