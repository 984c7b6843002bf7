package encoder

import (
	"context"
	"os"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model"
)

// benchShapes are the random checkpoints of the benchmarks, chosen with TRACKSUM_BENCH_BERT:
// "small" (default, for a quick look) or "base" (BERT-base / PubMedBERT: 110M parameters).
var benchShapes = map[string]randsnap.Encoder{
	"small": {Vocab: 1000, Hidden: 256, Layers: 4, Heads: 4, Intermediate: 1024, MaxPositions: 128, Prefix: "bert.", Pooler: true, Seed: 1},
	"base":  {Vocab: 30522, Hidden: 768, Layers: 12, Heads: 12, Intermediate: 3072, MaxPositions: 512, Prefix: "bert.", Seed: 1},
}

// BenchmarkForward and BenchmarkLoRAStep: batch 8 x 64 tokens on a random checkpoint; the step is
// forward, the classifier's BCE loss and the gradients of the adapters (rank 16 on every linear
// layer) and the head, without the optimizer update. tokens/s counts real and padded tokens.
func BenchmarkForward(b *testing.B)  { benchEncoder(b, benchShape(b), 8, 64, false) }
func BenchmarkLoRAStep(b *testing.B) { benchEncoder(b, benchShape(b), 8, 64, true) }

// BenchmarkDebertaForward: the forward pass of the nli judge's longest batches on tools/randsnap's
// tiny DeBERTa-v3-shaped NLI snapshot (hidden 64, 2 layers, 4 heads, 256 position buckets): 16 rows
// of 448 tokens, where the relative attention's c2p and p2c terms cost the most. Profile it with
//
//	go test -run '^$' -bench DebertaForward -benchtime 3x -cpuprofile /tmp/deb.prof ./hf/encoder/
func BenchmarkDebertaForward(b *testing.B) {
	e := randsnap.Encoder{ModelType: "deberta-v2", Prefix: "deberta.", Vocab: 300, Hidden: 64, Layers: 2, Heads: 4,
		Intermediate: 128, Seed: 1}
	benchEncoder(b, e, 16, 448, false)
}

func benchShape(b *testing.B) randsnap.Encoder {
	shape := os.Getenv("TRACKSUM_BENCH_BERT")
	if shape == "" {
		shape = "small"
	}
	e, ok := benchShapes[shape]
	if !ok {
		b.Fatalf("TRACKSUM_BENCH_BERT=%q: want small or base", shape)
	}
	return e
}

// benchEncoder times batch x seq tokens through the random checkpoint e: the forward pass, or with
// step the LoRA gradients.
func benchEncoder(b *testing.B, e randsnap.Encoder, batch, seq int, step bool) {
	dir := b.TempDir()
	if err := randsnap.WriteEncoder(dir, e); err != nil {
		b.Fatal(err)
	}
	s, err := snapshot.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	store := gomlxmodel.NewStore()
	lora := LoRA{Rank: 16, Alpha: 16, RSLoRA: true}
	if e.ModelType == "deberta-v2" {
		lora = LoRA{} // DeBERTa is inference only
	}
	m, err := Load(context.Background(), s, store, lora, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.AddClassifier(1, 1); err != nil {
		b.Fatal(err)
	}
	ids := make([]int32, batch*seq)
	types := make([]int32, batch*seq)
	mask := make([]float32, batch*seq)
	for i := range ids {
		ids[i] = int32(5 + i%(e.Vocab-5))
		mask[i] = 1
		if i%seq >= seq/2 {
			types[i] = 1
		}
	}
	labels := make([]float32, batch)
	backend, _, err := model.Backend()
	if err != nil {
		b.Fatal(err)
	}
	exec, err := gomlxmodel.NewExec(backend, store, func(scope *gomlxmodel.Scope, ids, types, mask, labels *Node) []*Node {
		hidden := m.Hidden(scope, ids, types, mask)
		logits := Squeeze(m.Classify(scope, m.Pooled(scope, hidden)), 1)
		if !step {
			return []*Node{logits}
		}
		loss := BCEWithLogits(logits, labels)
		var wrt []*Node
		for _, v := range m.LoRAVariables() {
			wrt = append(wrt, v.NodeValue(ids.Graph()))
		}
		for _, v := range m.HeadVariables() {
			wrt = append(wrt, v.NodeValue(ids.Graph()))
		}
		return append([]*Node{loss}, Gradient(loss, wrt...)...)
	})
	if err != nil {
		b.Fatal(err)
	}
	args := []any{tensors.FromFlatDataAndDimensions(ids, batch, seq), tensors.FromFlatDataAndDimensions(types, batch, seq),
		tensors.FromFlatDataAndDimensions(mask, batch, seq), tensors.FromFlatDataAndDimensions(labels, batch)}
	if _, err := exec.Exec(args...); err != nil { // compile outside the timing
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := exec.Exec(args...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch*seq)/b.Elapsed().Seconds(), "tokens/s")
}
