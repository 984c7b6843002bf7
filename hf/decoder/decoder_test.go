package decoder

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/tensorio"
	"github.com/tracksum/tracksum/model"
)

// families are the registered causal LM families: tools/hfparity/decoder.py generates a golden
// checkpoint of each in testdata/ (TestEveryFamilyHasGoldens).
var families = family.Names(family.CausalLM)

// A family registered without its parity golden, or a golden left for an unregistered family, is
// a family nobody checked against transformers' math.
func TestEveryFamilyHasGoldens(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join("testdata", e.Name(), "golden.safetensors")); e.IsDir() && err == nil {
			dirs = append(dirs, e.Name())
		}
	}
	if !slices.Equal(dirs, families) {
		t.Errorf("golden checkpoints %v, registered causal LM families %v: add the family to tools/hfparity/decoder.py and run it", dirs, families)
	}
}

// tol is the largest absolute difference accepted from the float32 PyTorch reference.
const tol = 1e-4

func backend(t testing.TB) compute.Backend {
	t.Helper()
	b, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden holds a family's reference inputs and outputs.
type golden map[string]*tensors.Tensor

func readGolden(t testing.TB, fam string) golden {
	t.Helper()
	g, err := tensorio.ReadTensors(filepath.Join("testdata", fam, "golden.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func openSnap(t testing.TB, dir string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func flat32(t *tensors.Tensor) []float32 {
	return slices.Clone(tensors.MustCopyFlatData[float32](t))
}

func flatInt(t *tensors.Tensor) []int32 {
	return slices.Clone(tensors.MustCopyFlatData[int32](t))
}

// compareRows compares got and want ([B, T, D]) at the positions where mask is 1 (a padding
// position's output is never used, and differs between mask conventions).
func compareRows(t *testing.T, what string, got, want *tensors.Tensor, mask []int32) {
	t.Helper()
	if !slices.Equal(got.Shape().Dimensions, want.Shape().Dimensions) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape().Dimensions, want.Shape().Dimensions)
	}
	g, w := flat32(got), flat32(want)
	d := want.Shape().Dimensions[2]
	worst := 0.0
	for row, m := range mask {
		if m == 0 {
			continue
		}
		for j := range d {
			worst = max(worst, math.Abs(float64(g[row*d+j]-w[row*d+j])))
		}
	}
	if worst > tol {
		t.Errorf("%s: max |diff| %.3g > %g", what, worst, tol)
	}
	t.Logf("%s: max |diff| %.2g", what, worst)
}

// forward runs Hidden and Logits of m on tokens and mask.
func forward(t *testing.T, store *gomlxmodel.Store, m *Model, tokens, mask *tensors.Tensor) (hidden, logits *tensors.Tensor) {
	t.Helper()
	exec, err := gomlxmodel.NewExec(backend(t), store, func(scope *gomlxmodel.Scope, tok, msk *Node) (*Node, *Node) {
		h := m.Hidden(scope, tok, msk)
		return h, m.Logits(scope, h)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Exec(tokens, mask)
	if err != nil {
		t.Fatal(err)
	}
	return out[0], out[1]
}

// setAdapters loads the PEFT adapter of testdata into m's LoRA variables.
func setAdapters(t *testing.T, fam string, m *Model) map[string]*tensors.Tensor {
	t.Helper()
	ad, err := tensorio.ReadTensors(filepath.Join("testdata", fam, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	vars := m.LoRAVariables()
	if len(vars) != len(ad) {
		t.Fatalf("%d LoRA variables, the adapter file has %d tensors", len(vars), len(ad))
	}
	for k, v := range ad {
		lv, ok := vars[k]
		if !ok {
			t.Fatalf("adapter key %s has no LoRA variable", k)
		}
		if err := lv.SetValue(v); err != nil {
			t.Fatal(err)
		}
	}
	return ad
}

var testLoRA = LoRA{Rank: 4, Alpha: 8, RSLoRA: true}

func TestForwardParity(t *testing.T) {
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			gold := readGolden(t, fam)
			store := gomlxmodel.NewStore()
			m, err := Load(context.Background(), openSnap(t, filepath.Join("testdata", fam)), store, LoRA{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			hidden, logits := forward(t, store, m, gold["tokens"], gold["mask"])
			mask := flatInt(gold["mask"])
			compareRows(t, "hidden", hidden, gold["hidden"], mask)
			compareRows(t, "logits", logits, gold["logits"], mask)
		})
	}
}

// TestLoRAParity: the adapter forward equals PyTorch's PEFT forward, and the base model with the
// adapter merged into its weights (W + scale B A, on the host) equals PyTorch's merged forward.
func TestLoRAParity(t *testing.T) {
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			gold := readGolden(t, fam)
			mask := flatInt(gold["mask"])
			snap := openSnap(t, filepath.Join("testdata", fam))
			store := gomlxmodel.NewStore()
			m, err := Load(context.Background(), snap, store, testLoRA, 0)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range m.BaseVariables() {
				if v.Trainable {
					t.Fatalf("base weight %s is trainable with LoRA", k)
				}
			}
			ad := setAdapters(t, fam, m)
			_, logits := forward(t, store, m, gold["tokens"], gold["mask"])
			compareRows(t, "lora_logits", logits, gold["lora_logits"], mask)

			store2 := gomlxmodel.NewStore()
			full, err := Load(context.Background(), snap, store2, LoRA{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			merged := 0
			for key, v := range full.BaseVariables() {
				module := strings.TrimSuffix(key, ".weight")
				a, ok := ad[peft.Prefix+module+".lora_A.weight"]
				if !ok {
					continue
				}
				w := v.MustValue()
				if err := v.SetValue(mergeHost(w, a, ad[peft.Prefix+module+".lora_B.weight"], testLoRA.Scale())); err != nil {
					t.Fatal(err)
				}
				merged++
			}
			if want := len(full.Config().LoRATargets) * full.Config().Layers; merged != want {
				t.Fatalf("merged %d weights, want %d", merged, want)
			}
			_, mlogits := forward(t, store2, full, gold["tokens"], gold["mask"])
			compareRows(t, "merged_logits", mlogits, gold["merged_logits"], mask)
			compareRows(t, "lora vs merged (Go)", logits, mlogits, mask)
		})
	}
}

// mergeHost returns W + scale * B @ A for W [out, in], A [r, in], B [out, r] (float32).
func mergeHost(w, a, b *tensors.Tensor, scale float64) *tensors.Tensor {
	out, in := w.Shape().Dimensions[0], w.Shape().Dimensions[1]
	r := a.Shape().Dimensions[0]
	wv, av, bv := flat32(w), flat32(a), flat32(b)
	for i := range out {
		for j := range in {
			var s float64
			for k := range r {
				s += float64(bv[i*r+k]) * float64(av[k*in+j])
			}
			wv[i*in+j] += float32(scale * s)
		}
	}
	return tensors.FromFlatDataAndDimensions(wv, out, in)
}

// TestLossAndGradients: one training step's loss (answer-masked next-token cross-entropy) and the
// gradients of a few adapter tensors equal PyTorch's.
//
// With gradient checkpointing the same goldens hold: GoMLX differentiates a checkpointed layer
// through recomputed copies of its nodes, which the hand-written gradients of layers' decoder
// blocks (the Go backend's float32 graph) must survive.
func TestLossAndGradients(t *testing.T) {
	for _, ckpt := range []bool{false, true} {
		for _, fam := range families {
			t.Run(fmt.Sprintf("%s checkpointed %v", fam, ckpt), func(t *testing.T) {
				testLossAndGradients(t, fam, Compute{GradientCheckpointing: ckpt})
			})
		}
	}
}

func testLossAndGradients(t *testing.T, fam string, c Compute) {
	gold := readGolden(t, fam)
	store := gomlxmodel.NewStore()
	m, err := Load(context.Background(), openSnap(t, filepath.Join("testdata", fam)), store, testLoRA, 0)
	if err != nil {
		t.Fatal(err)
	}
	setAdapters(t, fam, m)
	m.SetCompute(c)
	var keys []string
	for k := range gold {
		if strings.HasPrefix(k, "grad.") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		t.Fatal("golden file has no gradients")
	}
	vars := m.LoRAVariables()
	exec, err := gomlxmodel.NewExec(backend(t), store, func(scope *gomlxmodel.Scope, tok, msk, labels *Node) []*Node {
		loss := CausalLMLoss(m.Logits(scope, m.Hidden(scope, tok, msk)), labels)
		var wrt []*Node
		for _, k := range keys {
			wrt = append(wrt, vars[strings.TrimPrefix(k, "grad.")].ValueGraph(tok.Graph()))
		}
		return append([]*Node{loss}, Gradient(loss, wrt...)...)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Exec(gold["tokens"], gold["mask"], gold["labels"])
	if err != nil {
		t.Fatal(err)
	}
	gotLoss, wantLoss := flat32(out[0])[0], flat32(gold["loss"])[0]
	if math.Abs(float64(gotLoss-wantLoss)) > tol {
		t.Errorf("loss %.7f, want %.7f", gotLoss, wantLoss)
	}
	t.Logf("loss %.7f, reference %.7f", gotLoss, wantLoss)
	for i, k := range keys {
		g, w := flat32(out[i+1]), flat32(gold[k])
		if len(g) != len(w) {
			t.Fatalf("%s: %d values, want %d", k, len(g), len(w))
		}
		worst, scale := 0.0, 0.0
		for j := range g {
			worst = max(worst, math.Abs(float64(g[j]-w[j])))
			scale = max(scale, math.Abs(float64(w[j])))
		}
		if worst > tol {
			t.Errorf("%s: max |diff| %.3g > %g (max |grad| %.3g)", k, worst, tol, scale)
		}
		t.Logf("%s: max |diff| %.2g (max |grad| %.2g)", k, worst, scale)
	}
}

// TestKVCacheDecode: a prefill of the prompt then one token per step gives the logits of the full
// forward at every position, for every family (mistral's window is shorter than the sequence).
func TestKVCacheDecode(t *testing.T) {
	for _, fam := range families {
		for _, bf16 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s bf16 %v", fam, bf16), func(t *testing.T) { kvCacheDecode(t, fam, bf16) })
		}
	}
}

// kvCacheDecode is TestKVCacheDecode of one family: in bf16 (a bf16 cache) against the bf16 full
// forward, within bf16RelTol of its largest logit.
func kvCacheDecode(t *testing.T, fam string, bf16 bool) {
	gold := readGolden(t, fam)
	store := gomlxmodel.NewStore()
	m, err := Load(context.Background(), openSnap(t, filepath.Join("testdata", fam)), store, testLoRA, 0)
	if err != nil {
		t.Fatal(err)
	}
	setAdapters(t, fam, m)
	m.SetCompute(Compute{BF16: bf16})
	// The whole golden batch (right and left padding): positions 0..T-1 as in the full
	// forward, the padding slots masked in the cache.
	tokAll, maskAll := flatInt(gold["tokens"]), flatInt(gold["mask"])
	dims := gold["tokens"].Shape().Dimensions
	B, T, V := dims[0], dims[1], m.Config().Vocab
	want := flat32(gold["lora_logits"])
	limit := tol
	if bf16 {
		_, logits := forward(t, store, m, gold["tokens"], gold["mask"])
		want = flat32(logits)
		_, scale := maxDiff(want, want)
		limit = bf16RelTol * scale
	}
	const prompt = 4
	maxLen := T + 2 // a cache longer than the sequence: unused slots stay masked
	cache := m.NewCacheTensors(B, maxLen)
	nCache := len(cache)
	stepExec := func() *gomlxmodel.Exec {
		e, err := gomlxmodel.NewExec(backend(t), store, func(scope *gomlxmodel.Scope, g *Graph, in []*Node) []*Node {
			tok, pos, keyMask, off := in[0], in[1], in[2], in[3]
			h, next := m.Step(scope, m.CacheFrom(in[4:]), tok, pos, keyMask, off)
			return append([]*Node{m.Logits(scope, h)}, next.Flatten()...)
		})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	prefill, one := stepExec(), stepExec()
	got := make([]float32, B*T*V)
	for start := 0; start < T; {
		s, e := 1, one
		if start == 0 {
			s, e = prompt, prefill
		}
		tok := make([]int32, B*s)
		pos := make([]int32, B*s)
		km := make([]float32, B*maxLen)
		for b := range B {
			for i := range s {
				tok[b*s+i] = tokAll[b*T+start+i]
				pos[b*s+i] = int32(start + i)
			}
			for i := 0; i < start+s; i++ {
				km[b*maxLen+i] = float32(maskAll[b*T+i])
			}
		}
		args := []any{tensors.FromFlatDataAndDimensions(tok, B, s), tensors.FromFlatDataAndDimensions(pos, B, s),
			tensors.FromFlatDataAndDimensions(km, B, maxLen), int32(start)}
		for _, c := range cache {
			args = append(args, c)
		}
		out, err := e.Exec(args...)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 1+nCache {
			t.Fatalf("%d outputs, want %d", len(out), 1+nCache)
		}
		lg := flat32(out[0]) // [B, s, V]
		for b := range B {
			copy(got[(b*T+start)*V:(b*T+start+s)*V], lg[b*s*V:(b+1)*s*V])
		}
		cache = out[1:]
		start += s
	}
	worst := 0.0
	for row, mk := range maskAll {
		if mk == 0 {
			continue
		}
		for j := range V {
			worst = max(worst, math.Abs(float64(got[row*V+j]-want[row*V+j])))
		}
	}
	if worst > limit {
		t.Errorf("cached decode vs full forward: max |diff| %.3g > %g", worst, limit)
	}
	t.Logf("cached decode vs full forward: max |diff| %.3g", worst)
}

// TestTrainableFlags: with LoRA the base is frozen and the adapters (float32, B zero, A within
// PEFT's kaiming bound) are trainable; with rank 0 everything is trainable float32.
func TestTrainableFlags(t *testing.T) {
	snap := openSnap(t, filepath.Join("testdata", "llama"))
	store := gomlxmodel.NewStore()
	m, err := Load(context.Background(), snap, store, LoRA{Rank: 2, Alpha: 4, TargetModules: []string{"q_proj", "v_proj"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	lv := m.LoRAVariables()
	if len(lv) != 2*2*m.Config().Layers {
		t.Fatalf("%d LoRA variables, want %d", len(lv), 4*m.Config().Layers)
	}
	for k, v := range lv {
		if !v.Trainable || v.DType() != dtypes.Float32 {
			t.Errorf("%s: trainable %v dtype %s", k, v.Trainable, v.DType())
		}
		if !strings.HasPrefix(k, peft.Prefix+"model.layers.") {
			t.Errorf("%s: not a PEFT key", k)
		}
		vals := flat32(v.MustValue())
		if strings.HasSuffix(k, "lora_B.weight") {
			for _, x := range vals {
				if x != 0 {
					t.Fatalf("%s: B not zero", k)
				}
			}
		} else {
			bound := float32(1 / math.Sqrt(float64(v.Shape().Dimensions[1])))
			for _, x := range vals {
				if x < -bound || x > bound {
					t.Fatalf("%s: %g outside ±%g", k, x, bound)
				}
			}
		}
	}
	for k, v := range m.BaseVariables() {
		if v.Trainable {
			t.Errorf("base %s trainable", k)
		}
	}
	store2 := gomlxmodel.NewStore()
	m2, err := Load(context.Background(), snap, store2, LoRA{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(m2.LoRAVariables()) != 0 {
		t.Error("rank 0 has adapters")
	}
	for k, v := range m2.BaseVariables() {
		if !v.Trainable {
			t.Errorf("rank 0: base %s frozen", k)
		}
	}
	if got, want := (LoRA{Rank: 16, Alpha: 16, RSLoRA: true}).Scale(), 4.0; got != want {
		t.Errorf("rsLoRA scale %g, want %g", got, want)
	}
	if got, want := (LoRA{Rank: 16, Alpha: 32}).Scale(), 2.0; got != want {
		t.Errorf("scale %g, want %g", got, want)
	}
}

// copySnapshot copies testdata/<fam> to a temporary directory, applying edit to its tensors
// (nil: unchanged) and configEdit to its config.json text.
func copySnapshot(t *testing.T, fam string, edit func(map[string]*tensors.Tensor), configEdit func(string) string) string {
	t.Helper()
	src := filepath.Join("testdata", fam)
	dir := t.TempDir()
	for _, name := range []string{"config.json", "tokenizer.json", "tokenizer_config.json"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "config.json" && configEdit != nil {
			data = []byte(configEdit(string(data)))
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := tensorio.ReadTensors(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(ts)
	}
	if err := tensorio.WriteTensors(filepath.Join(dir, "model.safetensors"), ts); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadErrors(t *testing.T) {
	const key = "model.layers.1.mlp.up_proj.weight"
	cases := []struct {
		desc       string
		edit       func(map[string]*tensors.Tensor)
		configEdit func(string) string
		want       string
	}{
		{desc: "missing tensor", edit: func(ts map[string]*tensors.Tensor) { delete(ts, key) },
			want: "missing tensor " + key},
		{desc: "wrong shape", edit: func(ts map[string]*tensors.Tensor) {
			ts[key] = tensors.FromShape(shapes.Make(dtypes.Float32, 64, 31))
		}, want: key + ": shape [64 31], want [64 32]"},
		{desc: "non-finite weight", edit: func(ts map[string]*tensors.Tensor) {
			v := flat32(ts[key])
			v[5] = float32(math.Inf(1))
			ts[key] = tensors.FromFlatDataAndDimensions(v, 64, 32)
		}, want: "tensor " + key + ": value 5 is +Inf"},
		{desc: "unsupported model_type", configEdit: func(s string) string {
			return strings.Replace(s, `"model_type": "llama"`, `"model_type": "gpt2"`, 1)
		}, want: "gpt2"},
		{desc: "encoder model_type", configEdit: func(s string) string {
			return strings.Replace(s, `"model_type": "llama"`, `"model_type": "bert"`, 1)
		}, want: `model_type "bert" is not a causal LM`},
		{desc: "unsupported rope type", configEdit: func(s string) string {
			return strings.Replace(s, `"rope_type": "llama3"`, `"rope_type": "yarn"`, 1)
		}, want: `rope_scaling type "yarn" is not supported`},
		{desc: "kv heads not dividing heads", configEdit: func(s string) string {
			return strings.Replace(s, `"num_key_value_heads": 2`, `"num_key_value_heads": 3`, 1)
		}, want: "num_key_value_heads = 3 does not divide"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			dir := copySnapshot(t, "llama", tc.edit, tc.configEdit)
			s, err := snapshot.Open(dir)
			if err == nil {
				_, err = Load(context.Background(), s, gomlxmodel.NewStore(), testLoRA, 0)
			}
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line containing %q", msg, tc.want)
			}
		})
	}
}

// TestHalfPrecisionWeights: bf16 and f16 checkpoints load in their dtype when frozen (converted
// to float32 in the graph) and as float32 when trained; both give the same logits.
func TestHalfPrecisionWeights(t *testing.T) {
	for _, dt := range []dtypes.DType{dtypes.BFloat16, dtypes.Float16} {
		t.Run(dt.String(), func(t *testing.T) {
			dir := t.TempDir()
			err := randsnap.WriteDecoder(dir, randsnap.Decoder{ModelType: "qwen2", Vocab: 64, Hidden: 16, Layers: 2,
				Heads: 4, KVHeads: 2, Intermediate: 32, DType: dt, Seed: 3, Std: 0.2})
			if err != nil {
				t.Fatal(err)
			}
			snap := openSnap(t, dir)
			tokens := tensors.FromFlatDataAndDimensions([]int32{5, 9, 3, 17, 40, 2, 8, 11}, 2, 4)
			mask := tensors.FromFlatDataAndDimensions([]int32{1, 1, 1, 1, 1, 1, 1, 0}, 2, 4)
			frozenStore := gomlxmodel.NewStore()
			frozen, err := Load(context.Background(), snap, frozenStore, LoRA{Rank: 2, Alpha: 2}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := frozen.BaseVariables()["model.layers.0.self_attn.q_proj.weight"].DType(); got != dt {
				t.Errorf("frozen base dtype %s, want %s", got, dt)
			}
			fullStore := gomlxmodel.NewStore()
			full, err := Load(context.Background(), snap, fullStore, LoRA{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := full.BaseVariables()["model.layers.0.self_attn.q_proj.weight"].DType(); got != dtypes.Float32 {
				t.Errorf("trainable base dtype %s, want float32", got)
			}
			_, a := forward(t, frozenStore, frozen, tokens, mask)
			_, b := forward(t, fullStore, full, tokens, mask)
			if !slices.Equal(flat32(a), flat32(b)) {
				t.Error("logits differ between the half-precision and the float32 store")
			}
		})
	}
}

// TestLoRADropout: the adapters' dropout acts in training graphs only.
func TestLoRADropout(t *testing.T) {
	gold := readGolden(t, "llama")
	store := gomlxmodel.NewStore()
	lora := testLoRA
	lora.Dropout = 0.5
	m, err := Load(context.Background(), openSnap(t, filepath.Join("testdata", "llama")), store, lora, 0)
	if err != nil {
		t.Fatal(err)
	}
	setAdapters(t, "llama", m)
	run := func(training bool) []float32 {
		exec, err := gomlxmodel.NewExec(backend(t), store, func(scope *gomlxmodel.Scope, tok, msk *Node) *Node {
			scope.Store().SetTraining(tok.Graph(), training)
			return m.Logits(scope, m.Hidden(scope, tok, msk))
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Exec(gold["tokens"], gold["mask"])
		if err != nil {
			t.Fatal(err)
		}
		return flat32(out[0])
	}
	eval, train := run(false), run(true)
	want := flat32(gold["lora_logits"])
	worst := 0.0
	for i := range want {
		worst = max(worst, math.Abs(float64(eval[i]-want[i])))
	}
	if worst > tol { // padding positions included: with every key masked both give uniform attention
		t.Errorf("eval graph with dropout differs from the reference by %.3g", worst)
	}
	if slices.Equal(eval, train) {
		t.Error("training graph equals the eval graph: dropout not applied")
	}
	for _, v := range train {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatal("non-finite logits in training")
		}
	}
}

// TestSnapshotHugeLayerCount: issue 22 defect 2 and its rough edges. A config.json claiming 1e9
// layers grew a per-layer table to 21 GB before any check; the layer count is now compared with
// the weights' headers first (and sizes with sane limits), so the error comes at once. A config
// with fewer layers than its weights, or a non-positive rms_norm_eps or rope_theta, is refused
// instead of ignoring layers or training to NaN.
func TestSnapshotHugeLayerCount(t *testing.T) {
	set := func(key, value string) func(string) string {
		return func(s string) string {
			i := strings.Index(s, `"`+key+`": `)
			if i < 0 {
				t.Fatalf("config has no %s", key)
			}
			j := i + strings.IndexAny(s[i:], ",\n")
			return s[:i] + `"` + key + `": ` + value + s[j:]
		}
	}
	cases := []struct {
		desc, key, value, want string
	}{
		{"a billion layers", "num_hidden_layers", "1000000000", "num_hidden_layers = 1000000000 is beyond any real model (limit 4096)"},
		{"more layers than the weights", "num_hidden_layers", "3", "num_hidden_layers = 3, but the weights hold 2 layers (model.layers.*): the config does not match its weights"},
		{"fewer layers than the weights", "num_hidden_layers", "1", "num_hidden_layers = 1, but the weights hold 2 layers (model.layers.*): the extra layers would be ignored"},
		{"huge vocab", "vocab_size", "1000000000000", "vocab_size = 1000000000000 is beyond any real model"},
		{"zero rms_norm_eps", "rms_norm_eps", "0", "rms_norm_eps = 0, want a positive number"},
		{"negative rope_theta", "rope_theta", "-10", "rope_theta = -10, want a positive number"},
		{"huge context", "max_position_embeddings", "1000000000000", "max_position_embeddings = 1000000000000, want 1 to 16777216"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			dir := copySnapshot(t, "llama", nil, set(tc.key, tc.value))
			s := openSnap(t, dir)
			start := time.Now()
			_, err := Load(context.Background(), s, gomlxmodel.NewStore(), testLoRA, 0)
			if err == nil {
				t.Fatal("no error")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the error took %v", d)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") ||
				!strings.HasPrefix(msg, filepath.Join(dir, "config.json")+": ") {
				t.Errorf("error %q, want one line naming config.json and containing %q", msg, tc.want)
			}
		})
	}
}
