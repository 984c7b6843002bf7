package snapshot

import (
	"math"

	"github.com/gomlx/compute/dtypes"
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
