package tensorio

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/go-huggingface/hub"
	"github.com/gomlx/go-huggingface/models/safetensors"
	"github.com/gomlx/gomlx/core/tensors"
)

// TestSafetensorsReadByGoHuggingface checks that a file written by WriteTensors, under Hugging
// Face key names, is read back unchanged by go-huggingface's safetensors reader from a local
// snapshot directory (hub.NewLocal, no network): the library pretrained checkpoints are loaded
// with, built against this module's GoMLX version.
func TestSafetensorsReadByGoHuggingface(t *testing.T) {
	dir := t.TempDir()
	want := map[string]*tensors.Tensor{
		"model.embed_tokens.weight":              tensors.FromFlatDataAndDimensions([]float32{0.5, -1, 2.25, 1e-30, 7, -8}, 3, 2),
		"model.layers.0.self_attn.q_proj.weight": tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4}, 2, 2),
		"model.norm.weight":                      tensors.FromFlatDataAndDimensions([]float32{1, 1}, 2),
		"position_ids":                           tensors.FromFlatDataAndDimensions([]int32{0, 1, 2}, 3),
	}
	if err := WriteTensors(filepath.Join(dir, "model.safetensors"), want); err != nil {
		t.Fatal(err)
	}
	m, err := safetensors.New(hub.NewLocal(dir))
	if err != nil {
		t.Fatalf("go-huggingface safetensors.New: %v", err)
	}
	names := m.ListTensorNames()
	slices.Sort(names)
	wantNames := make([]string, 0, len(want))
	for name := range want {
		wantNames = append(wantNames, name)
	}
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Fatalf("tensor names = %v, want %v", names, wantNames)
	}
	for _, name := range wantNames {
		got, err := m.GetTensor(nil, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w := want[name]
		if !got.Tensor.Shape().Equal(w.Shape()) {
			t.Errorf("%s: shape %s, want %s", name, got.Tensor.Shape(), w.Shape())
			continue
		}
		switch w.DType() {
		case dtypes.Float32:
			if g, e := tensors.MustCopyFlatData[float32](got.Tensor), tensors.MustCopyFlatData[float32](w); !slices.Equal(g, e) {
				t.Errorf("%s = %v, want %v", name, g, e)
			}
		case dtypes.Int32:
			if g, e := tensors.MustCopyFlatData[int32](got.Tensor), tensors.MustCopyFlatData[int32](w); !slices.Equal(g, e) {
				t.Errorf("%s = %v, want %v", name, g, e)
			}
		default:
			t.Fatalf("%s: dtype %s not compared", name, w.DType())
		}
	}
}
