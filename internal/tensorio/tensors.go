package tensorio

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// ErrBadFile marks a tensors file that is missing, truncated or not in the expected layout.
var ErrBadFile = errors.New("bad tensors file")

var safetensorsDTypes = map[dtypes.DType]string{
	dtypes.Float32: "F32",
	dtypes.Float64: "F64",
	// Half precisions: the dtypes of most pretrained checkpoints (bf16 Llama, f16 others).
	dtypes.BFloat16: "BF16",
	dtypes.Float16:  "F16",
	dtypes.Int32:    "I32",
	dtypes.Int64:    "I64",
	dtypes.Uint64:   "U64",
	dtypes.Uint32:   "U32",
	dtypes.Uint8:    "U8",
	dtypes.Int8:     "I8",
	dtypes.Int16:    "I16",
	dtypes.Uint16:   "U16",
	dtypes.Bool:     "BOOL",
}

type safetensorsEntry struct {
	DType       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// WriteTensors writes named tensors to path in the safetensors layout, atomically, names sorted:
// tracksum's own files (checkpoints, resume points), with "format": "gomlx" in the header.
func WriteTensors(path string, vars map[string]*tensors.Tensor) error {
	return WriteTensorsWith(path, vars, map[string]string{"format": "gomlx", "producer": "tracksum"})
}

// WriteTensorsWith is WriteTensors with the header's __metadata__ given: {"format": "pt"} for a
// file that transformers or PEFT must load (they refuse any other format).
func WriteTensorsWith(path string, vars map[string]*tensors.Tensor, metadata map[string]string) error {
	specs := make(map[string]shapes.Shape, len(vars))
	for name, t := range vars {
		specs[name] = t.Shape()
	}
	return WriteTensorsFunc(path, specs, metadata, func(name string) (*tensors.Tensor, error) { return vars[name], nil })
}

// WriteTensorsFunc writes the tensors named by specs to path in the safetensors layout, atomically,
// names sorted, with metadata as the header's __metadata__ (transformers refuses a file whose
// "format" is not "pt"). The header is built from specs alone and each tensor is asked from get
// just before its bytes are written, so only one tensor at a time needs to be in memory: a merged
// 8B-parameter model (16 GB) is written without holding it all. A tensor whose shape or dtype
// differs from its spec is an error.
func WriteTensorsFunc(path string, specs map[string]shapes.Shape, metadata map[string]string,
	get func(name string) (*tensors.Tensor, error)) error {
	names := make([]string, 0, len(specs))
	for name := range specs {
		names = append(names, name)
	}
	slices.Sort(names)
	header := map[string]any{}
	var offset int64
	for _, name := range names {
		spec := specs[name]
		st, ok := safetensorsDTypes[spec.DType]
		if !ok {
			return fmt.Errorf("save %s: variable %s: unsupported dtype %s", path, name, spec.DType)
		}
		dims := spec.Dimensions
		if dims == nil {
			dims = []int{}
		}
		size := int64(spec.Memory())
		header[name] = safetensorsEntry{DType: st, Shape: dims, DataOffsets: [2]int64{offset, offset + size}}
		offset += size
	}
	if metadata != nil {
		header["__metadata__"] = metadata
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	// Pad the header with spaces so the data starts 8-byte aligned, as the format recommends.
	for (8+len(hb))%8 != 0 {
		hb = append(hb, ' ')
	}
	return atomicio.WriteWith(path, 0o644, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := binary.Write(bw, binary.LittleEndian, uint64(len(hb))); err != nil {
			return err
		}
		if _, err := bw.Write(hb); err != nil {
			return err
		}
		for _, name := range names {
			t, err := get(name)
			if err != nil {
				return fmt.Errorf("save %s: variable %s: %w", path, name, err)
			}
			if t == nil || !t.Shape().Equal(specs[name]) {
				got := "nil"
				if t != nil {
					got = t.Shape().String()
				}
				return fmt.Errorf("save %s: variable %s: shape %s, declared %s", path, name, got, specs[name])
			}
			var werr error
			if err := t.ConstBytes(func(b []byte) { _, werr = bw.Write(b) }); err != nil || werr != nil {
				return fmt.Errorf("save %s: variable %s: %w", path, name, errors.Join(err, werr))
			}
		}
		return bw.Flush()
	})
}

// ReadTensors reads every tensor of a safetensors file, keyed by name.
func ReadTensors(path string) (map[string]*tensors.Tensor, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadFile, err)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadFile, path, fmt.Sprintf(format, args...))
	}
	if len(raw) < 8 {
		return nil, fail("too short (%d bytes)", len(raw))
	}
	n := binary.LittleEndian.Uint64(raw[:8])
	if n > uint64(len(raw)-8) {
		return nil, fail("header length %d exceeds file size %d", n, len(raw))
	}
	data := raw[8+n:]
	entries, err := ParseSafetensorsHeader(raw[8:8+n], int64(len(data)))
	if err != nil {
		return nil, fail("%v", err)
	}
	out := map[string]*tensors.Tensor{}
	for name, e := range entries {
		t := tensors.FromShape(e.Shape)
		if err := t.MutableBytes(func(b []byte) { copy(b, data[e.Begin:e.End]) }); err != nil {
			return nil, fail("tensor %s: %v", name, err)
		}
		out[name] = t
	}
	return out, nil
}
