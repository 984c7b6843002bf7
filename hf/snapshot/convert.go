package snapshot

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
)

// ToFloat32 converts a float tensor (f64, f32, bf16, f16) to a new float32 tensor on the host:
// weights that will be trained in float32. Other dtypes are not float weights and give zeros.
func ToFloat32(t *tensors.Tensor) *tensors.Tensor {
	out := tensors.FromShape(shapes.Make(dtypes.Float32, t.Shape().Dimensions...))
	dt := t.DType()
	tensors.MustMutableFlatData(out, func(dst []float32) {
		_ = t.ConstBytes(func(b []byte) {
			for i := range dst {
				switch dt {
				case dtypes.Float32:
					dst[i] = math.Float32frombits(le32(b[4*i:]))
				case dtypes.Float64:
					dst[i] = float32(math.Float64frombits(uint64(le32(b[8*i:])) | uint64(le32(b[8*i+4:]))<<32))
				case dtypes.BFloat16:
					dst[i] = math.Float32frombits(uint32(le16(b[2*i:])) << 16)
				case dtypes.Float16:
					dst[i] = halfToFloat32(le16(b[2*i:]))
				}
			}
		})
	})
	return out
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// halfToFloat32 converts IEEE 754 binary16 bits to float32 (exactly: every half is a float32).
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: frac * 2^-24
		v := float32(frac) * float32(math.Ldexp(1, -24))
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// FromFloat32 builds a tensor of float dtype dt and dimensions dims from float32 values, rounding
// to nearest even for the half precisions, as torch's .to(torch.bfloat16) and .to(torch.float16):
// merged weights (hf/peft) and random snapshots (hf/randsnap) are stored in a base's dtype.
func FromFloat32(v []float32, dt dtypes.DType, dims ...int) (*tensors.Tensor, error) {
	switch dt {
	case dtypes.Float32, dtypes.Float64, dtypes.BFloat16, dtypes.Float16:
	default:
		return nil, fmt.Errorf("dtype %s is not a float", dt)
	}
	t := tensors.FromShape(shapes.Make(dt, dims...))
	if n := t.Shape().Size(); n != len(v) {
		return nil, fmt.Errorf("%d values for shape %v (%d)", len(v), dims, n)
	}
	err := t.MutableBytes(func(b []byte) {
		for i, x := range v {
			switch dt {
			case dtypes.Float32:
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
			case dtypes.Float64:
				binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(float64(x)))
			case dtypes.BFloat16:
				binary.LittleEndian.PutUint16(b[2*i:], bfloat16.FromFloat32(x).Bits())
			case dtypes.Float16:
				binary.LittleEndian.PutUint16(b[2*i:], float32ToHalf(x))
			}
		}
	})
	return t, err
}

// float32ToHalf rounds v to IEEE 754 binary16 bits, to nearest even, keeping half subnormals (the
// compute library's float16.FromFloat32 flushes them to zero, where torch does not).
func float32ToHalf(v float32) uint16 {
	u := math.Float32bits(v)
	sign := uint16(u>>16) & 0x8000
	a := math.Abs(float64(v))
	switch {
	case math.IsNaN(a):
		return sign | 0x7e00
	case a >= 65520: // halfway between the largest half (65504) and 2^16 rounds to even: Inf
		return sign | 0x7c00
	case a < math.Ldexp(1, -14): // subnormal: multiples of 2^-24 (rounding up may give the smallest normal)
		return sign | uint16(math.RoundToEven(a*math.Ldexp(1, 24)))
	}
	exp := int(u>>23&0xff) - 127 + 15
	mant := u & 0x7fffff
	r := mant >> 13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++
	}
	if r == 0x400 {
		r = 0
		exp++
	}
	return sign | uint16(exp)<<10 | uint16(r)
}
