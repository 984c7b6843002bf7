package decoder

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/quant"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/tensorio"
)

// TestNF4SnapshotLogits: a snapshot in bitsandbytes' 4-bit layout (randsnap --quantize nf4)
// loads dequantized, and its logits equal those of the same snapshot whose projections were
// replaced, in float32, by their NF4 quantization dequantized (within 1e-5).
func TestNF4SnapshotLogits(t *testing.T) {
	d := randsnap.Decoder{ModelType: "llama", Vocab: 64, Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2,
		Intermediate: 64, DType: dtypes.Float32, Seed: 5, Std: 0.2}
	plain, packed := t.TempDir(), t.TempDir()
	if err := randsnap.WriteDecoder(plain, d); err != nil {
		t.Fatal(err)
	}
	d.Quantize = "nf4"
	if err := randsnap.WriteDecoder(packed, d); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(plain, snapshot.WeightsFile)
	ts, err := tensorio.ReadTensors(path)
	if err != nil {
		t.Fatal(err)
	}
	quantized := 0
	for name, w := range ts {
		if !strings.HasPrefix(name, "model.layers.") || !strings.HasSuffix(name, "_proj.weight") {
			continue
		}
		q, err := quant.QuantizeNF4(tensors.MustCopyFlatData[float32](w), w.Shape().Dimensions, quant.BlockSize, true)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]float32, q.Len())
		if err := q.Dequantize(vals); err != nil {
			t.Fatal(err)
		}
		ts[name] = tensors.FromFlatDataAndDimensions(vals, w.Shape().Dimensions...)
		quantized++
	}
	if quantized != 2*7 {
		t.Fatalf("%d projections quantized, want 14", quantized)
	}
	if err := tensorio.WriteTensors(path, ts); err != nil {
		t.Fatal(err)
	}
	tokens := tensors.FromFlatDataAndDimensions([]int32{5, 9, 3, 17, 40, 2, 8, 11}, 2, 4)
	mask := tensors.FromFlatDataAndDimensions([]int32{1, 1, 1, 1, 1, 1, 1, 0}, 2, 4)
	var logits [2][]float32
	for i, dir := range []string{plain, packed} {
		store := gomlxmodel.NewStore()
		m, err := Load(context.Background(), openSnap(t, dir), store, LoRA{Rank: 2, Alpha: 2}, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, l := forward(t, store, m, tokens, mask)
		logits[i] = flat32(l)
	}
	worst := 0.0
	for i := range logits[0] {
		worst = max(worst, math.Abs(float64(logits[0][i]-logits[1][i])))
	}
	if worst > 1e-5 {
		t.Errorf("max |logit difference| %.3g > 1e-5", worst)
	}
}
