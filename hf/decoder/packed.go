package decoder

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/quant"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// Suffixes of a packed weight's variables under BaseScope.
const (
	suffixCodes  = ".nf4_codes"
	suffixAbsmax = ".nf4_absmax"
)

// packedWeight is a frozen projection weight held as NF4: codes [n/2] (two a byte, the first
// value in the high nibble, as bitsandbytes packs them) and one float32 absmax per block, the
// double quantization undone at load (n/16 bytes more than the codes for blocks of 64, against
// the 2n of bf16). The graph dequantizes it where it is used.
type packedWeight struct {
	codes, absmax *gomlxmodel.Variable
	dims          []int
	blocksize     int
}

// setPacked creates the variables of the packed weight name: q as the snapshot stores it, or,
// when q is nil, dense quantized as bitsandbytes quantizes a weight it loads (blocks of 64,
// double quantization).
func (m *Model) setPacked(s *snapshot.Snapshot, name string, dense *tensors.Tensor, q *quant.Weight) (packedWeight, error) {
	fail := func(format string, args ...any) (packedWeight, error) {
		return packedWeight{}, fmt.Errorf("snapshot %s: %s: %s", s.Dir, name, fmt.Sprintf(format, args...))
	}
	if q == nil {
		var err error
		vals := tensors.MustCopyFlatData[float32](snapshot.ToFloat32(dense))
		if q, err = quant.QuantizeNF4(vals, dense.Shape().Dimensions, quant.BlockSize, true); err != nil {
			return fail("%v", err)
		}
	}
	n := q.Len()
	if n%q.BlockSize != 0 {
		return fail("its blocksize %d does not divide its %d values: load it with quantization none", q.BlockSize, n)
	}
	absmax, err := q.BlockAbsmax()
	if err != nil {
		return fail("%v", err)
	}
	for i, v := range absmax {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fail("absmax %d is %v", i, v)
		}
	}
	pw := packedWeight{dims: q.Dims, blocksize: q.BlockSize}
	if pw.codes, err = SetVariable(m.st, BaseScope+"/"+name+suffixCodes, tensors.FromFlatDataAndDimensions(q.Packed, len(q.Packed)), true); err != nil {
		return fail("%v", err)
	}
	if pw.absmax, err = SetVariable(m.st, BaseScope+"/"+name+suffixAbsmax, tensors.FromFlatDataAndDimensions(absmax, len(absmax)), true); err != nil {
		return fail("%v", err)
	}
	pw.codes.SetTrainable(false)
	pw.absmax.SetTrainable(false)
	return pw, nil
}

// graph returns the weight dequantized as bitsandbytes' dequantize_4bit computes it (the NF4
// level times its block's absmax, in float32), converted to dt. With anchor (gradient
// checkpointing), the dequantization is recomputed in the backward pass rather than kept.
func (pw packedWeight) graph(g *Graph, dt dtypes.DType, anchor *Node) *Node {
	codes := pw.codes.ValueGraph(g)
	if anchor != nil {
		codes = SchedulingBarrier(codes, anchor)
	}
	c := ConvertDType(codes, dtypes.Int32)
	hi := BitwiseShiftRightLogicalScalar(c, 4)
	lo := BitwiseAnd(c, Scalar(g, dtypes.Int32, 15))
	n := 2 * c.Shape().Dimensions[0]
	idx := Reshape(Stack([]*Node{hi, lo}, 1), n, 1)
	vals := Gather(Const(g, quant.NF4[:]), idx) // [n]
	vals = Mul(Reshape(vals, n/pw.blocksize, pw.blocksize), ExpandAxes(pw.absmax.ValueGraph(g), -1))
	w := Reshape(vals, pw.dims...)
	if dt != dtypes.Float32 {
		w = ConvertDType(w, dt)
	}
	return w
}
