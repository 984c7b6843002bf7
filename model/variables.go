package model

import (
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/internal/tensorio"
)

// Variables are stored in the safetensors layout (package internal/tensorio) (an 8-byte little-endian header length, a JSON
// header mapping each tensor name to dtype, shape and byte range, then the raw little-endian data),
// keyed by the GoMLX variable path. It is exact (bit-identical round trip), dependency-free, and the
// format pretrained backbones are distributed in, so a converted backbone loads the same way.

// SaveVariables writes the variables of store whose path keep accepts (all when keep is nil) to path,
// atomically. Variables without a value (never initialised) are an error.
func SaveVariables(path string, store *gomlxmodel.Store, keep func(varPath string) bool) error {
	vars := map[string]*tensors.Tensor{}
	for v := range store.IterVariables() {
		if keep != nil && !keep(v.Path()) {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return fmt.Errorf("save %s: variable %s: %w", path, v.Path(), err)
		}
		vars[v.Path()] = t
	}
	return tensorio.WriteTensors(path, vars)
}

// LoadVariablesInto creates (or overwrites) the variables of store from a safetensors file, so that
// graphs built afterwards find them already initialised: the way a checkpoint — or a pretrained
// backbone converted to the same variable paths — is loaded. rename maps a file's tensor name to a
// variable path (nil: names are paths); returning "" skips the tensor. Variables
// outside ModelScope (optimizer state, RNG) or named idf_* are created non-trainable; existing
// variables keep their flag.
func LoadVariablesInto(store *gomlxmodel.Store, path string, rename func(name string) string) error {
	ts, err := tensorio.ReadTensors(path)
	if err != nil {
		return err
	}
	for name, t := range ts {
		p := name
		if rename != nil {
			if p = rename(name); p == "" {
				continue
			}
		}
		if v := store.GetVariable(p); v != nil {
			if !v.Shape().Equal(t.Shape()) {
				return fmt.Errorf("%w: %s: variable %s has shape %s, file has %s", tensorio.ErrBadFile, path, p, v.Shape(), t.Shape())
			}
			if err := v.SetValue(t); err != nil {
				return fmt.Errorf("load %s: variable %s: %w", path, p, err)
			}
			continue
		}
		v, err := store.CreateVariable(p, t)
		if err != nil {
			return fmt.Errorf("load %s: variable %s: %w", path, p, err)
		}
		if !strings.HasPrefix(p, ModelScope+"/") || strings.Contains(p, "/idf_") {
			// Optimizer state, RNG, and the data statistics models keep as "idf_*" tables.
			v.SetTrainable(false)
		}
	}
	return nil
}

// ModelScope is the scope under which models keep their trainable variables; the training loop
// keeps its optimizer state elsewhere, and only ModelScope is written to best-model checkpoints.
const ModelScope = "/model"
