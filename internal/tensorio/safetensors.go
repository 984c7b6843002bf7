package tensorio

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
)

// MaxSafetensorsHeader bounds the JSON header of a safetensors file (the Rust reference and
// go-huggingface use 100 MB): a header length read from a hostile file must not size an allocation.
const MaxSafetensorsHeader = 100 << 20

// SafetensorsEntry is one tensor of a validated safetensors header.
type SafetensorsEntry struct {
	// Name is the tensor's key in the header.
	Name string
	// Shape is its dtype and dimensions.
	Shape shapes.Shape
	// Begin and End are its byte range in the data section (after the header).
	Begin, End int64
}

// ParseSafetensorsHeader parses the JSON header of a safetensors file and validates every entry,
// so that no reader (our checkpoints, snapshots, adapters) trusts a size from the file: a known
// dtype, no negative dimension, a byte size that fits in int64 (a product that would wrap is
// refused), data_offsets with 0 <= begin <= end and end - begin equal to that size, end within
// dataLen (the bytes after the header; negative: not checked), and no two tensors sharing a byte
// (the format forbids overlaps). The errors are one line without the file name: callers prefix it.
func ParseSafetensorsHeader(header []byte, dataLen int64) (map[string]SafetensorsEntry, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, fmt.Errorf("header: %v", err)
	}
	if raw == nil {
		return nil, errors.New("header: not a JSON object")
	}
	byName := make(map[string]dtypes.DType, len(safetensorsDTypes))
	for dt, name := range safetensorsDTypes {
		byName[name] = dt
	}
	out := make(map[string]SafetensorsEntry, len(raw))
	for name, msg := range raw {
		if name == "__metadata__" {
			continue
		}
		var e safetensorsEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("tensor %s: %v", name, err)
		}
		dt, ok := byName[e.DType]
		if !ok {
			return nil, fmt.Errorf("tensor %s: unsupported dtype %q", name, e.DType)
		}
		size := int64(dt.Size())
		for _, d := range e.Shape {
			if d < 0 {
				return nil, fmt.Errorf("tensor %s: shape %v has a negative dimension", name, e.Shape)
			}
			if d > 0 && size > math.MaxInt64/int64(d) {
				return nil, fmt.Errorf("tensor %s: shape %v %s is too large (its byte size overflows)", name, e.Shape, e.DType)
			}
			size *= int64(d)
		}
		begin, end := e.DataOffsets[0], e.DataOffsets[1]
		switch {
		case begin < 0 || end < 0:
			return nil, fmt.Errorf("tensor %s: data_offsets %v: an offset is negative", name, e.DataOffsets)
		case end < begin:
			return nil, fmt.Errorf("tensor %s: data_offsets %v: end before begin", name, e.DataOffsets)
		case end-begin != size:
			return nil, fmt.Errorf("tensor %s: shape %v %s needs %d bytes, the header gives %d", name, e.Shape, e.DType, size, end-begin)
		case dataLen >= 0 && end > dataLen:
			return nil, fmt.Errorf("truncated: tensor %s ends at data byte %d, the file holds %d after its header", name, end, dataLen)
		}
		out[name] = SafetensorsEntry{Name: name, Shape: shapes.Make(dt, e.Shape...), Begin: begin, End: end}
	}
	// Overlaps: sorted by begin, each non-empty tensor must start at or after the previous end.
	sorted := make([]SafetensorsEntry, 0, len(out))
	for _, e := range out {
		if e.End > e.Begin {
			sorted = append(sorted, e)
		}
	}
	slices.SortFunc(sorted, func(a, b SafetensorsEntry) int {
		if a.Begin != b.Begin {
			return compareInt64(a.Begin, b.Begin)
		}
		return strings.Compare(a.Name, b.Name)
	})
	for i := 1; i < len(sorted); i++ {
		if prev, cur := sorted[i-1], sorted[i]; cur.Begin < prev.End {
			return nil, fmt.Errorf("tensors %s [%d, %d) and %s [%d, %d) overlap", prev.Name, prev.Begin, prev.End, cur.Name, cur.Begin, cur.End)
		}
	}
	return out, nil
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ReadSafetensorsHeader reads and validates (ParseSafetensorsHeader) the header of the safetensors
// file at path without reading its data; the tensors' byte ranges are checked against the file's
// size. Errors wrap ErrBadFile and name path.
func ReadSafetensorsHeader(path string) (map[string]SafetensorsEntry, error) {
	fail := func(format string, args ...any) error {
		return &headerError{msg: path + ": " + fmt.Sprintf(format, args...)}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &headerError{msg: err.Error(), cause: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fail("%v", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fail("not a regular file")
	}
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
		return nil, fail("unreadable safetensors header: the file has %d bytes", fi.Size())
	}
	if n > MaxSafetensorsHeader || n > uint64(fi.Size()-8) {
		return nil, fail("header length %d exceeds the file size %d (or %d MB)", n, fi.Size(), MaxSafetensorsHeader>>20)
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(f, header); err != nil {
		return nil, fail("header: %v", err)
	}
	entries, err := ParseSafetensorsHeader(header, fi.Size()-8-int64(n))
	if err != nil {
		return nil, fail("%v", err)
	}
	return entries, nil
}

// headerError is a one-line message that errors.Is matches with ErrBadFile, without the
// sentinel's text in the message (snapshot errors are not "variables files").
type headerError struct {
	msg   string
	cause error
}

func (e *headerError) Error() string { return e.msg }
func (e *headerError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrBadFile, e.cause}
	}
	return []error{ErrBadFile}
}
