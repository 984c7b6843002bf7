package quant

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/internal/tensorio"
)

// goldenFile is written by tools/hfparity/nf4.py (an independent reimplementation of
// bitsandbytes' quantize_4bit and dequantize_4bit in torch); regenerate it with
// `/usr/bin/python3 tools/hfparity/nf4.py` from the repository root.
var goldenFile = filepath.Join("testdata", "nf4.safetensors")

// goldenCases are nf4.py's CASES: name, blocksize, double quantization.
var goldenCases = []struct {
	name      string
	blocksize int
	nested    bool
}{
	{"normal", 64, true},
	{"odd", 64, false},
	{"blocks128", 128, true},
	{"ties", 32, false},
}

func readGolden(t *testing.T) map[string]*tensors.Tensor {
	t.Helper()
	g, err := tensorio.ReadTensors(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func flat[T float32 | uint8](t *testing.T, g map[string]*tensors.Tensor, name string) []T {
	t.Helper()
	v, ok := g[name]
	if !ok {
		t.Fatalf("%s: no tensor %s", goldenFile, name)
	}
	return tensors.MustCopyFlatData[T](v)
}

func sameBits(a, b []float32) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

func TestTablesMatchBitsandbytes(t *testing.T) {
	g := readGolden(t)
	if i := sameBits(NF4[:], flat[float32](t, g, "nf4")); i >= 0 {
		t.Errorf("NF4 differs from get_4bit_type(\"nf4\") at %d", i)
	}
	m := DynamicMap()
	want := flat[float32](t, g, "dynamic_map")
	if i := sameBits(m[:], want); i >= 0 {
		t.Errorf("DynamicMap()[%d] = %g, create_dynamic_map() has %g", i, m[i], want[i])
	}
}

// TestQuantizeNF4Golden: our packed bytes and absmax (plain, or the double quantization's codes,
// scales and offset) equal the reference's bit for bit, including halfway values (taken to the
// lower level), an all-zero block, a partial last block and an odd count; dequantized values
// equal the reference's within 1e-6 relative.
func TestQuantizeNF4Golden(t *testing.T) {
	g := readGolden(t)
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			in := g[tc.name+".input"]
			q, err := QuantizeNF4(flat[float32](t, g, tc.name+".input"), in.Shape().Dimensions, tc.blocksize, tc.nested)
			if err != nil {
				t.Fatal(err)
			}
			if want := flat[uint8](t, g, tc.name+".packed"); !slices.Equal(q.Packed, want) {
				i := 0
				for i < len(want) && i < len(q.Packed) && q.Packed[i] == want[i] {
					i++
				}
				t.Fatalf("packed: %d bytes, want %d; first difference at byte %d", len(q.Packed), len(want), i)
			}
			if tc.nested {
				if q.Nested == nil || q.Absmax != nil {
					t.Fatal("want a double-quantized absmax")
				}
				if want := flat[uint8](t, g, tc.name+".absmax"); !slices.Equal(q.Nested.Codes, want) {
					t.Errorf("absmax codes differ: %v\nwant %v", q.Nested.Codes, want)
				}
				if i := sameBits(q.Nested.Absmax, flat[float32](t, g, tc.name+".nested_absmax")); i >= 0 {
					t.Errorf("nested_absmax differs at %d", i)
				}
				if i := sameBits([]float32{q.Nested.Offset}, flat[float32](t, g, tc.name+".offset")); i >= 0 {
					t.Errorf("offset %g differs", q.Nested.Offset)
				}
			} else if i := sameBits(q.Absmax, flat[float32](t, g, tc.name+".absmax")); i >= 0 {
				t.Errorf("absmax differs at %d", i)
			}
			got := make([]float32, q.Len())
			if err := q.Dequantize(got); err != nil {
				t.Fatal(err)
			}
			want := flat[float32](t, g, tc.name+".dequant")
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-6*math.Abs(float64(want[i])) {
					t.Fatalf("dequantized value %d = %g, want %g", i, got[i], want[i])
				}
			}
		})
	}
}

func TestQuantizeNF4Refuses(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		w         []float32
		dims      []int
		blocksize int
		want      string
	}{
		{"blocksize", make([]float32, 64), []int{64}, 48, "nf4: blocksize 48, want one of [32 64 128 256 512 1024 2048 4096]"},
		{"NaN", []float32{0, float32(math.NaN())}, []int{2}, 64, "nf4: value 1 is NaN"},
		{"Inf", []float32{float32(math.Inf(-1))}, []int{1}, 64, "nf4: value 0 is -Inf"},
		{"shape", make([]float32, 6), []int{2, 2}, 64, "nf4: 6 values for shape [2 2]"},
		{"negative dimension", nil, []int{-2, 0}, 64, "nf4: shape [-2 0] has a negative dimension"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := QuantizeNF4(tc.w, tc.dims, tc.blocksize, true)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDequantizeRefusesInconsistentWeights(t *testing.T) {
	q, err := QuantizeNF4(make([]float32, 128), []int{2, 64}, 64, false)
	if err != nil {
		t.Fatal(err)
	}
	short := *q
	short.Packed = q.Packed[:10]
	fewScales := *q
	fewScales.Absmax = q.Absmax[:1]
	for _, tc := range []struct {
		desc string
		w    *Weight
		want string
	}{
		{"packed bytes", &short, "nf4: 10 packed bytes and 128 outputs for 128 values"},
		{"absmax values", &fewScales, "nf4: 1 absmax values for 2 blocks of 64"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := tc.w.Dequantize(make([]float32, 128))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestParallelBlocksSameResult: splitting the blocks over goroutines (weights of a million values
// and more) gives the bytes, absmax, values and first error of the serial pass.
func TestParallelBlocksSameResult(t *testing.T) {
	g := readGolden(t)
	run := func(threshold int) (*Weight, []float32, error) {
		defer func(old int) { parallelMin = old }(parallelMin)
		parallelMin = threshold
		in := flat[float32](t, g, "normal.input")
		q, err := QuantizeNF4(in, []int{128, 136}, 64, true)
		if err != nil {
			return nil, nil, err
		}
		out := make([]float32, q.Len())
		err = q.Dequantize(out)
		bad := slices.Clone(in)
		bad[5000], bad[9000] = float32(math.NaN()), float32(math.Inf(1))
		_, nanErr := QuantizeNF4(bad, []int{128, 136}, 64, true)
		return q, out, errors.Join(err, nanErr)
	}
	sq, sout, serr := run(math.MaxInt)
	pq, pout, perr := run(1)
	if !slices.Equal(sq.Packed, pq.Packed) || !slices.Equal(sq.Nested.Codes, pq.Nested.Codes) || sameBits(sout, pout) >= 0 {
		t.Error("the parallel pass differs from the serial one")
	}
	if serr == nil || perr == nil || serr.Error() != perr.Error() || serr.Error() != "nf4: value 5000 is NaN" {
		t.Errorf("errors %v and %v, want nf4: value 5000 is NaN from both", serr, perr)
	}
}
