package layout

import (
	"strings"
	"testing"

	"github.com/tracksum/tracksum/hf/family"
)

// SetFamily resolves the biases as each family's attention class has them, and the layout's
// tensors follow: qwen2's q/k/v biases whatever the config says, mistral none, llama the keys'.
func TestSetFamilyBiases(t *testing.T) {
	for _, tc := range []struct {
		modelType       string
		attn, mlp       bool
		wantBiases      int // bias tensors of one layer
		wantQKV, wantO  bool
		wantMLP, wantQK bool
	}{
		{"llama", false, false, 0, false, false, false, false},
		{"llama", true, true, 7, true, true, true, false},
		{"qwen2", false, false, 3, true, false, false, false},
		{"mistral", true, true, 0, false, false, false, false},
		{"qwen3", false, false, 0, false, false, false, true},
	} {
		f, ok := family.Lookup(tc.modelType)
		if !ok {
			t.Fatalf("%s is not registered", tc.modelType)
		}
		l := Layout{Vocab: 10, Hidden: 8, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 4, Intermediate: 16}
		l.SetFamily(f, tc.attn, tc.mlp)
		if l.AttentionBias != tc.wantQKV || l.OProjBias != tc.wantO || l.MLPBias != tc.wantMLP || l.QKNorm != tc.wantQK {
			t.Errorf("%s (attention_bias %v, mlp_bias %v): %+v", tc.modelType, tc.attn, tc.mlp, l)
		}
		biases := 0
		for name, dims := range l.Tensors() {
			if strings.HasSuffix(name, ".bias") {
				biases++
				if len(dims) != 1 {
					t.Errorf("%s: bias %s has dims %v", tc.modelType, name, dims)
				}
			}
		}
		if biases != tc.wantBiases {
			t.Errorf("%s (attention_bias %v, mlp_bias %v): %d bias tensors, want %d", tc.modelType, tc.attn, tc.mlp, biases, tc.wantBiases)
		}
	}
}
