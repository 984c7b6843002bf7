package snapshot

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/hf/family"
)

// rawTensor is one tensor of a test safetensors file: its dtype name as the format spells it,
// dimensions and raw little-endian bytes.
type rawTensor struct {
	dtype string
	dims  []int
	data  []byte
}

func f32Bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func u16Bytes(v ...uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return b
}

// writeSafetensors writes the format by hand (8-byte header length, JSON header, data), so the
// tests can make bf16/f16 files and broken headers that our own writer refuses to produce.
func writeSafetensors(t *testing.T, path string, ts map[string]rawTensor) {
	t.Helper()
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	header := map[string]any{}
	var data []byte
	for _, n := range names {
		r := ts[n]
		header[n] = map[string]any{"dtype": r.dtype, "shape": r.dims, "data_offsets": []int{len(data), len(data) + len(r.data)}}
		data = append(data, r.data...)
	}
	hb, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hb)))
	out = append(out, hb...)
	out = append(out, data...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// goodWeights is a small valid weight set in three dtypes.
func goodWeights() map[string]rawTensor {
	return map[string]rawTensor{
		"embeddings.word_embeddings.weight": {"F32", []int{3, 2}, f32Bytes(1, 2, 3, 4, 5, 6)},
		"encoder.layer.0.output.dense.bias": {"BF16", []int{2}, u16Bytes(0x3F80, 0xC000)}, // 1, -2
		"pooler.dense.bias":                 {"F16", []int{2}, u16Bytes(0x3C00, 0x0000)},  // 1, 0
	}
}

// makeSnapshot writes a complete single-file snapshot and returns its directory.
func makeSnapshot(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ConfigFile), `{"model_type": "bert", "hidden_size": 2, "layer_norm_eps": 1e-12, "tie_word_embeddings": false, "rope_scaling": null, "hidden_act": "gelu"}`)
	writeFile(t, filepath.Join(dir, TokenizerFile), `{}`)
	writeFile(t, filepath.Join(dir, TokenizerConfigFile), `{}`)
	writeSafetensors(t, filepath.Join(dir, WeightsFile), goodWeights())
	return dir
}

// makeSharded writes a two-shard snapshot with its index.
func makeSharded(t *testing.T) string {
	t.Helper()
	dir := makeSnapshot(t)
	if err := os.Remove(filepath.Join(dir, WeightsFile)); err != nil {
		t.Fatal(err)
	}
	w := goodWeights()
	writeSafetensors(t, filepath.Join(dir, "model-00001-of-00002.safetensors"), map[string]rawTensor{"embeddings.word_embeddings.weight": w["embeddings.word_embeddings.weight"]})
	writeSafetensors(t, filepath.Join(dir, "model-00002-of-00002.safetensors"), map[string]rawTensor{
		"encoder.layer.0.output.dense.bias": w["encoder.layer.0.output.dense.bias"],
		"pooler.dense.bias":                 w["pooler.dense.bias"],
	})
	writeFile(t, filepath.Join(dir, WeightsIndexFile), `{"metadata": {"total_size": 32}, "weight_map": {
		"embeddings.word_embeddings.weight": "model-00001-of-00002.safetensors",
		"encoder.layer.0.output.dense.bias": "model-00002-of-00002.safetensors",
		"pooler.dense.bias": "model-00002-of-00002.safetensors"}}`)
	return dir
}

func TestOpenAndTensors(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		make      func(t *testing.T) string
		wantFiles []string
	}{
		{"single file", makeSnapshot, []string{WeightsFile}},
		{"sharded", makeSharded, []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := tc.make(t)
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if s.ModelType != "bert" || !slices.Equal(s.WeightFiles, tc.wantFiles) || s.HasGenerationConfig {
				t.Fatalf("ModelType %q, WeightFiles %v, HasGenerationConfig %v", s.ModelType, s.WeightFiles, s.HasGenerationConfig)
			}
			wantNames := []string{"embeddings.word_embeddings.weight", "encoder.layer.0.output.dense.bias", "pooler.dense.bias"}
			if got := s.Names(); !slices.Equal(got, wantNames) {
				t.Fatalf("Names() = %v, want %v", got, wantNames)
			}
			if sh, ok := s.Shape("embeddings.word_embeddings.weight"); !ok || !sh.Equal(shapes.Make(dtypes.Float32, 3, 2)) {
				t.Fatalf("Shape = %s, %v", sh, ok)
			}
			all, err := s.Tensors(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 3 {
				t.Fatalf("Tensors(nil) read %d tensors, want 3", len(all))
			}
			if got := tensors.MustCopyFlatData[float32](all["embeddings.word_embeddings.weight"]); !slices.Equal(got, []float32{1, 2, 3, 4, 5, 6}) {
				t.Errorf("word embeddings = %v", got)
			}
			if dt := all["encoder.layer.0.output.dense.bias"].DType(); dt != dtypes.BFloat16 {
				t.Errorf("bf16 weight loaded as %s", dt)
			}
			if dt := all["pooler.dense.bias"].DType(); dt != dtypes.Float16 {
				t.Errorf("f16 weight loaded as %s", dt)
			}
			some, err := s.Tensors(context.Background(), func(name string) bool { return strings.HasPrefix(name, "pooler.") })
			if err != nil || len(some) != 1 || some["pooler.dense.bias"] == nil {
				t.Fatalf("Tensors(pooler.*) = %v, %v", some, err)
			}
			sum, err := s.WeightsSHA256(context.Background())
			if err != nil || len(sum) != 64 {
				t.Fatalf("WeightsSHA256 = %q, %v", sum, err)
			}
		})
	}
}

func TestWeightsSHA256ChangesWithWeights(t *testing.T) {
	dir := makeSnapshot(t)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.WeightsSHA256(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := goodWeights()
	w["pooler.dense.bias"] = rawTensor{"F16", []int{2}, u16Bytes(0x3C00, 0x3C00)}
	writeSafetensors(t, filepath.Join(dir, WeightsFile), w)
	after, err := s.WeightsSHA256(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if before == after {
		t.Fatal("digest unchanged after a weight changed")
	}
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		edit    func(t *testing.T, dir string) string // returns the dir to open
		want    string                                // substring of the error
		wantErr error                                 // sentinel, or nil
	}{
		{"no directory", func(t *testing.T, dir string) string { return filepath.Join(dir, "nope") }, "nope: directory does not exist", ErrMissingFile},
		{"a file, not a directory", func(t *testing.T, dir string) string { return filepath.Join(dir, ConfigFile) }, "not a directory", nil},
		{"no config.json", func(t *testing.T, dir string) string { os.Remove(filepath.Join(dir, ConfigFile)); return dir }, "config.json is missing", ErrMissingFile},
		{"bad config.json", func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(dir, ConfigFile), `{"model_type": `)
			return dir
		}, "config.json:1:16: unexpected end of JSON input", nil},
		{"no model_type", func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(dir, ConfigFile), `{"hidden_size": 4}`)
			return dir
		}, "config.json: no model_type string", nil},
		{"unsupported model_type", func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(dir, ConfigFile), `{"model_type": "t5"}`)
			return dir
		}, `config.json: model_type "t5" is not supported (supported: ` + strings.Join(family.Names(""), ", ") + `)`, ErrUnsupportedModelType},
		{"no tokenizer.json", func(t *testing.T, dir string) string { os.Remove(filepath.Join(dir, TokenizerFile)); return dir }, "tokenizer.json is missing", ErrMissingFile},
		{"no tokenizer_config.json", func(t *testing.T, dir string) string {
			os.Remove(filepath.Join(dir, TokenizerConfigFile))
			return dir
		}, "tokenizer_config.json is missing", ErrMissingFile},
		{"no weights", func(t *testing.T, dir string) string { os.Remove(filepath.Join(dir, WeightsFile)); return dir }, "neither model.safetensors nor model.safetensors.index.json is present", ErrMissingFile},
		{"pytorch weights only", func(t *testing.T, dir string) string {
			os.Remove(filepath.Join(dir, WeightsFile))
			writeFile(t, filepath.Join(dir, "pytorch_model.bin"), "x")
			return dir
		}, "only PyTorch .bin weights found", ErrMissingFile},
		{"truncated header", func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(dir, WeightsFile), "\x10\x00")
			return dir
		}, "model.safetensors: unreadable safetensors header", nil},
		{"unknown dtype", func(t *testing.T, dir string) string {
			writeSafetensors(t, filepath.Join(dir, WeightsFile), map[string]rawTensor{"w": {"Q7", []int{1}, []byte{0}}})
			return dir
		}, "model.safetensors: tensor w:", nil},
		{"byte range does not match shape", func(t *testing.T, dir string) string {
			writeSafetensors(t, filepath.Join(dir, WeightsFile), map[string]rawTensor{"w": {"F32", []int{2, 2}, f32Bytes(1, 2, 3)}})
			return dir
		}, "model.safetensors: tensor w: shape [2 2] F32 needs 16 bytes, the header gives 12", nil},
		{"file shorter than its header says", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, WeightsFile)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()-2); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "model.safetensors: truncated:", nil},
		{"shard missing", func(t *testing.T, _ string) string {
			dir := makeSharded(t)
			os.Remove(filepath.Join(dir, "model-00002-of-00002.safetensors"))
			return dir
		}, "model.safetensors.index.json: shard model-00002-of-00002.safetensors (named for 2 tensors, e.g. encoder.layer.0.output.dense.bias) is missing", ErrMissingFile},
		{"index names a tensor the shard lacks", func(t *testing.T, _ string) string {
			dir := makeSharded(t)
			writeFile(t, filepath.Join(dir, WeightsIndexFile), `{"weight_map": {"x.weight": "model-00001-of-00002.safetensors"}}`)
			return dir
		}, "index names tensor x.weight in shard model-00001-of-00002.safetensors, which does not hold it", nil},
		{"empty index", func(t *testing.T, _ string) string {
			dir := makeSharded(t)
			writeFile(t, filepath.Join(dir, WeightsIndexFile), `{"weight_map": {}}`)
			return dir
		}, "model.safetensors.index.json: weight_map is empty", nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := tc.edit(t, makeSnapshot(t))
			_, err := Open(dir)
			if err == nil {
				t.Fatalf("Open succeeded, want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q, want one line containing %q", err, tc.want)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %q is not %v", err, tc.wantErr)
			}
		})
	}
}

func TestTensorsNonFinite(t *testing.T) {
	for _, tc := range []struct {
		desc string
		w    rawTensor
		want string
	}{
		{"f32 NaN", rawTensor{"F32", []int{3}, f32Bytes(1, float32(math.NaN()), 2)}, "model.safetensors: tensor bad.weight: value 1 is NaN"},
		{"f32 +Inf", rawTensor{"F32", []int{2}, f32Bytes(float32(math.Inf(1)), 2)}, "model.safetensors: tensor bad.weight: value 0 is +Inf"},
		{"bf16 -Inf", rawTensor{"BF16", []int{2}, u16Bytes(0x3F80, 0xFF80)}, "model.safetensors: tensor bad.weight: value 1 is NaN or Inf (BFloat16)"},
		{"f16 NaN", rawTensor{"F16", []int{2}, u16Bytes(0x7E00, 0)}, "model.safetensors: tensor bad.weight: value 0 is NaN or Inf (Float16)"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := makeSnapshot(t)
			w := goodWeights()
			w["bad.weight"] = tc.w
			writeSafetensors(t, filepath.Join(dir, WeightsFile), w)
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Tensors(context.Background(), func(name string) bool { return name != "bad.weight" }); err != nil {
				t.Fatalf("tensors without the bad one: %v", err)
			}
			_, err = s.Tensors(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrNonFinite) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestConfigValues(t *testing.T) {
	s, err := Open(makeSnapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Int("hidden_size", 7); err != nil || v != 2 {
		t.Errorf("Int(hidden_size) = %d, %v", v, err)
	}
	if v, err := s.Int("num_layers", 7); err != nil || v != 7 {
		t.Errorf("Int(absent) = %d, %v", v, err)
	}
	if v, err := s.Int("rope_scaling", 7); err != nil || v != 7 {
		t.Errorf("Int(null) = %d, %v", v, err)
	}
	if v, err := s.Float("layer_norm_eps", 1); err != nil || v != 1e-12 {
		t.Errorf("Float(layer_norm_eps) = %g, %v", v, err)
	}
	if v, err := s.Bool("tie_word_embeddings", true); err != nil || v {
		t.Errorf("Bool(tie_word_embeddings) = %v, %v", v, err)
	}
	if v, err := s.String("hidden_act", ""); err != nil || v != "gelu" {
		t.Errorf("String(hidden_act) = %q, %v", v, err)
	}
	for _, tc := range []struct {
		desc string
		get  func() error
		want string
	}{
		{"int from float", func() error { _, err := s.Int("layer_norm_eps", 0); return err }, "config.json: layer_norm_eps = 1e-12, want an integer"},
		{"int from string", func() error { _, err := s.Int("hidden_act", 0); return err }, `config.json: hidden_act = "gelu", want an integer`},
		// Issue 35 item 8: 2^62 is an integer; it read "4611686018427388000, want an integer".
		{"int past 2^53", func() error { s.Config["huge"] = float64(1 << 62); _, err := s.Int("huge", 0); return err },
			"config.json: huge = 4611686018427387904 is beyond any real model (limit 2^53)"},
		{"float from bool", func() error { _, err := s.Float("tie_word_embeddings", 0); return err }, "config.json: tie_word_embeddings = false, want a number"},
		{"bool from number", func() error { _, err := s.Bool("hidden_size", false); return err }, "config.json: hidden_size = 2, want true or false"},
		{"string from number", func() error { _, err := s.String("hidden_size", ""); return err }, "config.json: hidden_size = 2, want a string"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if err := tc.get(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCheckShape(t *testing.T) {
	for _, tc := range []struct {
		desc string
		got  shapes.Shape
		want []int
		err  string
	}{
		{"equal", shapes.Make(dtypes.Float32, 8, 8), []int{8, 8}, ""},
		{"scalar", shapes.Make(dtypes.Float32), nil, ""},
		{"different", shapes.Make(dtypes.BFloat16, 4, 8), []int{8, 8}, "layers.0.self_attn.q_proj.weight: shape [4 8], want [8 8]"},
		{"rank", shapes.Make(dtypes.Float32, 8), []int{8, 1}, "layers.0.self_attn.q_proj.weight: shape [8], want [8 1]"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := CheckShape("layers.0.self_attn.q_proj.weight", tc.got, tc.want...)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != tc.err || !errors.Is(err, ErrShape) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
}

func TestGenerationConfigOptional(t *testing.T) {
	dir := makeSnapshot(t)
	writeFile(t, filepath.Join(dir, GenerationConfigFile), `{}`)
	s, err := Open(dir)
	if err != nil || !s.HasGenerationConfig {
		t.Fatalf("Open = %v, HasGenerationConfig %v", err, s != nil && s.HasGenerationConfig)
	}
}
