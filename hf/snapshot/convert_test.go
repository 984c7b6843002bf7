package snapshot

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
)

// TestFromFloat32Rounding: bf16 and f16 conversions round to nearest even (as torch) and are
// exact on representable values.
func TestFromFloat32Rounding(t *testing.T) {
	cases := []struct {
		v        float32
		bf, half uint16
	}{
		{1, 0x3f80, 0x3c00},
		{-2, 0xc000, 0xc000},
		{0.1, 0x3dcd, 0x2e66},
		{65504, 0x4780, 0x7bff},
		{1e-7, 0x33d7, 0x0002},
		{0, 0, 0},
		{70000, 0x4789, 0x7c00},   // beyond the largest half: +Inf, as torch
		{-6.1e-5, 0xb880, 0x83ff}, // a half subnormal (torch 1.13's values)
	}
	for _, tc := range cases {
		if got := halfBits(t, tc.v, dtypes.BFloat16); got != tc.bf {
			t.Errorf("bf16(%g) = %#04x, want %#04x", tc.v, got, tc.bf)
		}
		if got := halfBits(t, tc.v, dtypes.Float16); got != tc.half {
			t.Errorf("f16(%g) = %#04x, want %#04x", tc.v, got, tc.half)
		}
	}
}

func halfBits(t *testing.T, v float32, dt dtypes.DType) uint16 {
	t.Helper()
	x, err := FromFloat32([]float32{v}, dt)
	if err != nil {
		t.Fatal(err)
	}
	var bits uint16
	x.ConstBytes(func(b []byte) { bits = binary.LittleEndian.Uint16(b) })
	back := ToFloat32(x)
	if got := back.Value().(float32); math.Abs(float64(v)) < 65504 && math.Abs(float64(got-v)) > math.Abs(float64(v))*1e-2+1e-6 {
		t.Errorf("%s(%g) reads back as %g", dt, v, got)
	}
	return bits
}
