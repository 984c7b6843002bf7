package peft

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/go-huggingface/hub"
	"github.com/gomlx/go-huggingface/models/safetensors"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/config"
)

func mat(rows, cols int, v ...float32) *tensors.Tensor {
	return tensors.FromFlatDataAndDimensions(v, rows, cols)
}

func flat(t *testing.T, x *tensors.Tensor) []float32 {
	t.Helper()
	v, err := toFloat32(x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const q = "model.layers.0.self_attn.q_proj"

// handAdapter is the adapter of TestMergeByHand: r=2 on q_proj, W [2, 3].
func handAdapter(alpha float64, rslora bool) *Adapter {
	l := config.LoRA{Rank: 2, Alpha: alpha, RSLoRA: rslora, TargetModules: []string{"q_proj"}}
	return &Adapter{
		Config: NewConfig(l, TaskCausalLM, "/models/base", nil),
		Tensors: map[string]*tensors.Tensor{
			Prefix + q + SuffixA: mat(2, 3, 1, 0, 1, 0, 1, 0),
			Prefix + q + SuffixB: mat(2, 2, 1, 2, 0, -1),
		},
	}
}

// TestMergeByHand checks W + scale * B @ A against products worked out on paper:
// B @ A = [[1 2] [0 -1]] @ [[1 0 1] [0 1 0]] = [[1 2 1] [0 -1 0]].
func TestMergeByHand(t *testing.T) {
	w := mat(2, 3, 1, 2, 3, 4, 5, 6)
	for _, tc := range []struct {
		desc   string
		alpha  float64
		rslora bool
		want   []float32
	}{
		{"alpha/r = 1", 2, false, []float32{2, 4, 4, 4, 4, 6}},
		{"alpha/r = 3", 6, false, []float32{4, 8, 6, 4, 2, 6}},
		// rsLoRA: alpha/sqrt(2) = 0.5 for alpha = sqrt(2)/2.
		{"rslora alpha/sqrt(r) = 0.5", 0.7071067811865476, true, []float32{1.5, 3, 3.5, 4, 4.5, 6}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			merged, err := Merge(map[string]*tensors.Tensor{q + ".weight": w, "model.norm.weight": mat(1, 3, 1, 1, 1)}, handAdapter(tc.alpha, tc.rslora))
			if err != nil {
				t.Fatal(err)
			}
			if got := flat(t, merged[q+".weight"]); !slices.Equal(got, tc.want) {
				t.Errorf("merged %v, want %v", got, tc.want)
			}
			if got := flat(t, w); !slices.Equal(got, []float32{1, 2, 3, 4, 5, 6}) {
				t.Errorf("base changed in place: %v", got)
			}
			if len(merged) != 2 {
				t.Errorf("merged has %d tensors, want 2", len(merged))
			}
		})
	}
}

// TestMergeBFloat16 checks that a bf16 weight is merged in float32 and rounded once, to nearest
// even: 1 + 3*2^-8 lies halfway between the bf16 values 1+2^-7 and 1+2^-6 and goes to the even
// one, 1+2^-6; 2 + 2^-9 rounds down to 2.
func TestMergeBFloat16(t *testing.T) {
	w := tensors.FromFlatDataAndDimensions([]bfloat16.BFloat16{bfloat16.FromFloat32(1), bfloat16.FromFloat32(2)}, 2, 1)
	l := config.LoRA{Rank: 1, Alpha: 1, TargetModules: []string{"q_proj"}}
	a := &Adapter{Config: NewConfig(l, TaskCausalLM, "b", nil), Tensors: map[string]*tensors.Tensor{
		Prefix + q + SuffixA: mat(1, 1, 1),
		Prefix + q + SuffixB: mat(2, 1, 3.0/256, 1.0/512),
	}}
	merged, err := Merge(map[string]*tensors.Tensor{q + ".weight": w}, a)
	if err != nil {
		t.Fatal(err)
	}
	m := merged[q+".weight"]
	if m.DType() != dtypes.BFloat16 {
		t.Fatalf("dtype %s, want the base's bf16", m.DType())
	}
	if got := flat(t, m); !slices.Equal(got, []float32{1 + 1.0/64, 2}) {
		t.Errorf("merged %v, want [1.015625 2]", got)
	}
}

// TestWriteRead checks the PEFT layout: the config's field names and values, the tensors' keys,
// bit-identical values, a head in modules_to_save, and that writing again replaces the adapter.
func TestWriteRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "adapter")
	a := handAdapter(16, true)
	a.Config = NewConfig(config.LoRA{Rank: 2, Alpha: 16, RSLoRA: true, TargetModules: config.LoRATargetsLlama}, TaskSeqCls, "/models/llama", []string{"score"})
	a.Tensors[Prefix+"score.weight"] = mat(1, 3, 0.5, -0.25, 0.125)
	if err := Write(dir, a); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"peft_type": "LORA", "r": 2.0, "lora_alpha": 16.0, "lora_dropout": 0.0, "use_rslora": true,
		"bias": "none", "task_type": "SEQ_CLS", "base_model_name_or_path": "/models/llama", "fan_in_fan_out": false,
		"inference_mode": true}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("adapter_config.json %s = %v, want %v", k, fields[k], v)
		}
	}
	if got, _ := json.Marshal(fields["target_modules"]); string(got) != `["q_proj","k_proj","v_proj","o_proj","gate_proj","up_proj","down_proj"]` {
		t.Errorf("target_modules %s", got)
	}
	if got, _ := json.Marshal(fields["modules_to_save"]); string(got) != `["score"]` {
		t.Errorf("modules_to_save %s", got)
	}
	back, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := back.Config.Scale(), 16/math.Sqrt2; math.Abs(got-want) > 1e-12 {
		t.Errorf("scale %g, want 16/sqrt(2) = %g", got, want)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range back.Tensors {
			if !yield(k) {
				return
			}
		}
	})
	wantKeys := []string{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight",
		"base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", "base_model.model.score.weight"}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("keys %v, want %v", keys, wantKeys)
	}
	for k, v := range a.Tensors {
		if !slices.Equal(flat(t, back.Tensors[k]), flat(t, v)) || !back.Tensors[k].Shape().Equal(v.Shape()) {
			t.Errorf("%s: read back %v, wrote %v", k, back.Tensors[k], v)
		}
	}
	// An independent reader: go-huggingface's safetensors package on the adapter directory.
	st, err := safetensors.New(hub.NewLocal(dir))
	if err != nil {
		t.Fatalf("go-huggingface: %v", err)
	}
	for k, v := range a.Tensors {
		g, err := st.GetTensor(nil, k)
		if err != nil {
			t.Fatalf("go-huggingface: %v", err)
		}
		if !slices.Equal(flat(t, g.Tensor), flat(t, v)) {
			t.Errorf("go-huggingface reads %s as %v, wrote %v", k, g.Tensor, v)
		}
	}
	if s := back.Saved(); len(s) != 1 || s["score.weight"] == nil {
		t.Errorf("saved %v, want score.weight", s)
	}
	// A second write replaces the first; a directory with other files is refused.
	delete(a.Tensors, Prefix+"score.weight")
	a.Config.ModulesToSave = nil
	if err := Write(dir, a); err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	if back, err := Read(dir); err != nil || len(back.Tensors) != 2 {
		t.Errorf("after rewrite: %v tensors, %v", len(back.Tensors), err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("x"), 0o644)
	if err := Write(other, a); err == nil || !strings.Contains(err.Error(), "holds notes.txt") {
		t.Errorf("write over a foreign directory: %v", err)
	}
}

// TestAdapterErrors checks the one-line errors for adapters that cannot be written, read or merged.
func TestAdapterErrors(t *testing.T) {
	base := map[string]shapes.Shape{q + ".weight": shapes.Make(dtypes.Float32, 2, 3)}
	for _, tc := range []struct {
		desc string
		edit func(a *Adapter)
		want string
	}{
		{"missing B", func(a *Adapter) { delete(a.Tensors, Prefix+q+SuffixB) }, "lora_B.weight is missing"},
		{"A with the wrong rank", func(a *Adapter) { a.Tensors[Prefix+q+SuffixA] = mat(1, 3, 1, 2, 3) }, "want [r=2, in]"},
		{"stray tensor", func(a *Adapter) { a.Tensors[Prefix+"lm_head.weight"] = mat(1, 1, 1) }, "nor in modules_to_save"},
		{"no base prefix", func(a *Adapter) { a.Tensors[q+SuffixA] = a.Tensors[Prefix+q+SuffixA] }, `does not start with "base_model.model."`},
		{"module absent from the base", func(a *Adapter) {
			a.Tensors[Prefix+"model.layers.1.self_attn.q_proj"+SuffixA] = mat(2, 3, 1, 0, 1, 0, 1, 0)
			a.Tensors[Prefix+"model.layers.1.self_attn.q_proj"+SuffixB] = mat(2, 2, 1, 2, 0, -1)
		}, "the base has no weight model.layers.1.self_attn.q_proj.weight"},
		{"shape against the base", func(a *Adapter) {
			a.Tensors[Prefix+q+SuffixA] = mat(2, 2, 1, 0, 1, 0)
		}, "want [2 2]"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			a := handAdapter(2, false)
			tc.edit(a)
			_, err := NewMerger(a, base)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		desc, json, want string
	}{
		{"regex targets", `{"peft_type":"LORA","task_type":"CAUSAL_LM","r":2,"lora_alpha":2,"bias":"none","target_modules":".*q_proj"}`, "regular expression"},
		{"dora", `{"peft_type":"LORA","task_type":"CAUSAL_LM","r":2,"lora_alpha":2,"bias":"none","target_modules":["q_proj"],"use_dora":true}`, "DoRA"},
		{"rank pattern", `{"peft_type":"LORA","task_type":"CAUSAL_LM","r":2,"lora_alpha":2,"bias":"none","target_modules":["q_proj"],"rank_pattern":{"q_proj":4}}`, "rank_pattern"},
		{"prefix tuning", `{"peft_type":"PREFIX_TUNING","task_type":"CAUSAL_LM","r":2,"lora_alpha":2,"bias":"none","target_modules":["q_proj"]}`, `peft_type "PREFIX_TUNING"`},
		{"lora bias", `{"peft_type":"LORA","task_type":"CAUSAL_LM","r":2,"lora_alpha":2,"bias":"all","target_modules":["q_proj"]}`, `bias "all"`},
		{"not json", `{`, "not valid JSON"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, ConfigFile), []byte(tc.json), 0o644)
			_, err := Read(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line containing %q", err, tc.want)
			}
		})
	}
	if _, err := Read(t.TempDir()); err == nil || !strings.Contains(err.Error(), "adapter_config.json is missing") {
		t.Errorf("empty dir: %v", err)
	}
	// A NaN in an adapter would spread through every merged weight of its module.
	a := handAdapter(2, false)
	a.Tensors[Prefix+q+SuffixB] = mat(2, 2, 1, float32(math.NaN()), 0, -1)
	dir := filepath.Join(t.TempDir(), "nan")
	if err := Write(dir, a); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "tensor "+Prefix+q+SuffixB+": value 1 is NaN") {
		t.Errorf("NaN in lora_B: err = %v", err)
	}
}

// TestMergeKeyMatching checks the suffix matching of module names to base keys (an adapter saved on
// BertModel merged into a BertForPreTraining file) and a classification head added to a base that
// has none, in the base's dtype.
func TestMergeKeyMatching(t *testing.T) {
	bq := "encoder.layer.0.attention.self.query"
	half := func(v ...float32) *tensors.Tensor {
		out := make([]bfloat16.BFloat16, len(v))
		for i, x := range v {
			out[i] = bfloat16.FromFloat32(x)
		}
		return tensors.FromFlatDataAndDimensions(out, 1, len(v))
	}
	base := map[string]*tensors.Tensor{"bert." + bq + ".weight": half(1, 2), "bert.pooler.dense.weight": half(3, 4)}
	l := config.LoRA{Rank: 1, Alpha: 1, TargetModules: []string{"query"}}
	a := &Adapter{Config: NewConfig(l, TaskSeqCls, "b", []string{"classifier"}), Tensors: map[string]*tensors.Tensor{
		Prefix + bq + SuffixA:            mat(1, 2, 1, 1),
		Prefix + bq + SuffixB:            mat(1, 1, 0.5),
		Prefix + "classifier.weight":     mat(2, 2, 1, 2, 3, 4),
		Prefix + "classifier.bias":       tensors.FromFlatDataAndDimensions([]float32{0.5, -0.5}, 2),
		Prefix + "bert.pooler.dense.bia": mat(1, 1, 1), // not a module to save
	}}
	if _, err := Merge(base, a); err == nil || !strings.Contains(err.Error(), "nor in modules_to_save") {
		t.Fatalf("stray tensor: %v", err)
	}
	delete(a.Tensors, Prefix+"bert.pooler.dense.bia")
	merged, err := Merge(base, a)
	if err != nil {
		t.Fatal(err)
	}
	if got := flat(t, merged["bert."+bq+".weight"]); !slices.Equal(got, []float32{1.5, 2.5}) {
		t.Errorf("query merged %v, want [1.5 2.5]", got)
	}
	c := merged["classifier.weight"]
	if c == nil || c.DType() != dtypes.BFloat16 || !slices.Equal(flat(t, c), []float32{1, 2, 3, 4}) {
		t.Errorf("classifier.weight %v, want [[1 2] [3 4]] in bf16", c)
	}
	if merged["bert.pooler.dense.weight"] != base["bert.pooler.dense.weight"] {
		t.Error("an untouched tensor was copied")
	}
	// Two base keys ending with the module: ambiguous.
	base["other."+bq+".weight"] = half(0, 0)
	if _, err := Merge(base, a); err == nil || !strings.Contains(err.Error(), "matches several base weights") {
		t.Errorf("ambiguous: %v", err)
	}
}
