package randsnap

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/hf/quant"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// bnbConfig is the quantization_config transformers' BitsAndBytesConfig.to_dict() writes for
// load_in_4bit with nf4 and double quantization.
func bnbConfig(computeDType string) map[string]any {
	return map[string]any{
		"quant_method": "bitsandbytes", "_load_in_4bit": true, "_load_in_8bit": false,
		"load_in_4bit": true, "load_in_8bit": false, "bnb_4bit_quant_type": "nf4",
		"bnb_4bit_use_double_quant": true, "bnb_4bit_compute_dtype": computeDType,
		"bnb_4bit_quant_storage": "uint8", "llm_int8_skip_modules": nil, "llm_int8_threshold": 6.0,
		"llm_int8_has_fp16_weight": false, "llm_int8_enable_fp32_cpu_offload": false,
	}
}

// Companion suffixes of a quantized W.weight, as bitsandbytes' QuantState.as_dict(packed=True)
// names them.
var nf4Companions = []string{".absmax", ".quant_map", ".nested_absmax", ".nested_quant_map", ".quant_state.bitsandbytes__nf4"}

// quantState returns the quant_state blob bitsandbytes' pack_dict_to_tensor stores: the JSON of
// the non-tensor items in as_dict's order, with Python's json.dumps separators.
func quantState(w *quant.Weight, dt dtypes.DType) ([]byte, error) {
	shape, err := json.Marshal(w.Dims)
	if err != nil {
		return nil, err
	}
	s := fmt.Sprintf(`{"quant_type": "nf4", "blocksize": %d, "dtype": %q, "shape": %s, "nested_blocksize": %d, "nested_dtype": "float32", "nested_offset": %s}`,
		w.BlockSize, dtypeName(dt), spaced(shape), quant.NestedBlockSize, strconv.FormatFloat(float64(w.Nested.Offset), 'g', -1, 64))
	return []byte(s), nil
}

// spaced writes a JSON array of numbers with ", " between them, as Python does.
func spaced(b []byte) string {
	out := make([]byte, 0, len(b)*2)
	for _, c := range b {
		out = append(out, c)
		if c == ',' {
			out = append(out, ' ')
		}
	}
	return string(out)
}

// quantizeNF4 replaces, in specs and tensor, each weight quantized accepts by bitsandbytes'
// 4-bit tensors (blocksize 64, double quantization). A weight is drawn and quantized once to size
// its quant_state, and again when its tensors are written (kept until its last companion is),
// so that a large snapshot never holds every layer at once.
func quantizeNF4(specs map[string]shapes.Shape, tensor func(string) (*tensors.Tensor, error),
	quantized func(string) bool) (map[string]shapes.Shape, func(string) (*tensors.Tensor, error), error) {
	out := map[string]shapes.Shape{}
	owner := map[string]string{}
	dt := map[string]dtypes.DType{}
	for name, s := range specs {
		if !quantized(name) {
			out[name] = s
			continue
		}
		w, err := drawQuantized(tensor, name)
		if err != nil {
			return nil, nil, err
		}
		qs, err := quantState(w, s.DType)
		if err != nil {
			return nil, nil, err
		}
		blocks := len(w.Nested.Codes)
		out[name] = shapes.Make(dtypes.Uint8, len(w.Packed), 1)
		out[name+".absmax"] = shapes.Make(dtypes.Uint8, blocks)
		out[name+".quant_map"] = shapes.Make(dtypes.Float32, 16)
		out[name+".nested_absmax"] = shapes.Make(dtypes.Float32, len(w.Nested.Absmax))
		out[name+".nested_quant_map"] = shapes.Make(dtypes.Float32, 256)
		out[name+".quant_state.bitsandbytes__nf4"] = shapes.Make(dtypes.Uint8, len(qs))
		owner[name] = name
		dt[name] = s.DType
		for _, c := range nf4Companions {
			owner[name+c] = name
		}
	}
	cache := map[string]*quant.Weight{}
	left := map[string]int{}
	write := func(name string) (*tensors.Tensor, error) {
		base, ok := owner[name]
		if !ok {
			return tensor(name)
		}
		w := cache[base]
		if w == nil {
			var err error
			if w, err = drawQuantized(tensor, base); err != nil {
				return nil, err
			}
			cache[base], left[base] = w, 1+len(nf4Companions)
		}
		if left[base]--; left[base] == 0 {
			delete(cache, base)
		}
		switch name[len(base):] {
		case "":
			return tensors.FromFlatDataAndDimensions(w.Packed, len(w.Packed), 1), nil
		case ".absmax":
			return tensors.FromFlatDataAndDimensions(w.Nested.Codes, len(w.Nested.Codes)), nil
		case ".quant_map":
			return tensors.FromFlatDataAndDimensions(append([]float32(nil), quant.NF4[:]...), 16), nil
		case ".nested_absmax":
			return tensors.FromFlatDataAndDimensions(w.Nested.Absmax, len(w.Nested.Absmax)), nil
		case ".nested_quant_map":
			return tensors.FromFlatDataAndDimensions(append([]float32(nil), w.Nested.Code[:]...), 256), nil
		default:
			qs, err := quantState(w, dt[base])
			if err != nil {
				return nil, err
			}
			return tensors.FromFlatDataAndDimensions(qs, len(qs)), nil
		}
	}
	return out, write, nil
}

// drawQuantized draws the named weight (in its snapshot dtype) and quantizes it as bitsandbytes
// does the weight it loads: its values widened to float32.
func drawQuantized(tensor func(string) (*tensors.Tensor, error), name string) (*quant.Weight, error) {
	t, err := tensor(name)
	if err != nil {
		return nil, err
	}
	vals := tensors.MustCopyFlatData[float32](snapshot.ToFloat32(t))
	w, err := quant.QuantizeNF4(vals, t.Shape().Dimensions, quant.BlockSize, true)
	if err != nil {
		return nil, fmt.Errorf("randsnap: %s: %v", name, err)
	}
	return w, nil
}
