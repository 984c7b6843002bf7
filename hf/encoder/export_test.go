package encoder

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/export"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// TestExportReloadsToSameLogits: a checkpoint of the golden LoRA model (PEFT adapter on all 13
// linear layers + the classifier as modules_to_save), exported by tracksum-export as a merged
// BertForSequenceClassification snapshot, loads back (rank 0, its own classifier) to the same
// logits as the LoRA model, and both match the reference.
func TestExportReloadsToSameLogits(t *testing.T) {
	g := readGolden(t)
	base, err := filepath.Abs(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	store := gomlxmodel.NewStore()
	lora := LoRA{Rank: g.LoRA.Rank, Alpha: g.LoRA.Alpha, RSLoRA: g.LoRA.RSLoRA, TargetModules: g.LoRA.Targets}
	m, err := Load(context.Background(), s, store, lora, 0)
	if err != nil {
		t.Fatal(err)
	}
	loadAdapter(t, m)
	setHead(t, m, g)
	want := run(t, m, store, g, nil)

	root := t.TempDir()
	ck, out := filepath.Join(root, "ck"), filepath.Join(root, "out")
	if _, err := peft.WriteBaseRef(context.Background(), ck, s); err != nil {
		t.Fatal(err)
	}
	ts := map[string]*tensors.Tensor{}
	for key, v := range m.LoRAVariables() {
		ts[key] = v.MustValue()
	}
	for key, v := range m.HeadVariables() {
		ts[peft.Prefix+key] = v.MustValue()
	}
	cfg := lora
	a := &peft.Adapter{Config: peft.NewConfig(cfg, peft.TaskSeqCls, base, []string{"classifier"}), Tensors: ts}
	if err := peft.Write(filepath.Join(ck, peft.AdapterDir), a); err != nil {
		t.Fatal(err)
	}
	if _, err := export.Export(context.Background(), export.Options{Checkpoint: ck, Out: out}); err != nil {
		t.Fatal(err)
	}
	es, err := snapshot.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	estore := gomlxmodel.NewStore()
	em, err := Load(context.Background(), es, estore, LoRA{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := em.AddClassifier(2, 0); err == nil || !strings.Contains(err.Error(), "classifier.weight has 1 labels, want 2") {
		t.Fatalf("AddClassifier(2) on a 1-label export: %v", err)
	}
	if err := em.AddClassifier(1, 0); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tensors.MustCopyFlatData[float32](em.HeadVariables()["classifier.weight"].MustValue()), g.ClassifierWeight) {
		t.Fatal("the export's classifier was not loaded")
	}
	got := run(t, em, estore, g, nil)
	compare(t, "exported logits vs reference", got.logits, g.LoRA.Logits)
	compare(t, "exported hidden state vs reference", got.hidden, g.LoRA.Hidden)
	worst := 0.0
	for i := range got.logits {
		worst = math.Max(worst, math.Abs(float64(got.logits[i]-want.logits[i])))
	}
	t.Logf("exported vs LoRA logits (both Go): max diff %.3g", worst)
	if worst > 1e-5 {
		t.Errorf("exported and LoRA logits differ by %g", worst)
	}
}
