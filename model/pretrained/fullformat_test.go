package pretrained

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/weights"
)

// safetensorsMetadata returns the __metadata__ of a safetensors file's header.
func safetensorsMetadata(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8 {
		t.Fatalf("%s: %d bytes, no header", path, len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-8) {
		t.Fatalf("%s: header of %d bytes in a %d-byte file", path, n, len(b))
	}
	var header struct {
		Metadata map[string]string `json:"__metadata__"`
	}
	if err := json.Unmarshal(b[8:8+n], &header); err != nil {
		t.Fatalf("%s: header: %v", path, err)
	}
	return header.Metadata
}

// TestFullWeightsFormatPT: issue 23 item 8. A full fine-tune's full/model.safetensors (every weight
// under its Hugging Face key, for transformers) was written with "format": "gomlx", which
// transformers' loader refuses; it must carry "format": "pt", as the adapter files and exports do.
func TestFullWeightsFormatPT(t *testing.T) {
	dir := t.TempDir()
	store := gomlxmodel.NewStore()
	base := map[string]*gomlxmodel.Variable{}
	for name, v := range map[string][]float32{"model.norm.weight": {1, 2}, "lm_head.weight": {3, 4, 5, 6}} {
		dims := []int{len(v)}
		if len(v) == 4 {
			dims = []int{2, 2}
		}
		vr, err := weights.SetVariable(store, decoder.BaseScope+"/"+name, tensors.FromFlatDataAndDimensions(v, dims...), true)
		if err != nil {
			t.Fatal(err)
		}
		base[name] = vr
	}
	if err := writeInterop(dir, dir, peft.TaskCausalLM, config.LoRA{Rank: 0}, nil, nil, base, nil); err != nil {
		t.Fatal(err)
	}
	meta := safetensorsMetadata(t, filepath.Join(dir, peft.FullDir, peft.FullWeights))
	if meta["format"] != "pt" {
		t.Errorf("%s: __metadata__ %v, want format pt", peft.FullWeights, meta)
	}
}
