package encoder

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/tensorio"
	"github.com/tracksum/tracksum/model"
)

// The golden outputs of tools/hfparity/bert.py: a reference forward written from transformers'
// modeling_bert.py, in float64 torch, over testdata/bert's random checkpoint.
const goldenDir = "testdata/bert"

// tolerance of the float32 Go forward against the float64 reference (issue 9: 1e-4).
const tolerance = 1e-4

type goldenRun struct {
	Hidden []float64            `json:"hidden"`
	Pooled []float64            `json:"pooled"`
	Logits []float64            `json:"logits"`
	Loss   float64              `json:"loss"`
	Grads  map[string][]float64 `json:"grads"`
}

type goldenFile struct {
	IDs                   [][]int32            `json:"ids"`
	TokenTypes            [][]int32            `json:"token_types"`
	Mask                  [][]float32          `json:"mask"`
	Labels                []float32            `json:"labels"`
	ClassifierWeight      []float32            `json:"classifier_weight"`
	ClassifierBias        []float32            `json:"classifier_bias"`
	WordEmbeddingGradRows map[string][]float64 `json:"word_embedding_grad_rows"`
	goldenRun
	LoRA struct {
		Rank    int      `json:"rank"`
		Alpha   float64  `json:"alpha"`
		RSLoRA  bool     `json:"rslora"`
		Targets []string `json:"targets"`
		Modules []string `json:"modules"`
		goldenRun
	} `json:"lora"`
}

func readGolden(t *testing.T) *goldenFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("golden.json: %v", err)
	}
	return &g
}

func flat2[T int32 | float32](rows [][]T) *tensors.Tensor {
	var vals []T
	for _, r := range rows {
		vals = append(vals, r...)
	}
	return tensors.FromFlatDataAndDimensions(vals, len(rows), len(rows[0]))
}

// outputs of one run of the model over the golden batch.
type outputs struct {
	hidden, pooled, logits []float32
	loss                   float32
	grads                  map[string][]float32
}

// run builds the classifier graph over the golden batch: hidden, pooled, logits, the mean BCE
// loss and its gradients with respect to the named variables (store paths).
func run(t *testing.T, m *Model, store *gomlxmodel.Store, g *goldenFile, gradVars []string) outputs {
	t.Helper()
	b, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	exec, err := gomlxmodel.NewExec(b, store, func(scope *gomlxmodel.Scope, ids, types, mask, labels *Node) []*Node {
		hidden := m.Hidden(scope, ids, types, mask)
		pooled := m.Pooled(scope, hidden)
		logits := Squeeze(m.Classify(scope, pooled), 1)
		loss := BCEWithLogits(logits, labels)
		out := []*Node{hidden, pooled, logits, loss}
		var wrt []*Node
		for _, path := range gradVars {
			v := store.GetVariable(path)
			if v == nil {
				panic(fmt.Sprintf("no variable %s", path))
			}
			wrt = append(wrt, v.NodeValue(ids.Graph()))
		}
		if len(wrt) > 0 {
			out = append(out, Gradient(loss, wrt...)...)
		}
		return out
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := exec.Exec(flat2(g.IDs), flat2(g.TokenTypes), flat2(g.Mask), tensors.FromFlatDataAndDimensions(g.Labels, len(g.Labels)))
	if err != nil {
		t.Fatal(err)
	}
	o := outputs{
		hidden: tensors.MustCopyFlatData[float32](res[0]),
		pooled: tensors.MustCopyFlatData[float32](res[1]),
		logits: tensors.MustCopyFlatData[float32](res[2]),
		loss:   tensors.MustCopyFlatData[float32](res[3])[0],
		grads:  map[string][]float32{},
	}
	for i, path := range gradVars {
		o.grads[path] = tensors.MustCopyFlatData[float32](res[4+i])
	}
	return o
}

// BCEWithLogits is PyTorch's binary_cross_entropy_with_logits, mean reduction, in its stable form
// max(z, 0) - z y + log(1 + exp(-|z|)).
func BCEWithLogits(logits, labels *Node) *Node {
	l := Add(Sub(Max(logits, ZerosLike(logits)), Mul(logits, labels)), Log1P(Exp(Neg(Abs(logits)))))
	return ReduceAllMean(l)
}

// compare fails when got and want differ by more than tolerance (scaled by the magnitude of
// want above 1, for gradients and logits that are not O(1)).
func compare(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	worst, at := 0.0, 0
	for i := range want {
		d := math.Abs(float64(got[i])-want[i]) / math.Max(1, math.Abs(want[i]))
		if d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	t.Logf("%s: max diff %.3g over %d values", what, worst, len(want))
	if worst > tolerance || math.IsNaN(worst) {
		t.Errorf("%s: max difference %.3g at %d (got %g, want %g), tolerance %g", what, worst, at, got[at], want[at], tolerance)
	}
}

func openGolden(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Open(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func setHead(t *testing.T, m *Model, g *goldenFile) {
	t.Helper()
	if err := m.AddClassifier(1, 0); err != nil {
		t.Fatal(err)
	}
	h := m.HeadVariables()
	if err := h["classifier.weight"].SetValue(tensors.FromFlatDataAndDimensions(slices.Clone(g.ClassifierWeight), 1, len(g.ClassifierWeight))); err != nil {
		t.Fatal(err)
	}
	if err := h["classifier.bias"].SetValue(tensors.FromFlatDataAndDimensions(slices.Clone(g.ClassifierBias), 1)); err != nil {
		t.Fatal(err)
	}
}

// TestParityFullFineTuning: hidden states, pooled output, classifier logits, the BCE loss and
// gradients of base weights (full fine-tuning, lora rank 0) against the reference.
func TestParityFullFineTuning(t *testing.T) {
	g := readGolden(t)
	s := openGolden(t)
	store := gomlxmodel.NewStore()
	m, err := Load(context.Background(), s, store, LoRA{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.KeyPrefix() != "bert." || !m.HasPooler() {
		t.Fatalf("prefix %q, pooler %v: want bert. and a pooler", m.KeyPrefix(), m.HasPooler())
	}
	setHead(t, m, g)
	var paths []string
	names := slices.Sorted(maps.Keys(g.Grads))
	for _, name := range names {
		if name == "classifier.weight" || name == "classifier.bias" {
			paths = append(paths, HeadScope+"/"+name)
		} else {
			paths = append(paths, BaseScope+"/"+name)
		}
	}
	word := BaseScope + "/bert.embeddings.word_embeddings.weight"
	paths = append(paths, word)
	o := run(t, m, store, g, paths)
	compare(t, "last hidden state", o.hidden, g.Hidden)
	compare(t, "pooled output", o.pooled, g.Pooled)
	compare(t, "classifier logits", o.logits, g.Logits)
	compare(t, "BCE loss", []float32{o.loss}, []float64{g.Loss})
	for i, name := range names {
		compare(t, "gradient of "+name, o.grads[paths[i]], g.Grads[name])
	}
	hidden := m.Config().Hidden
	for _, row := range slices.Sorted(maps.Keys(g.WordEmbeddingGradRows)) {
		r, _ := strconv.Atoi(row)
		compare(t, "gradient of word embedding row "+row, o.grads[word][r*hidden:(r+1)*hidden], g.WordEmbeddingGradRows[row])
	}
}

// loadAdapter reads testdata/bert/lora/adapter_model.safetensors (PEFT keys) into m's adapters.
func loadAdapter(t *testing.T, m *Model) map[string]*tensors.Tensor {
	t.Helper()
	ad, err := tensorio.ReadTensors(filepath.Join(goldenDir, "lora", "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	vars := m.LoRAVariables()
	if len(vars) != len(ad) {
		t.Fatalf("model has %d adapter tensors, the PEFT file %d", len(vars), len(ad))
	}
	for key, v := range vars {
		a, ok := ad[key]
		if !ok {
			t.Fatalf("adapter file has no %s", key)
		}
		if err := v.SetValue(a); err != nil {
			t.Fatal(err)
		}
	}
	return ad
}

// TestParityLoRA: rsLoRA adapters with B != 0 on every linear layer (PEFT's matching of
// query/key/value/dense, the pooler's included): outputs, loss and adapter gradients against the
// reference, and the same forward as the merged weights W + scale B A computed in Go.
func TestParityLoRA(t *testing.T) {
	g := readGolden(t)
	s := openGolden(t)
	store := gomlxmodel.NewStore()
	lora := LoRA{Rank: g.LoRA.Rank, Alpha: g.LoRA.Alpha, RSLoRA: g.LoRA.RSLoRA, TargetModules: g.LoRA.Targets}
	m, err := Load(context.Background(), s, store, lora, 0)
	if err != nil {
		t.Fatal(err)
	}
	var modules []string
	for k := range m.adapters {
		modules = append(modules, k)
	}
	slices.Sort(modules)
	if !slices.Equal(modules, g.LoRA.Modules) {
		t.Fatalf("adapted modules %v, want %v (PEFT's)", modules, g.LoRA.Modules)
	}
	for key, v := range m.BaseVariables() {
		if v.Trainable {
			t.Fatalf("base weight %s is trainable under LoRA", key)
		}
	}
	ad := loadAdapter(t, m)
	setHead(t, m, g)
	names := slices.Sorted(maps.Keys(g.LoRA.Grads))
	var paths []string
	for _, name := range names {
		if name == "classifier.weight" {
			paths = append(paths, HeadScope+"/"+name)
		} else {
			paths = append(paths, LoRAScope+"/"+name)
		}
	}
	o := run(t, m, store, g, paths)
	compare(t, "LoRA last hidden state", o.hidden, g.LoRA.Hidden)
	compare(t, "LoRA pooled output", o.pooled, g.LoRA.Pooled)
	compare(t, "LoRA logits", o.logits, g.LoRA.Logits)
	compare(t, "LoRA BCE loss", []float32{o.loss}, []float64{g.LoRA.Loss})
	for i, name := range names {
		compare(t, "LoRA gradient of "+name, o.grads[paths[i]], g.LoRA.Grads[name])
	}

	// Merged: a rank-0 model whose weights are W + scale * B @ A, computed here on the host.
	mstore := gomlxmodel.NewStore()
	merged, err := Load(context.Background(), s, mstore, LoRA{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	scale := lora.Scale()
	for _, mod := range g.LoRA.Modules {
		a := ad[peft.Prefix+mod+".lora_A.weight"]
		b := ad[peft.Prefix+mod+".lora_B.weight"]
		w := merged.BaseVariables()[mod+".weight"]
		wv := tensors.MustCopyFlatData[float32](w.MustValue())
		av, bv := tensors.MustCopyFlatData[float32](a), tensors.MustCopyFlatData[float32](b)
		out, in, r := b.Shape().Dimensions[0], a.Shape().Dimensions[1], a.Shape().Dimensions[0]
		for i := range out {
			for j := range in {
				var sum float64
				for k := range r {
					sum += float64(bv[i*r+k]) * float64(av[k*in+j])
				}
				wv[i*in+j] += float32(scale * sum)
			}
		}
		if err := w.SetValue(tensors.FromFlatDataAndDimensions(wv, out, in)); err != nil {
			t.Fatal(err)
		}
	}
	setHead(t, merged, g)
	mo := run(t, merged, mstore, g, nil)
	compare(t, "merged last hidden state vs reference", mo.hidden, g.LoRA.Hidden)
	compare(t, "merged pooled vs reference", mo.pooled, g.LoRA.Pooled)
	worst := 0.0
	for i := range mo.hidden {
		worst = math.Max(worst, math.Abs(float64(mo.hidden[i]-o.hidden[i])))
	}
	t.Logf("merged vs LoRA hidden state (both Go): max diff %.3g", worst)
	if worst > 1e-5 {
		t.Errorf("merged and LoRA hidden states differ by %g", worst)
	}
}

// TestLoRAStartsAsBase: fresh adapters (B = 0, as PEFT initialises them) leave the output equal
// to the base model's, and A is drawn within PEFT's kaiming-uniform bound.
func TestLoRAStartsAsBase(t *testing.T) {
	g := readGolden(t)
	s := openGolden(t)
	store := gomlxmodel.NewStore()
	m, err := Load(context.Background(), s, store, LoRA{Rank: 2, Alpha: 4, TargetModules: []string{"query", "value"}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.LoRAVariables()); n != 2*2*2 {
		t.Fatalf("%d adapter tensors, want 8 (query and value of 2 layers, A and B)", n)
	}
	bound := float32(1 / math.Sqrt(float64(m.Config().Hidden)))
	for key, v := range m.LoRAVariables() {
		vals := tensors.MustCopyFlatData[float32](v.MustValue())
		for _, x := range vals {
			if (strings.HasSuffix(key, "lora_A.weight") && (x < -bound || x > bound)) || (strings.HasSuffix(key, "lora_B.weight") && x != 0) {
				t.Fatalf("%s holds %g", key, x)
			}
		}
	}
	setHead(t, m, g)
	o := run(t, m, store, g, nil)
	compare(t, "hidden state with B = 0", o.hidden, g.Hidden)
}

// TestHalfPrecisionBase: a bfloat16 checkpoint keeps its dtype when frozen (converted to float32
// in the graph) and is converted on the host when trained; both give the same output.
func TestHalfPrecisionBase(t *testing.T) {
	g := readGolden(t)
	dir := t.TempDir()
	copySnapshot(t, dir, func(name string, tt *tensors.Tensor) *tensors.Tensor {
		if tt.DType() != dtypes.Float32 {
			return tt
		}
		return toBF16(tt)
	}, nil)
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	frozenStore, fullStore := gomlxmodel.NewStore(), gomlxmodel.NewStore()
	frozen, err := Load(context.Background(), s, frozenStore, LoRA{Rank: 2, Alpha: 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if dt := frozen.BaseVariables()["bert.encoder.layer.0.attention.self.query.weight"].DType(); dt != dtypes.BFloat16 {
		t.Fatalf("frozen base weight is %s, want bf16 kept", dt)
	}
	full, err := Load(context.Background(), s, fullStore, LoRA{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if dt := full.BaseVariables()["bert.encoder.layer.0.attention.self.query.weight"].DType(); dt != dtypes.Float32 {
		t.Fatalf("trained base weight is %s, want float32", dt)
	}
	setHead(t, frozen, g)
	setHead(t, full, g)
	a, b := run(t, frozen, frozenStore, g, nil), run(t, full, fullStore, g, nil)
	for i := range a.hidden {
		if d := math.Abs(float64(a.hidden[i] - b.hidden[i])); d > 1e-5 {
			t.Fatalf("bf16 frozen and converted outputs differ by %g at %d", d, i)
		}
	}
	// bf16 rounding of the weights moves the output, but not far (a sanity bound, not parity).
	worst := 0.0
	for i := range a.hidden {
		worst = math.Max(worst, math.Abs(float64(a.hidden[i])-g.Hidden[i]))
	}
	if worst > 0.25 {
		t.Fatalf("bf16 checkpoint output differs from float32 reference by %g", worst)
	}
}

// TestKeysWithoutPrefixAndPooler: a BertModel checkpoint (keys without "bert.") gives the same
// hidden states; without pooler weights, Pooled is the [CLS] hidden state.
func TestKeysWithoutPrefixAndPooler(t *testing.T) {
	g := readGolden(t)
	dir := t.TempDir()
	copySnapshot(t, dir, nil, func(name string) (string, bool) {
		name = strings.TrimPrefix(name, "bert.")
		return name, name != "pooler.dense.weight" && name != "pooler.dense.bias"
	})
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := gomlxmodel.NewStore()
	m, err := Load(context.Background(), s, store, LoRA{Rank: 1, Alpha: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.KeyPrefix() != "" || m.HasPooler() {
		t.Fatalf("prefix %q, pooler %v: want none", m.KeyPrefix(), m.HasPooler())
	}
	for key := range m.LoRAVariables() {
		if !strings.HasPrefix(key, peft.Prefix+"encoder.") {
			t.Fatalf("adapter key %s: want the checkpoint's own module keys", key)
		}
	}
	setHead(t, m, g)
	o := run(t, m, store, g, nil)
	compare(t, "hidden state without prefix", o.hidden, g.Hidden)
	h := m.Config().Hidden
	for b := range len(g.IDs) {
		seq := len(g.IDs[0])
		compare(t, "pooled = [CLS] without pooler", o.pooled[b*h:(b+1)*h], g.Hidden[b*seq*h:b*seq*h+h])
	}
}

// copySnapshot copies testdata/bert to dir, passing each tensor through conv (nil: unchanged) and
// each name through rename (nil: unchanged; false drops the tensor).
func copySnapshot(t *testing.T, dir string, conv func(string, *tensors.Tensor) *tensors.Tensor, rename func(string) (string, bool)) {
	t.Helper()
	for _, name := range []string{"config.json", "tokenizer.json", "tokenizer_config.json"} {
		data, err := os.ReadFile(filepath.Join(goldenDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := tensorio.ReadTensors(filepath.Join(goldenDir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*tensors.Tensor{}
	for name, tt := range ts {
		if conv != nil {
			tt = conv(name, tt)
		}
		if rename != nil {
			var keep bool
			if name, keep = rename(name); !keep {
				continue
			}
		}
		out[name] = tt
	}
	if err := tensorio.WriteTensors(filepath.Join(dir, "model.safetensors"), out); err != nil {
		t.Fatal(err)
	}
}

// toBF16 rounds a float32 tensor to bfloat16, to nearest even.
func toBF16(tt *tensors.Tensor) *tensors.Tensor {
	vals := tensors.MustCopyFlatData[float32](tt)
	out := tensors.FromShape(shapes.Make(dtypes.BFloat16, tt.Shape().Dimensions...))
	_ = out.MutableBytes(func(b []byte) {
		for i, v := range vals {
			u := math.Float32bits(v)
			u += 0x7fff + (u>>16)&1
			b[2*i], b[2*i+1] = byte(u>>16), byte(u>>24)
		}
	})
	return out
}
