package model

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
)

func TestVariablesRoundTrip(t *testing.T) {
	store := gomlxmodel.NewStore()
	w := []float32{1.5, -2, 3.25, 1e-30, 7, 8}
	if _, err := store.CreateVariable("/model/dense/weights", tensors.FromFlatDataAndDimensions(w, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateVariable("/optimizer/step", tensors.FromScalar(float32(3))); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateVariable("/model/ids", tensors.FromFlatDataAndDimensions([]int32{4, 5}, 2)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := SaveVariables(path, store, func(p string) bool { return p != "/optimizer/step" }); err != nil {
		t.Fatal(err)
	}
	loaded := gomlxmodel.NewStore()
	if err := LoadVariablesInto(loaded, path, nil); err != nil {
		t.Fatal(err)
	}
	if got := tensors.MustCopyFlatData[float32](loaded.GetVariable("/model/dense/weights").MustValue()); !slices.Equal(got, w) {
		t.Errorf("weights = %v, want %v", got, w)
	}
	if got := tensors.MustCopyFlatData[int32](loaded.GetVariable("/model/ids").MustValue()); !slices.Equal(got, []int32{4, 5}) {
		t.Errorf("ids = %v", got)
	}
	if loaded.GetVariable("/optimizer/step") != nil {
		t.Error("filtered variable was saved")
	}
	// A renamed load (as for a pretrained backbone) and a skipped tensor.
	renamed := gomlxmodel.NewStore()
	err := LoadVariablesInto(renamed, path, func(name string) string {
		if name == "/model/ids" {
			return ""
		}
		return "/model/backbone" + name[len("/model"):]
	})
	if err != nil || renamed.GetVariable("/model/backbone/dense/weights") == nil || renamed.GetVariable("/model/ids") != nil {
		t.Errorf("renamed load: err %v", err)
	}
}

func TestBackendHonoursEnvironment(t *testing.T) {
	// An option the default lacks proves the variable was read; the sequential scheduler is added
	// to a Go backend named without one (withGoScheduler).
	t.Setenv("GOMLX_BACKEND", "go:dependency_order")
	_, name, err := Backend()
	if err != nil {
		t.Fatal(err)
	}
	// Backend is created once per process; in this test binary the first call sees the variable.
	if want := "go:dependency_order,ops_sequential"; name != want {
		t.Errorf("backend %q, want %q", name, want)
	}
}
