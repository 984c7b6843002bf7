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
	"github.com/tracksum/tracksum/hf/weights"
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
	if pw.codes, err = weights.SetVariable(m.st, BaseScope+"/"+name+suffixCodes, tensors.FromFlatDataAndDimensions(q.Packed, len(q.Packed)), true); err != nil {
		return fail("%v", err)
	}
	if pw.absmax, err = weights.SetVariable(m.st, BaseScope+"/"+name+suffixAbsmax, tensors.FromFlatDataAndDimensions(absmax, len(absmax)), true); err != nil {
		return fail("%v", err)
	}
	pw.codes.SetTrainable(false)
	pw.absmax.SetTrainable(false)
	return pw, nil
}

// nf4Pairs is the NF4 levels of each byte of codes: row b is (NF4[b>>4], NF4[b&15]), the high
// nibble first as bitsandbytes packs them.
var nf4Pairs = func() [][]float32 {
	t := make([][]float32, 256)
	for b := range t {
		t[b] = []float32{quant.NF4[b>>4], quant.NF4[b&15]}
	}
	return t
}()

// graph returns the weight dequantized as bitsandbytes' dequantize_4bit computes it (the NF4
// level times its block's absmax, in float32), converted to dt. With anchor (gradient
// checkpointing), the dequantization is recomputed in the backward pass rather than kept.
func (pw packedWeight) graph(g *Graph, dt dtypes.DType, anchor *Node) *Node {
	codes := pw.codes.ValueGraph(g)
	if anchor != nil {
		codes = SchedulingBarrier(codes, anchor)
	}
	// One gather of a byte's two levels from a 256-row table: half the gathered indices of a
	// gather per nibble, and no shifts, masks or stacking (BenchmarkLoRAStepNF4).
	n := 2 * codes.Shape().Dimensions[0]
	idx := Reshape(ConvertDType(codes, dtypes.Int32), n/2, 1)
	vals := Reshape(Gather(Const(g, nf4Pairs), idx), n) // [n/2, 2] -> [n]
	vals = Mul(Reshape(vals, n/pw.blocksize, pw.blocksize), ExpandAxes(pw.absmax.ValueGraph(g), -1))
	w := Reshape(vals, pw.dims...)
	if dt != dtypes.Float32 {
		w = ConvertDType(w, dt)
	}
	return w
}
