package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/go-huggingface/hub"
	"github.com/gomlx/go-huggingface/models/safetensors"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/tensorio"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// tiny is the random base of these tests: a Llama-shaped decoder with grouped-query attention, so
// q/k/v/o and the MLP projections all have different shapes.
func tiny(dt dtypes.DType, seed uint64) randsnap.Decoder {
	return randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 16, Layers: 2, Heads: 4, KVHeads: 2,
		Intermediate: 24, DType: dt, Seed: seed, Std: 0.5}
}

// values returns a float tensor's values as float64 (bf16 and f32 only: what these tests write).
func values(t *testing.T, x *tensors.Tensor) []float64 {
	t.Helper()
	out := make([]float64, x.Shape().Size())
	switch x.DType() {
	case dtypes.Float32:
		for i, v := range tensors.MustCopyFlatData[float32](x) {
			out[i] = float64(v)
		}
	case dtypes.BFloat16:
		for i, v := range tensors.MustCopyFlatData[bfloat16.BFloat16](x) {
			out[i] = float64(v.Float32())
		}
	default:
		t.Fatalf("dtype %s", x.DType())
	}
	return out
}

// mergedWant is base + 4 * B @ A (checkpointFor's rank 4 and scale 4) in float64: w [out, in],
// a [4, in], b [out, 4].
func mergedWant(t *testing.T, w, a, b *tensors.Tensor) []float64 {
	t.Helper()
	want := values(t, w)
	av, bv := values(t, a), values(t, b)
	outDim, in := w.Shape().Dimensions[0], w.Shape().Dimensions[1]
	for o := range outDim {
		for i := range in {
			var d float64
			for k := range 4 {
				d += bv[o*4+k] * av[k*in+i]
			}
			want[o*in+i] += 4 * d
		}
	}
	return want
}

func randMat(r *rand.Rand, rows, cols int) *tensors.Tensor {
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return tensors.FromFlatDataAndDimensions(v, rows, cols)
}

// checkpointFor writes a checkpoint of base: base.json and an adapter of rank 4 with random A and
// B (B != 0, so every merged weight differs from the base) on the seven projections of every
// layer; head adds a score head [1, hidden] (task SEQ_CLS).
func checkpointFor(t *testing.T, baseDir, ck string, head bool) *peft.Adapter {
	t.Helper()
	snap, err := snapshot.Open(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := peft.WriteBaseRef(context.Background(), ck, snap); err != nil {
		t.Fatal(err)
	}
	l := config.LoRA{Rank: 4, Alpha: 8, RSLoRA: true, TargetModules: config.LoRATargetsLlama} // scale 8/sqrt(4) = 4
	task, save := peft.TaskCausalLM, []string(nil)
	if head {
		task, save = peft.TaskSeqCls, []string{"score"}
	}
	a := &peft.Adapter{Config: peft.NewConfig(l, task, snap.Dir, save), Tensors: map[string]*tensors.Tensor{}}
	r := rand.New(rand.NewPCG(7, 8))
	for _, name := range snap.Names() {
		module, ok := strings.CutSuffix(name, ".weight")
		if !ok || !slices.Contains(config.LoRATargetsLlama, module[strings.LastIndex(module, ".")+1:]) {
			continue
		}
		s, _ := snap.Shape(name)
		out, in := s.Dimensions[0], s.Dimensions[1]
		a.Tensors[peft.Prefix+module+peft.SuffixA] = randMat(r, 4, in)
		a.Tensors[peft.Prefix+module+peft.SuffixB] = randMat(r, out, 4)
	}
	if head {
		a.Tensors[peft.Prefix+"score.weight"] = randMat(r, 1, 16)
	}
	if err := peft.Write(filepath.Join(ck, peft.AdapterDir), a); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestExportMerged is the round trip of issue 9 item 8: a random bf16 (and f32) snapshot, an
// adapter with B != 0, tracksum-export, then the output read by go-huggingface's own safetensors
// reader and compared with base + scale * B @ A computed here in float64.
func TestExportMerged(t *testing.T) {
	for _, dt := range []dtypes.DType{dtypes.BFloat16, dtypes.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			root := t.TempDir()
			baseDir, ck, out := filepath.Join(root, "base"), filepath.Join(root, "ck"), filepath.Join(root, "out")
			if err := randsnap.WriteDecoder(baseDir, tiny(dt, 1)); err != nil {
				t.Fatal(err)
			}
			a := checkpointFor(t, baseDir, ck, false)
			prov, err := Export(context.Background(), Options{Checkpoint: ck, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			if len(prov.Merged) != 14 || len(prov.Added) != 0 || prov.Mode != "lora" {
				t.Errorf("provenance: %d merged, %d added, mode %s; want 14, 0, lora", len(prov.Merged), len(prov.Added), prov.Mode)
			}
			base, err := tensorio.ReadTensors(filepath.Join(baseDir, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := safetensors.New(hub.NewLocal(out))
			if err != nil {
				t.Fatalf("go-huggingface cannot read the export: %v", err)
			}
			names := got.ListTensorNames()
			slices.Sort(names)
			if len(names) != len(base) {
				t.Fatalf("export has %d tensors, base %d", len(names), len(base))
			}
			// One rounding to the output dtype: half a unit in the last place, relative.
			tol := 1.0 / 256
			if dt == dtypes.Float32 {
				tol = 1e-6
			}
			for _, name := range names {
				g, err := got.GetTensor(nil, name)
				if err != nil {
					t.Fatal(err)
				}
				w := base[name]
				if g.Tensor.DType() != w.DType() || !g.Tensor.Shape().Equal(w.Shape()) {
					t.Fatalf("%s: %s, base %s", name, g.Tensor.Shape(), w.Shape())
				}
				module := strings.TrimSuffix(name, ".weight")
				A, B := a.Tensors[peft.Prefix+module+peft.SuffixA], a.Tensors[peft.Prefix+module+peft.SuffixB]
				if A == nil {
					if !slices.Equal(values(t, g.Tensor), values(t, w)) {
						t.Errorf("%s: not adapted, yet changed", name)
					}
					continue
				}
				want := mergedWant(t, w, A, B)
				gv := values(t, g.Tensor)
				changed := false
				for i := range want {
					if math.Abs(gv[i]-want[i]) > tol*math.Abs(want[i])+1e-6 {
						t.Fatalf("%s[%d] = %g, want base + 4 * B@A = %g", name, i, gv[i], want[i])
					}
					changed = changed || gv[i] != values(t, w)[i]
				}
				if !changed {
					t.Errorf("%s: merged equals the base", name)
				}
			}
			// The rest of the snapshot: config and tokenizer files as the base's, and it opens.
			for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
				want, _ := os.ReadFile(filepath.Join(baseDir, f))
				have, err := os.ReadFile(filepath.Join(out, f))
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if f == "config.json" {
					var x, y any
					json.Unmarshal(want, &x)
					json.Unmarshal(have, &y)
					want, _ = json.Marshal(x)
					have, _ = json.Marshal(y)
				}
				if !bytes.Equal(want, have) {
					t.Errorf("%s differs from the base's", f)
				}
			}
			if _, err := snapshot.Open(out); err != nil {
				t.Errorf("the export is not a valid snapshot: %v", err)
			}
			entries, _ := os.ReadDir(root)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".out") && !strings.HasSuffix(e.Name(), ".lock") {
					t.Errorf("leftover %s", e.Name())
				}
			}
		})
	}
}

// TestExportHead checks a sequence classifier: the score head, absent from the base, is added in
// the base's dtype and config.json names LlamaForSequenceClassification with one label.
func TestExportHead(t *testing.T) {
	root := t.TempDir()
	baseDir, ck, out := filepath.Join(root, "base"), filepath.Join(root, "ck"), filepath.Join(root, "out")
	if err := randsnap.WriteDecoder(baseDir, tiny(dtypes.BFloat16, 2)); err != nil {
		t.Fatal(err)
	}
	a := checkpointFor(t, baseDir, ck, true)
	prov, err := Export(context.Background(), Options{Checkpoint: ck, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(prov.Added, []string{"score.weight"}) || prov.TaskType != peft.TaskSeqCls {
		t.Errorf("added %v, task %s", prov.Added, prov.TaskType)
	}
	ts, err := tensorio.ReadTensors(filepath.Join(out, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	score := ts["score.weight"]
	want := values(t, a.Tensors[peft.Prefix+"score.weight"])
	if score == nil || score.DType() != dtypes.BFloat16 {
		t.Fatalf("score.weight %v, want bf16", score)
	}
	for i, v := range values(t, score) {
		if math.Abs(v-want[i]) > math.Abs(want[i])/256 {
			t.Errorf("score.weight[%d] = %g, want %g", i, v, want[i])
		}
	}
	var cfg map[string]any
	raw, _ := os.ReadFile(filepath.Join(out, "config.json"))
	json.Unmarshal(raw, &cfg)
	if fmt.Sprint(cfg["architectures"]) != "[LlamaForSequenceClassification]" || fmt.Sprint(cfg["id2label"]) != "map[0:LABEL_0]" {
		t.Errorf("config: architectures %v, id2label %v", cfg["architectures"], cfg["id2label"])
	}
}

// TestExportFull checks a fully fine-tuned checkpoint (lora.rank 0): its float32 tensors replace
// the base's, stored in the base's dtype.
func TestExportFull(t *testing.T) {
	root := t.TempDir()
	baseDir, ck, out := filepath.Join(root, "base"), filepath.Join(root, "ck"), filepath.Join(root, "out")
	if err := randsnap.WriteDecoder(baseDir, tiny(dtypes.BFloat16, 3)); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Open(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := peft.WriteBaseRef(context.Background(), ck, snap); err != nil {
		t.Fatal(err)
	}
	norm := tensors.FromFlatDataAndDimensions(slices.Repeat([]float32{1.5}, 16), 16)
	os.MkdirAll(filepath.Join(ck, peft.FullDir), 0o755)
	if err := tensorio.WriteTensors(filepath.Join(ck, peft.FullDir, peft.FullWeights), map[string]*tensors.Tensor{"model.norm.weight": norm}); err != nil {
		t.Fatal(err)
	}
	prov, err := Export(context.Background(), Options{Checkpoint: ck, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := tensorio.ReadTensors(filepath.Join(out, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ts["model.norm.weight"]; got.DType() != dtypes.BFloat16 || !slices.Equal(values(t, got), slices.Repeat([]float64{1.5}, 16)) {
		t.Errorf("model.norm.weight %v", got)
	}
	if prov.Mode != "full" || !slices.Equal(prov.Merged, []string{"model.norm.weight"}) {
		t.Errorf("provenance %+v", prov)
	}
}

// TestExportRefuses checks the one-line refusals: an existing output, an output inside the
// checkpoint, a changed base, a checkpoint with nothing to export, and a missing base.json.
func TestExportRefuses(t *testing.T) {
	root := t.TempDir()
	baseDir, ck, out := filepath.Join(root, "base"), filepath.Join(root, "ck"), filepath.Join(root, "out")
	if err := randsnap.WriteDecoder(baseDir, tiny(dtypes.Float32, 4)); err != nil {
		t.Fatal(err)
	}
	checkpointFor(t, baseDir, ck, false)
	ctx := context.Background()
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "keep.txt"), []byte("mine"), 0o644)
	if _, err := Export(ctx, Options{Checkpoint: ck, Out: out}); !errors.Is(err, atomicio.ErrForeign) || !strings.Contains(err.Error(), "holds keep.txt") {
		t.Errorf("existing output: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "keep.txt")); err != nil {
		t.Errorf("a refused export touched the output: %v", err)
	}
	// --overwrite replaces only a previous export (issue 22 defect 6), not the user's keep.txt.
	if _, err := Export(ctx, Options{Checkpoint: ck, Out: out, Overwrite: true}); !errors.Is(err, atomicio.ErrForeign) {
		t.Errorf("--overwrite of a foreign directory: %v, want ErrForeign", err)
	}
	os.Remove(filepath.Join(out, "keep.txt"))
	if _, err := Export(ctx, Options{Checkpoint: ck, Out: out, Overwrite: true}); err != nil {
		t.Errorf("--overwrite: %v", err)
	}
	if _, err := Export(ctx, Options{Checkpoint: ck, Out: filepath.Join(ck, "merged")}); err == nil || !strings.Contains(err.Error(), "inside the --checkpoint directory") {
		t.Errorf("output inside the checkpoint: %v", err)
	}
	if _, err := Export(ctx, Options{Checkpoint: baseDir, Out: filepath.Join(root, "x")}); err == nil || !strings.Contains(err.Error(), "base.json is missing") {
		t.Errorf("not a checkpoint: %v", err)
	}
	os.RemoveAll(filepath.Join(ck, peft.AdapterDir))
	if _, err := Export(ctx, Options{Checkpoint: ck, Out: filepath.Join(root, "y")}); err == nil || !strings.Contains(err.Error(), "nothing to export") {
		t.Errorf("no adapter: %v", err)
	}
	// The same directory with other weights.
	if err := randsnap.WriteDecoder(baseDir, tiny(dtypes.Float32, 5)); err != nil {
		t.Fatal(err)
	}
	_, err := Export(ctx, Options{Checkpoint: ck, Out: filepath.Join(root, "z")})
	if err == nil || !strings.Contains(err.Error(), "has changed: weights sha256") || strings.Contains(err.Error(), "\n") {
		t.Errorf("changed base: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "z")); !os.IsNotExist(err) {
		t.Errorf("a failed export left %s", filepath.Join(root, "z"))
	}
}

// TestExportBERTClassifier checks an encoder_cls checkpoint on a BERT base saved without the
// "bert." prefix (a BertModel): the export prefixes the base's keys so that
// BertForSequenceClassification loads both the encoder and the classifier, and the adapter saved
// under the base's own names merges.
func TestExportBERTClassifier(t *testing.T) {
	root := t.TempDir()
	baseDir, ck, out := filepath.Join(root, "base"), filepath.Join(root, "ck"), filepath.Join(root, "out")
	os.MkdirAll(baseDir, 0o755)
	files := map[string]string{
		"config.json":           `{"model_type": "bert", "architectures": ["BertModel"], "hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 1, "intermediate_size": 8, "vocab_size": 5}`,
		"tokenizer.json":        `{}`,
		"tokenizer_config.json": `{}`,
		"vocab.txt":             "[PAD]\n[UNK]\n[CLS]\n[SEP]\nx\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(baseDir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	q := "encoder.layer.0.attention.self.query"
	base := map[string]*tensors.Tensor{
		"embeddings.word_embeddings.weight": randMat(r, 5, 4),
		q + ".weight":                       randMat(r, 4, 4),
		"pooler.dense.weight":               randMat(r, 4, 4),
	}
	if err := tensorio.WriteTensors(filepath.Join(baseDir, "model.safetensors"), base); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Open(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := peft.WriteBaseRef(context.Background(), ck, snap); err != nil {
		t.Fatal(err)
	}
	l := config.LoRA{Rank: 2, Alpha: 2, TargetModules: []string{"query"}}
	a := &peft.Adapter{Config: peft.NewConfig(l, peft.TaskSeqCls, baseDir, []string{"classifier"}), Tensors: map[string]*tensors.Tensor{
		peft.Prefix + q + peft.SuffixA:    randMat(r, 2, 4),
		peft.Prefix + q + peft.SuffixB:    randMat(r, 4, 2),
		peft.Prefix + "classifier.weight": randMat(r, 2, 4),
		peft.Prefix + "classifier.bias":   tensors.FromFlatDataAndDimensions([]float32{0.25, -0.25}, 2),
	}}
	if err := peft.Write(filepath.Join(ck, peft.AdapterDir), a); err != nil {
		t.Fatal(err)
	}
	if _, err := Export(context.Background(), Options{Checkpoint: ck, Out: out}); err != nil {
		t.Fatal(err)
	}
	ts, err := tensorio.ReadTensors(filepath.Join(out, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"bert.embeddings.word_embeddings.weight", "bert." + q + ".weight", "bert.pooler.dense.weight", "classifier.bias", "classifier.weight"}
	if !slices.Equal(names, want) {
		t.Fatalf("tensors %v, want %v", names, want)
	}
	merged, err := peft.Merge(base, a)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(values(t, ts["bert."+q+".weight"]), values(t, merged[q+".weight"])) {
		t.Error("query: export differs from peft.Merge")
	}
	var cfg map[string]any
	raw, _ := os.ReadFile(filepath.Join(out, "config.json"))
	json.Unmarshal(raw, &cfg)
	if fmt.Sprint(cfg["architectures"]) != "[BertForSequenceClassification]" || len(cfg["id2label"].(map[string]any)) != 2 {
		t.Errorf("config: architectures %v, id2label %v", cfg["architectures"], cfg["id2label"])
	}
	if b, _ := os.ReadFile(filepath.Join(out, "vocab.txt")); string(b) != files["vocab.txt"] {
		t.Error("vocab.txt not copied")
	}
}

// TestExportOverwriteKeepsInputs is the regression test of issue 22 defect 6: with P holding the
// base snapshot, the checkpoint and a user's other/important.txt, `tracksum-export --checkpoint
// P/ck --out P --overwrite` exited 0 after deleting all three. An --out holding an input is
// refused naming it; --overwrite replaces a previous export and nothing else.
func TestExportOverwriteKeepsInputs(t *testing.T) {
	ctx := context.Background()
	p := t.TempDir()
	baseDir, ck := filepath.Join(p, "base"), filepath.Join(p, "ck")
	if err := randsnap.WriteDecoder(baseDir, tiny(dtypes.Float32, 4)); err != nil {
		t.Fatal(err)
	}
	checkpointFor(t, baseDir, ck, false)
	important := filepath.Join(p, "other", "important.txt")
	os.MkdirAll(filepath.Dir(important), 0o755)
	if err := os.WriteFile(important, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	survives := func(t *testing.T) {
		t.Helper()
		for _, f := range []string{important, filepath.Join(baseDir, snapshot.WeightsFile), filepath.Join(ck, peft.BaseFile)} {
			if _, err := os.Stat(f); err != nil {
				t.Fatalf("%s is gone: %v", f, err)
			}
		}
	}
	_, err := Export(ctx, Options{Checkpoint: ck, Out: p, Overwrite: true})
	if err == nil || !strings.Contains(err.Error(), "--checkpoint "+ck+" is inside --out "+p) || strings.Contains(err.Error(), "\n") {
		t.Errorf("--out holding the checkpoint: err = %v, want a one-line refusal naming the input", err)
	}
	survives(t)

	// The inputs elsewhere, P holding only the user's files: still refused.
	ck2 := filepath.Join(t.TempDir(), "ck")
	checkpointFor(t, baseDir, ck2, false)
	if _, err := Export(ctx, Options{Checkpoint: ck2, Out: filepath.Join(p, "other"), Overwrite: true}); !errors.Is(err, atomicio.ErrForeign) ||
		!strings.Contains(err.Error(), "holds important.txt, not written by tracksum-export") {
		t.Errorf("--out holding a user's file: err = %v, want ErrForeign naming it", err)
	}
	survives(t)

	// A previous export is replaced, unless a user's file was put in it since.
	out := filepath.Join(t.TempDir(), "merged")
	if _, err := Export(ctx, Options{Checkpoint: ck2, Out: out}); err != nil {
		t.Fatal(err)
	}
	if _, err := Export(ctx, Options{Checkpoint: ck2, Out: out, Overwrite: true}); err != nil {
		t.Fatalf("--overwrite of a previous export: %v", err)
	}
	notes := filepath.Join(out, "notes.txt")
	os.WriteFile(notes, []byte("mine"), 0o644)
	if _, err := Export(ctx, Options{Checkpoint: ck2, Out: out, Overwrite: true}); !errors.Is(err, atomicio.ErrForeign) {
		t.Errorf("--overwrite of an export holding notes.txt: %v, want ErrForeign", err)
	}
	if _, err := os.Stat(notes); err != nil {
		t.Errorf("notes.txt was deleted: %v", err)
	}
}

// TestExportDType: --dtype writes every float tensor in the dtype asked for and config.json's
// torch_dtype with it. float32 from a bf16 base keeps the merge unrounded (base + 4·B@A to float32
// rounding, which the bf16 export misses by up to half a bf16 ulp); bfloat16 from a float32 base
// rounds once; an unknown dtype is refused before anything is written.
func TestExportDType(t *testing.T) {
	tests := []struct {
		name       string
		base       dtypes.DType
		dtype      string
		want       dtypes.DType
		tol        float64 // relative, against base + 4·B@A in float64
		unroundedF bool    // merged values must differ from their bf16 rounding somewhere
	}{
		{"bf16 base to float32", dtypes.BFloat16, "float32", dtypes.Float32, 1e-6, true},
		{"float32 base to bfloat16", dtypes.Float32, "bfloat16", dtypes.BFloat16, 1.0 / 256, false},
		{"bf16 base kept", dtypes.BFloat16, "", dtypes.BFloat16, 1.0 / 256, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			baseDir, ck, out := filepath.Join(root, "base"), filepath.Join(root, "ck"), filepath.Join(root, "out")
			if err := randsnap.WriteDecoder(baseDir, tiny(tt.base, 11)); err != nil {
				t.Fatal(err)
			}
			a := checkpointFor(t, baseDir, ck, false)
			prov, err := Export(context.Background(), Options{Checkpoint: ck, Out: out, DType: tt.dtype})
			if err != nil {
				t.Fatal(err)
			}
			if prov.DType != tt.dtype {
				t.Errorf("provenance dtype %q, want %q", prov.DType, tt.dtype)
			}
			base, err := tensorio.ReadTensors(filepath.Join(baseDir, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tensorio.ReadTensors(filepath.Join(out, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			unrounded := false
			for name, w := range base {
				g := got[name]
				if g == nil || g.DType() != tt.want || !slices.Equal(g.Shape().Dimensions, w.Shape().Dimensions) {
					t.Fatalf("%s: %v, want %s of %v", name, g, tt.want, w.Shape().Dimensions)
				}
				want := values(t, w)
				module := strings.TrimSuffix(name, ".weight")
				if A, B := a.Tensors[peft.Prefix+module+peft.SuffixA], a.Tensors[peft.Prefix+module+peft.SuffixB]; A != nil {
					want = mergedWant(t, w, A, B)
				}
				gv := values(t, g)
				for i := range want {
					if math.Abs(gv[i]-want[i]) > tt.tol*math.Abs(want[i])+1e-6 {
						t.Fatalf("%s[%d] = %g, want %g", name, i, gv[i], want[i])
					}
					if float64(bfloat16.FromFloat32(float32(gv[i])).Float32()) != gv[i] {
						unrounded = true
					}
				}
			}
			if unrounded != tt.unroundedF {
				t.Errorf("values off the bf16 grid: %v, want %v", unrounded, tt.unroundedF)
			}
			var cfg map[string]any
			if err := atomicio.ReadJSON(filepath.Join(out, "config.json"), &cfg, false); err != nil {
				t.Fatal(err)
			}
			if wantTD := map[string]any{"float32": "float32", "bfloat16": "bfloat16"}[tt.dtype]; wantTD != nil && cfg["torch_dtype"] != wantTD {
				t.Errorf("config.json torch_dtype %v, want %v", cfg["torch_dtype"], wantTD)
			}
		})
	}
	t.Run("unknown dtype", func(t *testing.T) {
		root := t.TempDir()
		baseDir, ck, out := filepath.Join(root, "base"), filepath.Join(root, "ck"), filepath.Join(root, "out")
		if err := randsnap.WriteDecoder(baseDir, tiny(dtypes.Float32, 12)); err != nil {
			t.Fatal(err)
		}
		checkpointFor(t, baseDir, ck, false)
		_, err := Export(context.Background(), Options{Checkpoint: ck, Out: out, DType: "float64"})
		if err == nil || !strings.Contains(err.Error(), `--dtype "float64"`) {
			t.Errorf("err = %v, want a refusal naming --dtype", err)
		}
		if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
			t.Errorf("--out exists after a refused export: %v", statErr)
		}
	})
}

// TestExportNF4Base: an adapter trained on a bitsandbytes 4-bit base exports merged into the
// dequantized weights (the base's NF4 weights as hf/snapshot reads them), as a plain snapshot:
// no packed codes or companions, and no quantization_config, which would make transformers read
// the dense weights as 4-bit codes.
func TestExportNF4Base(t *testing.T) {
	root := t.TempDir()
	baseDir, ck, out := filepath.Join(root, "base"), filepath.Join(root, "ck"), filepath.Join(root, "out")
	d := tiny(dtypes.Float32, 1)
	d.Quantize = "nf4"
	if err := randsnap.WriteDecoder(baseDir, d); err != nil {
		t.Fatal(err)
	}
	a := checkpointFor(t, baseDir, ck, false)
	if _, err := Export(context.Background(), Options{Checkpoint: ck, Out: out}); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join(out, "config.json"))
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg["quantization_config"]; ok {
		t.Error("the export's config.json keeps the base's quantization_config")
	}
	got, err := tensorio.ReadTensors(filepath.Join(out, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Open(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	base, err := snap.Tensors(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(base) {
		t.Fatalf("export has %d tensors, the dequantized base %d", len(got), len(base))
	}
	name := "model.layers.1.mlp.up_proj.weight"
	want := mergedWant(t, base[name], a.Tensors[peft.Prefix+"model.layers.1.mlp.up_proj"+peft.SuffixA], a.Tensors[peft.Prefix+"model.layers.1.mlp.up_proj"+peft.SuffixB])
	gv := values(t, got[name])
	for i := range want {
		if math.Abs(gv[i]-want[i]) > 1e-6*math.Abs(want[i])+1e-6 {
			t.Fatalf("%s[%d] = %g, want dequantized base + 4 * B@A = %g", name, i, gv[i], want[i])
		}
	}
	if s, err := snapshot.Open(out); err != nil {
		t.Error(err)
	} else if s.Quant != nil {
		t.Errorf("the export opens with quantization %+v, want a plain snapshot", *s.Quant)
	}
}

// TestExportNF4TrainedPlainBase (issue 32): a checkpoint of tracksum-train --quantize nf4 on a
// plain bf16 base (quantized when loaded) was trained on the NF4 weights dequantized, so its
// merge is into those, quantized here as the training did, written in the base's bf16 (not into
// the original weights, which would not be the model infer runs); tracksum_export.json says so.
// A quantization other than nf4 in pretrained.json is refused.
func TestExportNF4TrainedPlainBase(t *testing.T) {
	root := t.TempDir()
	baseDir, ck := filepath.Join(root, "base"), filepath.Join(root, "ck")
	if err := randsnap.WriteDecoder(baseDir, tiny(dtypes.BFloat16, 1)); err != nil {
		t.Fatal(err)
	}
	a := checkpointFor(t, baseDir, ck, false)
	meta := map[string]any{"task": "summarizer", "lora": config.LoRA{Rank: 4, Alpha: 8, RSLoRA: true, TargetModules: config.LoRATargetsLlama}, "quantization": "nf4"}
	if err := atomicio.WriteJSON(filepath.Join(ck, checkpoint.PretrainedFile), meta); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "out")
	prov, err := Export(context.Background(), Options{Checkpoint: ck, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if prov.Quantization != "nf4" {
		t.Errorf("provenance quantization %q, want nf4", prov.Quantization)
	}
	got, err := tensorio.ReadTensors(filepath.Join(out, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := tensorio.ReadTensors(filepath.Join(baseDir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, module := range []string{"model.layers.0.self_attn.k_proj", "model.layers.1.mlp.up_proj"} {
		name := module + ".weight"
		if got[name].DType() != dtypes.BFloat16 {
			t.Errorf("%s written as %s, want the base's bfloat16", name, got[name].DType())
		}
		dq, err := dequantizedNF4(base[name])
		if err != nil {
			t.Fatal(err)
		}
		want := mergedWant(t, dq, a.Tensors[peft.Prefix+module+peft.SuffixA], a.Tensors[peft.Prefix+module+peft.SuffixB])
		plain := mergedWant(t, base[name], a.Tensors[peft.Prefix+module+peft.SuffixA], a.Tensors[peft.Prefix+module+peft.SuffixB])
		gv := values(t, got[name])
		apart := 0
		for i := range want {
			if math.Abs(gv[i]-want[i]) > math.Abs(want[i])/128+1e-6 {
				t.Fatalf("%s[%d] = %g, want the NF4 weights dequantized + 4 * B@A = %g (within bf16's rounding)", name, i, gv[i], want[i])
			}
			if math.Abs(gv[i]-plain[i]) > math.Abs(plain[i])/64 {
				apart++
			}
		}
		if apart == 0 {
			t.Errorf("%s equals the merge into the unquantized weights: the NF4 round trip was not applied", name)
		}
	}
	meta["quantization"] = "fp4"
	if err := atomicio.WriteJSON(filepath.Join(ck, checkpoint.PretrainedFile), meta); err != nil {
		t.Fatal(err)
	}
	_, err = Export(context.Background(), Options{Checkpoint: ck, Out: filepath.Join(root, "out2")})
	if want := `quantization "fp4", want nf4 or none`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err %v, want one with %q", err, want)
	}
}

// TestExportDTypeOverflow is issue 35 item 3: a weight past float16's largest value (65,504) was
// written as +Inf with exit 0, and tracksum then refused its own export. The export is refused
// naming the tensor and the value, and nothing is left at --out; bfloat16 holds the value.
func TestExportDTypeOverflow(t *testing.T) {
	root := t.TempDir()
	baseDir, ck := filepath.Join(root, "base"), filepath.Join(root, "ck")
	if err := randsnap.WriteDecoder(baseDir, tiny(dtypes.Float32, 13)); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Open(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := peft.WriteBaseRef(context.Background(), ck, snap); err != nil {
		t.Fatal(err)
	}
	norm := tensors.FromFlatDataAndDimensions(slices.Repeat([]float32{1e6}, 16), 16)
	os.MkdirAll(filepath.Join(ck, peft.FullDir), 0o755)
	if err := tensorio.WriteTensors(filepath.Join(ck, peft.FullDir, peft.FullWeights), map[string]*tensors.Tensor{"model.norm.weight": norm}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "f16")
	_, err = Export(context.Background(), Options{Checkpoint: ck, Out: out, DType: "float16"})
	want := "tensor model.norm.weight: largest value 1e+06 does not fit float16 (it would be written as Inf): --dtype bfloat16 or float32 holds it"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line containing %q", err, want)
	}
	if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
		t.Errorf("--out exists after a refused export: %v", statErr)
	}
	if _, err := Export(context.Background(), Options{Checkpoint: ck, Out: filepath.Join(root, "bf16"), DType: "bfloat16"}); err != nil {
		t.Errorf("bfloat16: %v", err)
	}
}

// TestExportRefusesFromScratch is issue 35 item 12: a from-scratch summarizer given to
// --checkpoint is refused saying that export needs a checkpoint of tracksum-train --pretrained.
func TestExportRefusesFromScratch(t *testing.T) {
	ck := filepath.Join(t.TempDir(), "scratch")
	os.MkdirAll(filepath.Join(ck, checkpoint.BestDir), 0o755)
	os.WriteFile(filepath.Join(ck, checkpoint.SummarizerFile), []byte("{}"), 0o644)
	os.WriteFile(checkpoint.BestWeights(ck), []byte("weights"), 0o644)
	if _, err := checkpoint.Seal(ck, checkpoint.Identity{Kind: checkpoint.KindSummarizer, Task: checkpoint.KindSummarizer,
		Backbone: checkpoint.Backbone{Type: checkpoint.BackboneScratch}}); err != nil {
		t.Fatal(err)
	}
	_, err := Export(context.Background(), Options{Checkpoint: ck, Out: filepath.Join(t.TempDir(), "out")})
	want := ck + " is a from-scratch summarizer checkpoint; --checkpoint wants a checkpoint of tracksum-train --pretrained: tracksum-export writes a pretrained model merged into its Hugging Face base"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}
