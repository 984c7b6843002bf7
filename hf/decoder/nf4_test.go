package decoder

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
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

// logitsAndGrad runs m's logits and the gradient of its loss with respect to the first layer's
// q_proj adapter B (LoRA trains through the frozen, possibly packed, base).
func logitsAndGrad(t *testing.T, store *gomlxmodel.Store, m *Model) (logits, grad []float32) {
	t.Helper()
	tokens := tensors.FromFlatDataAndDimensions([]int32{5, 9, 3, 17, 40, 2, 8, 11}, 2, 4)
	mask := tensors.FromFlatDataAndDimensions([]int32{1, 1, 1, 1, 1, 1, 1, 0}, 2, 4)
	labels := tensors.FromFlatDataAndDimensions([]int32{-100, 9, 3, 17, 40, 2, 8, -100}, 2, 4)
	b := m.LoRAVariables()["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"]
	if b == nil {
		t.Fatal("no q_proj adapter")
	}
	exec, err := gomlxmodel.NewExec(backend(t), store, func(scope *gomlxmodel.Scope, tok, msk, lab *Node) []*Node {
		l := m.Logits(scope, m.Hidden(scope, tok, msk))
		return append([]*Node{l}, Gradient(CausalLMLoss(l, lab), b.ValueGraph(tok.Graph()))...)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Exec(tokens, mask, labels)
	if err != nil {
		t.Fatal(err)
	}
	return flat32(out[0]), flat32(out[1])
}

// TestNF4PackedBase: with QuantNF4 the projections stay NF4 codes in the store and are
// dequantized in the graph; logits and adapter gradients equal those of the base dequantized at
// load, whether the snapshot holds the codes or a float32 base is quantized when loaded.
func TestNF4PackedBase(t *testing.T) {
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
	lora := LoRA{Rank: 2, Alpha: 2}
	refStore := gomlxmodel.NewStore()
	ref, err := Load(context.Background(), openSnap(t, packed), refStore, lora, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantLogits, wantGrad := logitsAndGrad(t, refStore, ref)
	for _, dir := range []string{packed, plain} {
		store := gomlxmodel.NewStore()
		m, err := LoadQuantized(context.Background(), openSnap(t, dir), store, lora, 0, QuantNF4)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(m.PackedWeights()); n != 14 {
			t.Fatalf("%d packed weights, want 14", n)
		}
		if _, ok := m.BaseVariables()["model.layers.0.mlp.up_proj.weight"]; ok {
			t.Error("a packed weight is also held unpacked")
		}
		if v := store.GetVariable(BaseScope + "/model.layers.0.mlp.up_proj.weight" + suffixCodes); v == nil || v.DType() != dtypes.Uint8 {
			t.Fatalf("up_proj codes variable %v, want uint8", v)
		}
		logits, grad := logitsAndGrad(t, store, m)
		if d, _ := maxDiff(logits, wantLogits); d > 1e-5 {
			t.Errorf("%s: max |logit difference| %.3g > 1e-5", filepath.Base(dir), d)
		}
		if d, _ := maxDiff(grad, wantGrad); d > 1e-5 {
			t.Errorf("%s: max |gradient difference| %.3g > 1e-5", filepath.Base(dir), d)
		}
	}
}

func TestLoadQuantizedRefuses(t *testing.T) {
	s := openSnap(t, filepath.Join("testdata", "llama"))
	for _, tc := range []struct {
		desc  string
		lora  LoRA
		quant string
		want  string
	}{
		{"trained base", LoRA{}, QuantNF4, "quantization nf4 needs a frozen base (lora rank > 0): NF4 codes cannot be trained"},
		{"unknown", LoRA{Rank: 2, Alpha: 2}, "int8", `quantization "int8": want none or nf4`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := LoadQuantized(context.Background(), s, gomlxmodel.NewStore(), tc.lora, 0, tc.quant)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
