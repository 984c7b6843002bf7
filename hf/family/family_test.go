package family

import (
	"slices"
	"strings"
	"testing"
)

// Every registered family carries what its consumers read: a causal LM its classes and the key of
// its activation, an encoder its classification class.
func TestRegisteredFamiliesAreComplete(t *testing.T) {
	for _, name := range Names("") {
		f, _ := Lookup(name)
		if f.ModelType != name || len(f.LoRATargets) == 0 || f.SequenceClassificationClass == "" {
			t.Errorf("%s: incomplete %+v", name, f)
		}
		if f.Kind == CausalLM && (f.CausalLMClass == "" || f.ActivationKey == "" || f.Activation == "") {
			t.Errorf("%s: a causal LM needs its CausalLM class and activation key: %+v", name, f)
		}

	}
	if got, want := Names(CausalLM), []string{"gemma", "gemma2", "gemma3_text", "llama", "mistral", "phi3", "qwen2", "qwen3"}; !slices.Equal(got, want) {
		t.Errorf("causal LM families %v, want %v", got, want)
	}
	if got := Names(Encoder); !slices.Equal(got, []string{"bert", "deberta-v2", "roberta"}) {
		t.Errorf("encoder families %v, want [bert deberta-v2 roberta]", got)
	}
}

func TestLookupReturnsACopy(t *testing.T) {
	f, ok := Lookup("llama")
	if !ok {
		t.Fatal("llama is not registered")
	}
	f.LoRATargets[0] = "changed"
	if g, _ := Lookup("llama"); g.LoRATargets[0] != "q_proj" {
		t.Errorf("a caller's change reached the registry: %v", g.LoRATargets)
	}
}

func TestLoRATargetsAreSortedAndUnique(t *testing.T) {
	all := LoRATargets("")
	if !slices.IsSorted(all) || len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Errorf("LoRATargets(\"\") = %v, want sorted without repeats", all)
	}
	for _, want := range []string{"q_proj", "down_proj", "qkv_proj", "gate_up_proj", "query", "output.dense"} {
		if !slices.Contains(all, want) {
			t.Errorf("LoRATargets lacks %q", want)
		}
	}
}

func TestRegisterRefusesBadFamilies(t *testing.T) {
	tests := []struct {
		desc string
		f    Family
		want string
	}{
		{"empty model type", Family{Kind: CausalLM, LoRATargets: []string{"x"}}, "empty ModelType"},
		{"unknown kind", Family{ModelType: "x1", Kind: "vision", LoRATargets: []string{"x"}}, "kind"},
		{"no targets", Family{ModelType: "x2", Kind: CausalLM}, "no LoRA targets"},
		{"duplicate", Family{ModelType: "llama", Kind: CausalLM, LoRATargets: []string{"x"}}, "registered twice"},
		{"all-linear outside the targets", Family{ModelType: "x3", Kind: Encoder, LoRATargets: []string{"x"}, AllLinear: []string{"y"}}, `all-linear target "y"`},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tt.want) {
					t.Errorf("Register panicked with %v, want a message containing %q", r, tt.want)
				}
			}()
			Register(tt.f)
		})
	}
}

// PEFT's all-linear per family: a decoder's projections (Phi-3's fused ones), an encoder's linear
// layers by the suffixes PEFT condenses them to (BERT's pooler dense included).
func TestAllLinearTargets(t *testing.T) {
	tests := []struct {
		modelType string
		want      []string
	}{
		{"llama", []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}},
		{"qwen3", []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}},
		{"phi3", []string{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}},
		{"bert", []string{"query", "key", "value", "dense"}},
		{"roberta", []string{"query", "key", "value", "dense"}},
		{"deberta-v2", []string{"query_proj", "key_proj", "value_proj", "dense"}},
	}
	for _, tt := range tests {
		t.Run(tt.modelType, func(t *testing.T) {
			f, ok := Lookup(tt.modelType)
			if !ok {
				t.Fatalf("%s is not registered", tt.modelType)
			}
			if got := f.AllLinearTargets(); !slices.Equal(got, tt.want) {
				t.Errorf("all-linear on %s = %v, want %v", tt.modelType, got, tt.want)
			}
		})
	}
}

// The encoder list and BERT's target aliases live here, not in config: which encoders the tracker
// fine-tunes, and what the config's Llama names select on them.
func TestEncodersAndTargetAliases(t *testing.T) {
	if got := FineTunedEncoders(); !slices.Equal(got, []string{"bert"}) {
		t.Errorf("fine-tuned encoders %v, want [bert]", got)
	}
	for _, tc := range []struct {
		modelType string
		encoder   bool
	}{{"bert", true}, {"roberta", true}, {"deberta-v2", true}, {"llama", false}, {"gpt2", false}} {
		if got := IsEncoder(tc.modelType); got != tc.encoder {
			t.Errorf("IsEncoder(%q) = %v, want %v", tc.modelType, got, tc.encoder)
		}
	}
	for _, tc := range []struct {
		modelType string
		targets   []string
		want      []string
	}{
		{"bert", []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
			[]string{"query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense"}},
		{"bert", []string{"q_proj", "query", "dense"}, []string{"query", "dense"}},
		{"roberta", []string{"v_proj"}, []string{"value"}},
		{"llama", []string{"q_proj", "v_proj", "q_proj"}, []string{"q_proj", "v_proj"}},
	} {
		f, _ := Lookup(tc.modelType)
		if got := f.SelectedTargets(tc.targets); !slices.Equal(got, tc.want) {
			t.Errorf("%s: SelectedTargets(%v) = %v, want %v", tc.modelType, tc.targets, got, tc.want)
		}
	}
}
