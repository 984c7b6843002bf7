package weights

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
)

// NewAdapters: A drawn in PEFT's bound from the seed's stream (the same again for the same seed
// and stream, other values for another stream), B zero, all trainable and named as PEFT names
// them; adapters already in the store keep their values.
func TestNewAdapters(t *testing.T) {
	linears := []Linear{{"m.layers.0.q", 6, 4}, {"m.layers.0.o", 4, 6}}
	draw := func(store *gomlxmodel.Store, stream uint64) Adapters {
		t.Helper()
		ad, err := NewAdapters(store, "/lora", 2, 7, stream, linears)
		if err != nil {
			t.Fatal(err)
		}
		return ad
	}
	values := func(v *gomlxmodel.Variable) []float32 { return tensors.MustCopyFlatData[float32](v.MustValue()) }
	store := gomlxmodel.NewStore()
	ad := draw(store, 1)
	for _, l := range linears {
		a, b := ad[l.Key].A, ad[l.Key].B
		if !a.Trainable || !b.Trainable {
			t.Errorf("%s: not trainable", l.Key)
		}
		if got := a.Shape().Dimensions; !slices.Equal(got, []int{2, l.In}) {
			t.Errorf("%s: A %v, want [2 %d]", l.Key, got, l.In)
		}
		bound := 1 / math.Sqrt(float64(l.In))
		for _, x := range values(a) {
			if math.Abs(float64(x)) > bound {
				t.Errorf("%s: A value %g beyond ±%g", l.Key, x, bound)
			}
		}
		for _, x := range values(b) {
			if x != 0 {
				t.Fatalf("%s: B is not zero", l.Key)
			}
		}
	}
	again, other := draw(gomlxmodel.NewStore(), 1), draw(gomlxmodel.NewStore(), 2)
	key := linears[1].Key
	if !slices.Equal(values(again[key].A), values(ad[key].A)) || slices.Equal(values(other[key].A), values(ad[key].A)) {
		t.Error("A does not follow the seed's stream")
	}
	var names []string
	for k := range ad.Variables() {
		names = append(names, k)
	}
	slices.Sort(names)
	want := []string{"base_model.model.m.layers.0.o.lora_A.weight", "base_model.model.m.layers.0.o.lora_B.weight",
		"base_model.model.m.layers.0.q.lora_A.weight", "base_model.model.m.layers.0.q.lora_B.weight"}
	if !slices.Equal(names, want) {
		t.Errorf("Variables: %v, want %v", names, want)
	}
	// A restored store keeps its adapters: a second draw on it changes nothing.
	trained := make([]float32, 2*4)
	trained[0] = 0.5
	if err := ad[linears[0].Key].A.SetValue(tensors.FromFlatDataAndDimensions(trained, 2, 4)); err != nil {
		t.Fatal(err)
	}
	if got := values(draw(store, 3)[linears[0].Key].A); got[0] != 0.5 {
		t.Errorf("restored adapter overwritten: %v", got)
	}
}

// SetVariable: a variable of another shape is a one-line error naming it.
func TestSetVariableShape(t *testing.T) {
	store := gomlxmodel.NewStore()
	if _, err := SetVariable(store, "/w", tensors.FromFlatDataAndDimensions([]float32{1, 2}, 2), true); err != nil {
		t.Fatal(err)
	}
	_, err := SetVariable(store, "/w", tensors.FromFlatDataAndDimensions([]float32{1, 2, 3}, 3), false)
	if err == nil || !strings.Contains(err.Error(), "variable /w exists with shape") {
		t.Fatalf("err = %v", err)
	}
	if got := CheckRank(-1); got == nil || got.Error() != "lora rank -1: want 0 (full fine-tuning) or more" {
		t.Errorf("CheckRank(-1) = %v", got)
	}
}
