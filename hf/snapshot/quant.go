package snapshot

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/hf/quant"
	"github.com/tracksum/tracksum/internal/tensorio"
)

// Quantization is config.json's quantization_config of a snapshot transformers saved with
// bitsandbytes' 4-bit layout (e.g. unsloth's "-bnb-4bit" models): only NF4 is read.
type Quantization struct {
	// QuantType is bnb_4bit_quant_type ("nf4").
	QuantType string
	// DoubleQuant is bnb_4bit_use_double_quant: the absmax values are themselves 8-bit codes.
	DoubleQuant bool
	// ComputeDType is bnb_4bit_compute_dtype (float32 when absent).
	ComputeDType dtypes.DType
	// SkipModules is llm_int8_skip_modules: modules left unquantized (e.g. lm_head).
	SkipModules []string
}

// Suffixes of the tensors bitsandbytes' Linear4bit saves next to a quantized W.weight (its
// QuantState.as_dict(packed=True)).
const (
	suffixAbsmax         = ".absmax"
	suffixQuantMap       = ".quant_map"
	suffixNestedAbsmax   = ".nested_absmax"
	suffixNestedQuantMap = ".nested_quant_map"
	suffixQuantStateNF4  = ".quant_state.bitsandbytes__nf4"
	suffixQuantStateFP4  = ".quant_state.bitsandbytes__fp4"
)

// maxQuantState bounds the JSON blob of a quant_state (about 150 bytes in real snapshots): a
// hostile header must not size the read.
const maxQuantState = 4096

// maxQuantValues bounds the values of one quantized tensor (Llama 3.1 405B's largest matrix has
// 2^31 or so): a quant_state's shape must not size an allocation beyond any real model.
const maxQuantValues = 1 << 36

// quantized is one NF4 weight of the snapshot, checked against its headers at Open.
type quantized struct {
	// shape is the weight's logical shape, in the dtype it had before quantization.
	shape     shapes.Shape
	blocksize int
	nested    bool
	offset    float32
	// file is the weight file holding the packed codes, for errors.
	file string
}

// companions returns the names of the tensors stored with the quantized weight name.
func companions(name string, nested bool) []string {
	out := []string{name + suffixAbsmax, name + suffixQuantMap, name + suffixQuantStateNF4}
	if nested {
		out = append(out, name+suffixNestedAbsmax, name+suffixNestedQuantMap)
	}
	return out
}

// quantState is the JSON of W.weight.quant_state.bitsandbytes__nf4 (QuantState.as_dict's
// non-tensor items).
type quantState struct {
	QuantType       string   `json:"quant_type"`
	Blocksize       int      `json:"blocksize"`
	DType           string   `json:"dtype"`
	Shape           []int    `json:"shape"`
	NestedBlocksize *int     `json:"nested_blocksize"`
	NestedDType     *string  `json:"nested_dtype"`
	NestedOffset    *float64 `json:"nested_offset"`
}

var stateDTypes = map[string]dtypes.DType{"float32": dtypes.Float32, "bfloat16": dtypes.BFloat16, "float16": dtypes.Float16}

// readQuantization reads config.json's quantization_config (none: a plain snapshot) and checks
// every quantized weight's tensors against their quant_state, from the headers and the small
// quant_state blobs only: sizes that disagree with the shape are refused before anything is
// allocated from them.
func (s *Snapshot) readQuantization() error {
	raw, ok := s.Config["quantization_config"]
	if !ok || raw == nil {
		for _, name := range slices.Sorted(maps.Keys(s.weights.Index.WeightMap)) {
			if strings.HasSuffix(name, suffixQuantStateNF4) || strings.HasSuffix(name, suffixQuantStateFP4) {
				return fmt.Errorf("%s: tensor %s is bitsandbytes-quantized, but config.json has no quantization_config", filepath.Join(s.Dir, s.FileOf(name)), name)
			}
		}
		return nil
	}
	path := filepath.Join(s.Dir, ConfigFile)
	qc, ok := raw.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: quantization_config is not an object", path)
	}
	method, _ := qc["quant_method"].(string)
	if method != "bitsandbytes" {
		return fmt.Errorf("%s: quantization_config quant_method %q is not supported (only bitsandbytes 4-bit nf4)", path, method)
	}
	flag := func(key string) bool { v, _ := qc[key].(bool); v2, _ := qc["_"+key].(bool); return v || v2 }
	if flag("load_in_8bit") {
		return fmt.Errorf("%s: quantization_config load_in_8bit: bitsandbytes' 8-bit (LLM.int8) weights are not supported; use a 4-bit nf4 snapshot or the unquantized one", path)
	}
	if !flag("load_in_4bit") {
		return fmt.Errorf("%s: quantization_config has neither load_in_4bit nor load_in_8bit true", path)
	}
	q := &Quantization{ComputeDType: dtypes.Float32}
	q.QuantType, _ = qc["bnb_4bit_quant_type"].(string)
	if q.QuantType == "" {
		q.QuantType = "fp4" // BitsAndBytesConfig's default
	}
	if q.QuantType != "nf4" {
		return fmt.Errorf("%s: quantization_config bnb_4bit_quant_type %q is not supported (only nf4)", path, q.QuantType)
	}
	q.DoubleQuant, _ = qc["bnb_4bit_use_double_quant"].(bool)
	if v, ok := qc["bnb_4bit_compute_dtype"].(string); ok {
		if q.ComputeDType, ok = stateDTypes[strings.TrimPrefix(v, "torch.")]; !ok {
			return fmt.Errorf("%s: quantization_config bnb_4bit_compute_dtype %q: want float32, bfloat16 or float16", path, v)
		}
	}
	if v, ok := qc["bnb_4bit_quant_storage"].(string); ok && v != "uint8" {
		return fmt.Errorf("%s: quantization_config bnb_4bit_quant_storage %q is not supported (only uint8)", path, v)
	}
	if skip, ok := qc["llm_int8_skip_modules"].([]any); ok {
		for _, m := range skip {
			if str, ok := m.(string); ok {
				q.SkipModules = append(q.SkipModules, str)
			}
		}
	}
	s.Quant = q
	s.quantized = map[string]quantized{}
	s.hidden = map[string]bool{}
	names := s.weights.ListTensorNames()
	slices.Sort(names)
	for _, qsName := range names {
		if strings.HasSuffix(qsName, suffixQuantStateFP4) {
			return fmt.Errorf("%s: tensor %s: fp4 weights are not supported (only nf4)", filepath.Join(s.Dir, s.FileOf(qsName)), qsName)
		}
		name, ok := strings.CutSuffix(qsName, suffixQuantStateNF4)
		if !ok {
			continue
		}
		w, err := s.checkQuantized(name, qsName)
		if err != nil {
			return err
		}
		s.quantized[name] = w
		for _, c := range companions(name, w.nested) {
			s.hidden[c] = true
		}
	}
	return nil
}

// checkQuantized validates the quantized weight name: its quant_state blob, and the dtypes and
// sizes of its packed codes, absmax and maps in the headers.
func (s *Snapshot) checkQuantized(name, qsName string) (quantized, error) {
	file := s.FileOf(qsName)
	path := filepath.Join(s.Dir, file)
	fail := func(format string, args ...any) (quantized, error) {
		return quantized{}, fmt.Errorf("%s: quantized weight %s: %s", path, name, fmt.Sprintf(format, args...))
	}
	entry := func(n string) (tensorio.SafetensorsEntry, bool) {
		e, ok := s.headers[s.FileOf(n)][n]
		return e, ok
	}
	qs, _ := entry(qsName)
	if qs.Shape.DType != dtypes.Uint8 || qs.Shape.Rank() != 1 || qs.End-qs.Begin > maxQuantState {
		return fail("quant_state %s %v: want U8 JSON of at most %d bytes", qs.Shape.DType, qs.Shape.Dimensions, maxQuantState)
	}
	blob, err := readRange(path, qs)
	if err != nil {
		return fail("quant_state: %v", err)
	}
	var st quantState
	if err := json.Unmarshal(blob, &st); err != nil {
		return fail("quant_state is not the JSON bitsandbytes writes: %v", err)
	}
	if st.QuantType != "nf4" {
		return fail("quant_state quant_type %q, want nf4", st.QuantType)
	}
	if !slices.Contains(quant.ValidBlockSizes, st.Blocksize) {
		return fail("quant_state blocksize %d, want one of %v", st.Blocksize, quant.ValidBlockSizes)
	}
	dt, ok := stateDTypes[st.DType]
	if !ok {
		return fail("quant_state dtype %q: want float32, bfloat16 or float16", st.DType)
	}
	n := int64(1)
	for _, d := range st.Shape {
		if d <= 0 || n > maxQuantValues/int64(d) {
			return fail("quant_state shape %v: want positive dimensions of at most %d values", st.Shape, int64(maxQuantValues))
		}
		n *= int64(d)
	}
	if len(st.Shape) == 0 {
		return fail("quant_state has no shape")
	}
	w := quantized{shape: shapes.Make(dt, st.Shape...), blocksize: st.Blocksize, file: file}
	blocks := (n + int64(st.Blocksize) - 1) / int64(st.Blocksize)
	want := map[string]need{
		name:                  {dtypes.Uint8, (n + 1) / 2},
		name + suffixAbsmax:   {dtypes.Float32, blocks},
		name + suffixQuantMap: {dtypes.Float32, 16},
	}
	_, w.nested = entry(name + suffixNestedAbsmax)
	if w.nested != (st.NestedOffset != nil) {
		return fail("quant_state and tensors disagree on double quantization (nested_offset %v, %s present %v)", st.NestedOffset != nil, name+suffixNestedAbsmax, w.nested)
	}
	if w.nested {
		if st.NestedBlocksize == nil || *st.NestedBlocksize != quant.NestedBlockSize {
			return fail("quant_state nested_blocksize: want %d", quant.NestedBlockSize)
		}
		if st.NestedDType == nil || *st.NestedDType != "float32" {
			return fail("quant_state nested_dtype: want float32")
		}
		off := *st.NestedOffset
		if math.IsNaN(off) || math.IsInf(off, 0) || math.Abs(off) > math.MaxFloat32 {
			return fail("quant_state nested_offset %v is not a finite float32", off)
		}
		w.offset = float32(off)
		want[name+suffixAbsmax] = need{dtypes.Uint8, blocks}
		want[name+suffixNestedAbsmax] = need{dtypes.Float32, (blocks + quant.NestedBlockSize - 1) / quant.NestedBlockSize}
		want[name+suffixNestedQuantMap] = need{dtypes.Float32, 256}
	}
	for _, t := range slices.Sorted(maps.Keys(want)) {
		e, ok := entry(t)
		if !ok {
			return quantized{}, tagged(ErrMissingTensor, "%s: quantized weight %s: missing tensor %s", path, name, t)
		}
		if e.Shape.DType != want[t].dt || int64(e.Shape.Size()) != want[t].size {
			return fail("tensor %s is %s %v, want %s of %d values (quant_state shape %v, blocksize %d)",
				t, e.Shape.DType, e.Shape.Dimensions, want[t].dt, want[t].size, st.Shape, st.Blocksize)
		}
	}
	return w, nil
}

// need is the dtype and value count a companion tensor must have.
type need struct {
	dt   dtypes.DType
	size int64
}

// readRange reads one tensor's bytes (a small one: callers bound its size) from a safetensors
// file whose header was validated.
func readRange(path string, e tensorio.SafetensorsEntry) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
		return nil, err
	}
	b := make([]byte, e.End-e.Begin)
	if _, err := f.ReadAt(b, 8+int64(n)+e.Begin); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// withCompanions returns the names to read for the requested ones: a quantized weight brings
// its packed codes' companions.
func (s *Snapshot) withCompanions(keep func(string) bool) func(string) bool {
	if len(s.quantized) == 0 {
		return keep
	}
	want := map[string]bool{}
	for name, w := range s.quantized {
		if keep == nil || keep(name) {
			for _, c := range companions(name, w.nested) {
				want[c] = true
			}
		}
	}
	return func(name string) bool {
		if s.hidden[name] {
			return want[name]
		}
		return keep == nil || keep(name)
	}
}

// dequantizeAll replaces, in ts, each quantized weight's packed codes and companions by its
// values dequantized as bitsandbytes' dequantize_4bit does, in the dtype of its quant_state.
func (s *Snapshot) dequantizeAll(ts map[string]*tensors.Tensor) error {
	packed, err := s.packAll(ts)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(packed)) {
		w := s.quantized[name]
		vals := make([]float32, packed[name].Len())
		if err := packed[name].Dequantize(vals); err != nil {
			return fmt.Errorf("%s: quantized weight %s: %v", filepath.Join(s.Dir, w.file), name, err)
		}
		// The absmax values are data, not header: a nested_absmax and offset that overflow
		// make every weight of a block ±Inf.
		if err := checkFiniteValues(vals); err != nil {
			return tagged(ErrNonFinite, "%s: quantized weight %s: dequantized %v", filepath.Join(s.Dir, w.file), name, err)
		}
		t, err := FromFloat32(vals, w.shape.DType, w.shape.Dimensions...)
		if err != nil {
			return fmt.Errorf("%s: quantized weight %s: %v", filepath.Join(s.Dir, w.file), name, err)
		}
		ts[name] = t
	}
	return nil
}

func checkFiniteValues(v []float32) error {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("value %d is %v", i, x)
		}
	}
	return nil
}

// IsQuantized reports whether the named weight is stored as bitsandbytes NF4 codes.
func (s *Snapshot) IsQuantized(name string) bool {
	_, ok := s.quantized[name]
	return ok
}

// PackedNF4 reads the quantized weights whose names keep accepts as they are stored, packed
// codes and absmax (checked as Tensors checks them), without dequantizing them: QLoRA keeps the
// frozen base in 4 bits. Names keep accepts that are not quantized are ignored.
func (s *Snapshot) PackedNF4(ctx context.Context, keep func(name string) bool) (map[string]*quant.Weight, error) {
	ts, err := s.read(ctx, s.withCompanions(func(name string) bool {
		_, q := s.quantized[name]
		return q && (keep == nil || keep(name))
	}))
	if err != nil {
		return nil, err
	}
	return s.packAll(ts)
}

// packAll builds the quant.Weight of each quantized weight read in ts, and removes its packed
// codes and companions from ts.
func (s *Snapshot) packAll(ts map[string]*tensors.Tensor) (map[string]*quant.Weight, error) {
	out := map[string]*quant.Weight{}
	for _, name := range slices.Sorted(maps.Keys(s.quantized)) {
		packed, ok := ts[name]
		if !ok {
			continue
		}
		w := s.quantized[name]
		q, err := w.weight(name, packed, ts)
		if err != nil {
			return nil, fmt.Errorf("%s: quantized weight %s: %v", filepath.Join(s.Dir, w.file), name, err)
		}
		out[name] = q
		delete(ts, name)
		for _, c := range companions(name, w.nested) {
			delete(ts, c)
		}
	}
	return out, nil
}

func (w quantized) weight(name string, packed *tensors.Tensor, ts map[string]*tensors.Tensor) (*quant.Weight, error) {
	if qm := tensors.MustCopyFlatData[float32](ts[name+suffixQuantMap]); !slices.Equal(qm, quant.NF4[:]) {
		// bitsandbytes decodes with its own table whatever the file says: another table means
		// another format, not a variant to honour.
		return nil, fmt.Errorf("quant_map is not bitsandbytes' NF4 table")
	}
	q := &quant.Weight{Dims: w.shape.Dimensions, Packed: tensors.MustCopyFlatData[uint8](packed), BlockSize: w.blocksize}
	if w.nested {
		nested := &quant.Nested{Codes: tensors.MustCopyFlatData[uint8](ts[name+suffixAbsmax]),
			Absmax: tensors.MustCopyFlatData[float32](ts[name+suffixNestedAbsmax]), Offset: w.offset}
		code := tensors.MustCopyFlatData[float32](ts[name+suffixNestedQuantMap])
		for i, v := range code {
			if v < -1 || v > 1 || (i > 0 && v < code[i-1]) {
				return nil, fmt.Errorf("nested_quant_map is not a sorted code in [-1, 1] (entry %d is %v)", i, v)
			}
		}
		copy(nested.Code[:], code)
		q.Nested = nested
	} else {
		q.Absmax = tensors.MustCopyFlatData[float32](ts[name+suffixAbsmax])
	}
	return q, nil
}
