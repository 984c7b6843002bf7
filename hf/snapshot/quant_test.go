package snapshot

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/hf/quant"
)

// nf4Config is a bert config.json with the quantization_config transformers writes for
// load_in_4bit, nf4, double quantization.
const nf4Config = `{"model_type": "bert", "hidden_size": 2, "quantization_config": {"quant_method": "bitsandbytes",
	"_load_in_4bit": true, "_load_in_8bit": false, "load_in_4bit": true, "load_in_8bit": false,
	"bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true, "bnb_4bit_compute_dtype": "bfloat16",
	"bnb_4bit_quant_storage": "uint8", "llm_int8_skip_modules": null}}`

const nf4Name = "encoder.layer.0.attention.self.query.weight"

// nf4Weights returns goodWeights plus nf4Name [8, 24] quantized (nested or not), its values
// before quantization, and the quant_state JSON bitsandbytes writes for it.
func nf4Weights(t testing.TB, nested bool) (map[string]rawTensor, *quant.Weight) {
	t.Helper()
	vals := make([]float32, 8*24)
	for i := range vals {
		vals[i] = float32(math.Sin(float64(i))) * 0.05
	}
	q, err := quant.QuantizeNF4(vals, []int{8, 24}, 64, nested)
	if err != nil {
		t.Fatal(err)
	}
	w := goodWeights()
	w[nf4Name] = rawTensor{"U8", []int{len(q.Packed), 1}, q.Packed}
	w[nf4Name+".quant_map"] = rawTensor{"F32", []int{16}, f32Bytes(quant.NF4[:]...)}
	qs := `{"quant_type": "nf4", "blocksize": 64, "dtype": "float32", "shape": [8, 24]}`
	if nested {
		w[nf4Name+".absmax"] = rawTensor{"U8", []int{len(q.Nested.Codes)}, q.Nested.Codes}
		w[nf4Name+".nested_absmax"] = rawTensor{"F32", []int{len(q.Nested.Absmax)}, f32Bytes(q.Nested.Absmax...)}
		w[nf4Name+".nested_quant_map"] = rawTensor{"F32", []int{256}, f32Bytes(q.Nested.Code[:]...)}
		qs = `{"quant_type": "nf4", "blocksize": 64, "dtype": "float32", "shape": [8, 24], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": ` +
			formatFloat(q.Nested.Offset) + `}`
	} else {
		w[nf4Name+".absmax"] = rawTensor{"F32", []int{len(q.Absmax)}, f32Bytes(q.Absmax...)}
	}
	w[nf4Name+".quant_state.bitsandbytes__nf4"] = rawTensor{"U8", []int{len(qs)}, []byte(qs)}
	return w, q
}

func formatFloat(f float32) string { return jsonText(float64(f)) }

func nf4Snapshot(t *testing.T, config string, w map[string]rawTensor) string {
	t.Helper()
	dir := makeSnapshot(t)
	writeFile(t, filepath.Join(dir, ConfigFile), config)
	writeSafetensors(t, filepath.Join(dir, WeightsFile), w)
	return dir
}

// TestNF4WeightsReadDequantized: a bitsandbytes 4-bit weight is listed, shaped and read as the
// tensor it was before quantization (its companions hidden), with the values dequantize_4bit
// gives, nested or not.
func TestNF4WeightsReadDequantized(t *testing.T) {
	for _, nested := range []bool{true, false} {
		w, q := nf4Weights(t, nested)
		s, err := Open(nf4Snapshot(t, nf4Config, w))
		if err != nil {
			t.Fatal(err)
		}
		if s.Quant == nil || s.Quant.QuantType != "nf4" || !s.Quant.DoubleQuant || s.Quant.ComputeDType != dtypes.BFloat16 {
			t.Fatalf("Quant = %+v", s.Quant)
		}
		want := []string{"embeddings.word_embeddings.weight", nf4Name, "encoder.layer.0.output.dense.bias", "pooler.dense.bias"}
		if got := s.Names(); !slices.Equal(got, want) {
			t.Errorf("Names() = %v, want %v", got, want)
		}
		if sh, ok := s.Shape(nf4Name); !ok || sh.DType != dtypes.Float32 || !slices.Equal(sh.Dimensions, []int{8, 24}) {
			t.Errorf("Shape(%s) = %v", nf4Name, sh)
		}
		ts, err := s.Tensors(context.Background(), func(n string) bool { return n == nf4Name })
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 1 {
			t.Fatalf("read %d tensors, want 1", len(ts))
		}
		wantVals := make([]float32, q.Len())
		if err := q.Dequantize(wantVals); err != nil {
			t.Fatal(err)
		}
		if got := tensors.MustCopyFlatData[float32](ts[nf4Name]); !slices.Equal(got, wantVals) {
			t.Errorf("nested %v: dequantized values differ", nested)
		}
	}
}

// TestNF4HostileSnapshots: quantization configs and tensors that lie are refused with one line
// naming the file, at Open (from the headers and the quant_state blob, before any allocation
// sized by them) or, for values only the data shows, when read.
func TestNF4HostileSnapshots(t *testing.T) {
	qsKey := nf4Name + ".quant_state.bitsandbytes__nf4"
	setQS := func(qs string) func(map[string]rawTensor) {
		return func(w map[string]rawTensor) { w[qsKey] = rawTensor{"U8", []int{len(qs)}, []byte(qs)} }
	}
	for _, tc := range []struct {
		desc   string
		config string
		nested bool
		edit   func(map[string]rawTensor)
		atRead bool
		want   string
	}{
		{desc: "8-bit", config: strings.Replace(nf4Config, `"load_in_8bit": false`, `"load_in_8bit": true`, 1),
			want: "quantization_config load_in_8bit: bitsandbytes' 8-bit (LLM.int8) weights are not supported"},
		{desc: "fp4 config", config: strings.Replace(nf4Config, `"nf4"`, `"fp4"`, 1),
			want: `quantization_config bnb_4bit_quant_type "fp4" is not supported (only nf4)`},
		{desc: "another method", config: strings.Replace(nf4Config, `"bitsandbytes"`, `"gptq"`, 1),
			want: `quantization_config quant_method "gptq" is not supported`},
		{desc: "no quantization_config", config: `{"model_type": "bert", "hidden_size": 2}`, nested: true,
			want: "is bitsandbytes-quantized, but config.json has no quantization_config"},
		{desc: "fp4 tensor", nested: true, edit: func(w map[string]rawTensor) {
			w[nf4Name+".quant_state.bitsandbytes__fp4"] = w[qsKey]
			delete(w, qsKey)
		}, want: "fp4 weights are not supported (only nf4)"},
		{desc: "packed size", nested: true, edit: func(w map[string]rawTensor) {
			w[nf4Name] = rawTensor{"U8", []int{10, 1}, make([]byte, 10)}
		}, want: "tensor " + nf4Name + " is Uint8 [10 1], want Uint8 of 96 values"},
		{desc: "quant_state shape lies", nested: true, edit: setQS(`{"quant_type": "nf4", "blocksize": 64, "dtype": "float32", "shape": [100000, 100000], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 0.01}`),
			want: "want Uint8 of 5000000000 values (quant_state shape [100000 100000], blocksize 64)"},
		{desc: "quant_state shape overflows", nested: true, edit: setQS(`{"quant_type": "nf4", "blocksize": 64, "dtype": "float32", "shape": [4294967296, 4294967296], "nested_offset": 0.01}`),
			want: "quant_state shape [4294967296 4294967296]: want positive dimensions"},
		{desc: "quant_state blocksize", nested: true, edit: setQS(`{"quant_type": "nf4", "blocksize": 0, "dtype": "float32", "shape": [8, 24]}`),
			want: "quant_state blocksize 0, want one of"},
		{desc: "quant_state not JSON", nested: true, edit: setQS(`{"quant_type": "nf4", "nested_offset": NaN}`),
			want: "quant_state is not the JSON bitsandbytes writes"},
		{desc: "quant_state too long", nested: true, edit: setQS(`{"quant_type": "nf4"` + strings.Repeat(" ", 5000) + `}`),
			want: "quant_state Uint8 [5021]: want U8 JSON of at most 4096 bytes"},
		{desc: "nesting disagrees", nested: true, edit: setQS(`{"quant_type": "nf4", "blocksize": 64, "dtype": "float32", "shape": [8, 24]}`),
			want: "quant_state and tensors disagree on double quantization"},
		{desc: "missing companion", nested: true, edit: func(w map[string]rawTensor) { delete(w, nf4Name+".nested_quant_map") },
			want: "missing tensor " + nf4Name + ".nested_quant_map"},
		{desc: "absmax NaN", edit: func(w map[string]rawTensor) {
			w[nf4Name+".absmax"] = rawTensor{"F32", []int{3}, f32Bytes(0.1, float32(math.NaN()), 0.1)}
		}, atRead: true, want: "tensor " + nf4Name + ".absmax: value 1 is NaN"},
		{desc: "absmax overflows", nested: true, edit: func(w map[string]rawTensor) {
			w[nf4Name+".nested_absmax"] = rawTensor{"F32", []int{1}, f32Bytes(3e38)}
			setQS(`{"quant_type": "nf4", "blocksize": 64, "dtype": "float32", "shape": [8, 24], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 3e38}`)(w)
		}, atRead: true, want: "quantized weight " + nf4Name + ": dequantized value"},
		{desc: "another quant_map", nested: true, edit: func(w map[string]rawTensor) {
			w[nf4Name+".quant_map"] = rawTensor{"F32", []int{16}, f32Bytes(make([]float32, 16)...)}
		}, atRead: true, want: "quant_map is not bitsandbytes' NF4 table"},
		{desc: "nested_quant_map unsorted", nested: true, edit: func(w map[string]rawTensor) {
			code := quant.DynamicMap()
			code[3], code[200] = code[200], code[3]
			w[nf4Name+".nested_quant_map"] = rawTensor{"F32", []int{256}, f32Bytes(code[:]...)}
		}, atRead: true, want: "nested_quant_map is not a sorted code in [-1, 1] (entry 4"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			w, _ := nf4Weights(t, tc.nested)
			if tc.edit != nil {
				tc.edit(w)
			}
			dir := nf4Snapshot(t, cmpOr(tc.config, nf4Config), w)
			var err error
			if tc.atRead {
				s, openErr := Open(dir)
				if openErr != nil {
					t.Fatal(openErr)
				}
				_, err = s.Tensors(context.Background(), nil)
			} else {
				err = openErr(t, dir)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name the snapshot's file", err)
			}
			if tc.desc == "missing companion" && !errors.Is(err, ErrMissingTensor) {
				t.Errorf("error %q does not wrap ErrMissingTensor", err)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// FuzzNF4QuantState feeds arbitrary bytes as a 4-bit weight's quant_state blob (with valid packed
// codes and double-quantized absmax of shape [8, 24]): Open and Tensors return a one-line error or
// the weight dequantized to the shape the blob states; never panic or allocate from a shape the
// tensors do not hold.
//
//	GOEXPERIMENT=simd go test ./hf/snapshot -run '^$' -fuzz '^FuzzNF4QuantState$' -fuzztime 60s
func FuzzNF4QuantState(f *testing.F) {
	for _, s := range []string{
		`{"quant_type": "nf4", "blocksize": 64, "dtype": "float32", "shape": [8, 24], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 0.01}`,
		`{"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [24, 8], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": -1e30}`,
		`{"quant_type": "nf4", "blocksize": 32, "dtype": "float16", "shape": [192], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 0}`,
		`{"quant_type": "nf4", "blocksize": 64, "dtype": "float32", "shape": [9223372036854775807, 2], "nested_offset": 0.01}`,
		`{"shape": [-1, -192], "blocksize": -64}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	w, _ := nf4Weights(f, true)
	f.Fuzz(func(t *testing.T, blob []byte) {
		if len(blob) == 0 {
			return
		}
		w[nf4Name+".quant_state.bitsandbytes__nf4"] = rawTensor{"U8", []int{len(blob)}, blob}
		dir := nf4Snapshot(t, nf4Config, w)
		s, err := Open(dir)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		ts, err := s.Tensors(context.Background(), nil)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if shape, ok := s.Shape(nf4Name); !ok || !shape.Equal(ts[nf4Name].Shape()) {
			t.Fatalf("%s: read %s, shown as %s", nf4Name, ts[nf4Name].Shape(), shape)
		}
	})
}
