package layers

import (
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/ml/model"
	tsmodel "github.com/tracksum/tracksum/model"
)

// TestVarsNames pins the variable paths each naming creates: checkpoints written before this
// package find their variables by these paths.
func TestVarsNames(t *testing.T) {
	backend, _, err := tsmodel.Backend()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc string
		vars Vars
		want []string
	}{
		{"scoped (tracker)", Scoped(0.02), []string{
			"/m/ffn/ffn_hidden/biases", "/m/ffn/ffn_hidden/weights", "/m/ffn/ffn_output/biases", "/m/ffn/ffn_output/weights",
			"/m/norm/gain", "/m/norm/offset",
			"/m/self/attention_output/biases", "/m/self/attention_output/weights", "/m/self/qkv/biases", "/m/self/qkv/weights"}},
		{"suffixed (summarizer)", Suffixed(), []string{
			"/m/ffn/in_b", "/m/ffn/in_w", "/m/ffn/out_b", "/m/ffn/out_w",
			"/m/norm/bias", "/m/norm/gain",
			"/m/self/k_b", "/m/self/k_w", "/m/self/o_b", "/m/self/o_w", "/m/self/q_b", "/m/self/q_w", "/m/self/v_b", "/m/self/v_w"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			store := model.NewStore()
			scope := store.Scope("m")
			exec, err := model.NewExec(backend, store, func(_ *model.Scope, x *Node) *Node {
				y := tc.vars.LayerNorm(scope.In("norm"), x)
				if tc.vars.Offset == "offset" {
					y = tc.vars.FusedSelfAttention(scope.In("self"), y, nil, 2, "qkv", "attention_output")
					return tc.vars.FeedForward(scope.In("ffn"), y, 8, "ffn_hidden", "ffn_output")
				}
				y = tc.vars.MultiHeadAttention(scope.In("self"), y, y, nil, 2)
				return tc.vars.FeedForward(scope.In("ffn"), y, 8, "in", "out")
			})
			if err != nil {
				t.Fatal(err)
			}
			x := [][][]float32{{{1, 2, 3, 4}, {0, 1, 0, 1}, {2, 2, 1, 0}}, {{1, 0, 0, 0}, {0, 3, 1, 2}, {1, 1, 1, 1}}} // [2, 3, 4]
			if _, err := exec.Call(x); err != nil {
				t.Fatal(err)
			}
			var got []string
			for v := range store.IterVariables() {
				if v.Trainable {
					got = append(got, v.Path())
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("variables %q, want %q", got, tc.want)
			}
		})
	}
}
