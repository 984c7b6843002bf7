// Package quant is bitsandbytes' 4-bit NormalFloat (NF4) codec, the format of QLoRA's frozen base
// and of the "-bnb-4bit" snapshots transformers writes: blockwise absmax scaling, 16 levels packed
// two per byte, and the double quantization of the absmax values (their mean subtracted, then
// 8-bit blockwise with bitsandbytes' dynamic code map). It is written from bitsandbytes' source
// (bitsandbytes/functional.py, backends/default/ops.py, csrc/kernels.cu), and checked against an
// independent Python reference (tools/hfparity/nf4.py) by golden files.
//
// Rounding follows bitsandbytes exactly: a block's values are multiplied by the float32
// reciprocal of its absmax, and each goes to the nearest level; a value exactly halfway between
// two NF4 levels takes the lower one (the CUDA kernel's `x > midpoint` tree and the default
// backend's torch.bucketize agree on this). An all-zero block has absmax 0 and codes of the level
// 0.0 (the default backend's clamp of absmax to 1e-38; the CUDA kernel would write the code of
// -1.0, which dequantizes to the same zeros). The 8-bit codes of double quantization follow the
// CUDA kernel's binary search (dQuantize), whose ties go to the level it probed last.
//
// # Example
//
//	q, err := quant.QuantizeNF4(w, quant.BlockSize, true)
//	back := make([]float32, len(w))
//	err = q.Dequantize(back)
package quant

import (
	"fmt"
	"math"
	"runtime"
	"sync"
)

// BlockSize is bitsandbytes' default 4-bit block (quantize_4bit's blocksize=None) and the one
// transformers writes; NestedBlockSize is the block of the absmax values' double quantization.
const (
	BlockSize       = 64
	NestedBlockSize = 256
)

// NF4 is the NormalFloat4 table of bitsandbytes (get_4bit_type("nf4")): quantiles of N(0, 1)
// normalized to [-1, 1], 7 negative levels, zero and 8 positive ones, sorted. Code i dequantizes
// to NF4[i] times its block's absmax.
var NF4 = [16]float32{
	-1.0,
	-0.6961928009986877,
	-0.5250730514526367,
	-0.39491748809814453,
	-0.28444138169288635,
	-0.18477343022823334,
	-0.09105003625154495,
	0.0,
	0.07958029955625534,
	0.16093020141124725,
	0.24611230194568634,
	0.33791524171829224,
	0.44070982933044434,
	0.5626170039176941,
	0.7229568362236023,
	1.0,
}

// nf4Midpoints are the float32 midpoints (NF4[i]+NF4[i+1])/2, the thresholds of the CUDA
// kernel's decision tree (dQuantizeNF4) and of the default backend's bucketize.
var nf4Midpoints = func() (m [15]float32) {
	for i := range m {
		m[i] = (NF4[i] + NF4[i+1]) / 2
	}
	return m
}()

// ValidBlockSizes are the 4-bit block sizes bitsandbytes accepts.
var ValidBlockSizes = []int{32, 64, 128, 256, 512, 1024, 2048, 4096}

// minAbsmax is the default backend's clamp of absmax before its reciprocal is taken (an all-zero
// block scales by 1e38 instead of dividing by zero).
const minAbsmax = 1e-38

// DynamicMap returns bitsandbytes' signed 8-bit dynamic code map (create_dynamic_map(signed=True,
// max_exponent_bits=7, total_bits=8)): for each exponent e in 0..6, 2^e positive and 2^e
// negative levels 10^(e-6) * m, m the midpoints of 2^e+1 evenly spaced points of [0.1, 1], then 0
// and 1, sorted. The values are a literal, those torch 1.13 computes on the CPU
// (tools/hfparity/nf4.py writes them to the golden file the tests compare with): torch.linspace's
// float32 rounding depends on the kernel that runs it (vector width, fused multiply-adds), so a
// recomputation would differ in the last bit of a few entries. A snapshot stores the map it was
// quantized with (nested_quant_map), and reading one uses that.
func DynamicMap() [256]float32 {
	var out [256]float32
	for i, b := range dynamicMapBits {
		out[i] = math.Float32frombits(b)
	}
	return out
}

// dynamicMapBits are the float32 bits of create_dynamic_map(), ascending.
var dynamicMapBits = [256]uint32{
	0xbf7e3333, 0xbf7a9999, 0xbf770000, 0xbf736666, 0xbf6fcccc, 0xbf6c3333, 0xbf68999a, 0xbf650000,
	0xbf616666, 0xbf5dcccc, 0xbf5a3333, 0xbf569999, 0xbf530000, 0xbf4f6666, 0xbf4bcccc, 0xbf483333,
	0xbf44999a, 0xbf410000, 0xbf3d6667, 0xbf39cccd, 0xbf363334, 0xbf32999a, 0xbf2f0000, 0xbf2b6667,
	0xbf27cccd, 0xbf243333, 0xbf20999a, 0xbf1d0000, 0xbf196666, 0xbf15cccd, 0xbf123334, 0xbf0e999a,
	0xbf0b0000, 0xbf076666, 0xbf03cccd, 0xbf003333, 0xbef93334, 0xbef20000, 0xbeeacccc, 0xbee3999a,
	0xbedc6666, 0xbed53332, 0xbece0000, 0xbec6cccc, 0xbebf999a, 0xbeb86666, 0xbeb13332, 0xbeaa0000,
	0xbea2cccc, 0xbe9b999a, 0xbe946666, 0xbe8d3334, 0xbe860000, 0xbe7d999a, 0xbe6f3334, 0xbe60cccd,
	0xbe526666, 0xbe440000, 0xbe359999, 0xbe273333, 0xbe18cccd, 0xbe0a6666, 0xbdf80000, 0xbddb3334,
	0xbdc9eb85, 0xbdc428f5, 0xbdbe6667, 0xbdb8a3d7, 0xbdb2e148, 0xbdad1eb8, 0xbda75c28, 0xbda1999a,
	0xbd9bd70a, 0xbd96147b, 0xbd9051eb, 0xbd8a8f5d, 0xbd84cccd, 0xbd7e147a, 0xbd728f5d, 0xbd670a3d,
	0xbd5b851f, 0xbd500000, 0xbd447ae1, 0xbd38f5c3, 0xbd2d70a3, 0xbd21eb85, 0xbd166667, 0xbd0ae147,
	0xbcfeb852, 0xbce7ae13, 0xbcd0a3d7, 0xbcb9999a, 0xbca28f5c, 0xbc8b851f, 0xbc68f5c3, 0xbc3ae148,
	0xbc1f3b64, 0xbc160418, 0xbc0ccccd, 0xbc039581, 0xbbf4bc6a, 0xbbe24dd3, 0xbbcfdf3b, 0xbbbd70a4,
	0xbbab020d, 0xbb989374, 0xbb8624dd, 0xbb676c8a, 0xbb428f5c, 0xbb1db22d, 0xbaf1a9fc, 0xbaa7ef9d,
	0xba7765ff, 0xba59e83e, 0xba3c6a80, 0xba1eecc1, 0xba016f01, 0xb9c7e283, 0xb98ce705, 0xb923d70b,
	0xb8ba1f4b, 0xb88aefb3, 0xb8378034, 0xb7b24206, 0xb70205ff, 0xb65a1a94, 0xb513a3b7, 0x00000000,
	0x3513a3b7, 0x365a1a94, 0x370205ff, 0x37b24206, 0x38378034, 0x388aefb3, 0x38ba1f4b, 0x3923d70b,
	0x398ce705, 0x39c7e283, 0x3a016f01, 0x3a1eecc1, 0x3a3c6a80, 0x3a59e83e, 0x3a7765ff, 0x3aa7ef9d,
	0x3af1a9fc, 0x3b1db22d, 0x3b428f5c, 0x3b676c8a, 0x3b8624dd, 0x3b989374, 0x3bab020d, 0x3bbd70a4,
	0x3bcfdf3b, 0x3be24dd3, 0x3bf4bc6a, 0x3c039581, 0x3c0ccccd, 0x3c160418, 0x3c1f3b64, 0x3c3ae148,
	0x3c68f5c3, 0x3c8b851f, 0x3ca28f5c, 0x3cb9999a, 0x3cd0a3d7, 0x3ce7ae13, 0x3cfeb852, 0x3d0ae147,
	0x3d166667, 0x3d21eb85, 0x3d2d70a3, 0x3d38f5c3, 0x3d447ae1, 0x3d500000, 0x3d5b851f, 0x3d670a3d,
	0x3d728f5d, 0x3d7e147a, 0x3d84cccd, 0x3d8a8f5d, 0x3d9051eb, 0x3d96147b, 0x3d9bd70a, 0x3da1999a,
	0x3da75c28, 0x3dad1eb8, 0x3db2e148, 0x3db8a3d7, 0x3dbe6667, 0x3dc428f5, 0x3dc9eb85, 0x3ddb3334,
	0x3df80000, 0x3e0a6666, 0x3e18cccd, 0x3e273333, 0x3e359999, 0x3e440000, 0x3e526666, 0x3e60cccd,
	0x3e6f3334, 0x3e7d999a, 0x3e860000, 0x3e8d3334, 0x3e946666, 0x3e9b999a, 0x3ea2cccc, 0x3eaa0000,
	0x3eb13332, 0x3eb86666, 0x3ebf999a, 0x3ec6cccc, 0x3ece0000, 0x3ed53332, 0x3edc6666, 0x3ee3999a,
	0x3eeacccc, 0x3ef20000, 0x3ef93334, 0x3f003333, 0x3f03cccd, 0x3f076666, 0x3f0b0000, 0x3f0e999a,
	0x3f123334, 0x3f15cccd, 0x3f196666, 0x3f1d0000, 0x3f20999a, 0x3f243333, 0x3f27cccd, 0x3f2b6667,
	0x3f2f0000, 0x3f32999a, 0x3f363334, 0x3f39cccd, 0x3f3d6667, 0x3f410000, 0x3f44999a, 0x3f483333,
	0x3f4bcccc, 0x3f4f6666, 0x3f530000, 0x3f569999, 0x3f5a3333, 0x3f5dcccc, 0x3f616666, 0x3f650000,
	0x3f68999a, 0x3f6c3333, 0x3f6fcccc, 0x3f736666, 0x3f770000, 0x3f7a9999, 0x3f7e3333, 0x3f800000,
}

// Nested is the double quantization of a weight's absmax values (quantize_4bit with
// compress_statistics): Offset is their mean, and the values minus Offset are 8-bit codes into
// Code, scaled per block of NestedBlockSize by Absmax. In a snapshot they are W.weight.absmax
// (Codes, U8), W.weight.nested_absmax, W.weight.nested_quant_map and the quant_state's
// nested_offset.
type Nested struct {
	Codes  []uint8
	Absmax []float32
	Code   [256]float32
	Offset float32
}

// Weight is one tensor quantized to NF4 as bitsandbytes' quantize_4bit writes it.
type Weight struct {
	// Dims is the tensor's shape (e.g. [out, in] of a linear layer).
	Dims []int
	// Packed holds the codes two per byte, the first value in the high nibble; an odd count
	// pads the last low nibble with the code of 0.0.
	Packed []uint8
	// BlockSize is the number of consecutive values sharing one absmax.
	BlockSize int
	// Absmax is one float32 scale per block, when the weight is not double-quantized.
	Absmax []float32
	// Nested holds the absmax values double-quantized, or nil.
	Nested *Nested
}

// Len returns the number of values of the weight (the product of Dims).
func (w *Weight) Len() int {
	n := 1
	for _, d := range w.Dims {
		n *= d
	}
	return n
}

// QuantizeNF4 quantizes w (the values of a tensor of shape dims, row-major) in blocks of
// blocksize values, and double-quantizes the absmax values when nested is set (transformers'
// bnb_4bit_use_double_quant). NaN or ±Inf values are refused: bitsandbytes would write
// meaningless codes for them.
func QuantizeNF4(w []float32, dims []int, blocksize int, nested bool) (*Weight, error) {
	if err := checkBlockSize(blocksize); err != nil {
		return nil, err
	}
	n := 1
	for _, d := range dims {
		if d < 0 {
			return nil, fmt.Errorf("nf4: shape %v has a negative dimension", dims)
		}
		n *= d
	}
	if n != len(w) {
		return nil, fmt.Errorf("nf4: %d values for shape %v", len(w), dims)
	}
	blocks := (n + blocksize - 1) / blocksize
	q := &Weight{Dims: append([]int(nil), dims...), Packed: make([]uint8, (n+1)/2), BlockSize: blocksize}
	absmax := make([]float32, blocks)
	// Blocks hold an even number of values: each writes its own bytes of Packed.
	err := forBlocks(blocks, n, func(lo, hi int) error {
		for b := lo; b < hi; b++ {
			block := w[b*blocksize : min((b+1)*blocksize, n)]
			var am float32
			for i, v := range block {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return fmt.Errorf("nf4: value %d is %v", b*blocksize+i, v)
				}
				am = max(am, float32(math.Abs(float64(v))))
			}
			absmax[b] = am
			inv := 1 / max(am, minAbsmax)
			for i, v := range block {
				c := nf4Code(v * inv)
				k := b*blocksize + i
				if k%2 == 0 {
					q.Packed[k/2] = c << 4
				} else {
					q.Packed[k/2] |= c
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n%2 == 1 {
		q.Packed[n/2] |= nf4Code(0)
	}
	if nested {
		q.Nested = DoubleQuantize(absmax)
	} else {
		q.Absmax = absmax
	}
	return q, nil
}

// nf4Code returns the code of the NF4 level nearest to x (a value scaled into [-1, 1]; beyond,
// the end levels), halfway values taking the lower level.
func nf4Code(x float32) uint8 {
	lo, hi := 0, len(nf4Midpoints)
	for lo < hi {
		mid := (lo + hi) / 2
		if x > nf4Midpoints[mid] {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return uint8(lo)
}

// DoubleQuantize is bitsandbytes' compress_statistics: the mean of absmax is subtracted, and the
// differences are quantized blockwise (NestedBlockSize) to 8-bit codes of DynamicMap. The mean
// is summed in float64 and rounded to float32 (torch's float32 mean may differ in the last bit;
// a snapshot stores the offset it used, and dequantization reads that).
func DoubleQuantize(absmax []float32) *Nested {
	var sum float64
	for _, v := range absmax {
		sum += float64(v)
	}
	var offset float32
	if len(absmax) > 0 {
		offset = float32(sum / float64(len(absmax)))
	}
	shifted := make([]float32, len(absmax))
	for i, v := range absmax {
		shifted[i] = v - offset
	}
	code := DynamicMap()
	codes, nestedAbsmax := QuantizeBlockwise(shifted, &code, NestedBlockSize)
	return &Nested{Codes: codes, Absmax: nestedAbsmax, Code: code, Offset: offset}
}

// QuantizeBlockwise is bitsandbytes' 8-bit quantize_blockwise: per block of blocksize values,
// their absmax, and each value times the float32 reciprocal of absmax coded to the nearest entry
// of code (sorted), searched as the CUDA kernel's dQuantize does.
func QuantizeBlockwise(a []float32, code *[256]float32, blocksize int) (codes []uint8, absmax []float32) {
	n := len(a)
	blocks := (n + blocksize - 1) / blocksize
	codes = make([]uint8, n)
	absmax = make([]float32, blocks)
	for b := range blocks {
		block := a[b*blocksize : min((b+1)*blocksize, n)]
		var am float32
		for _, v := range block {
			am = max(am, float32(math.Abs(float64(v))))
		}
		absmax[b] = am
		inv := 1 / max(am, minAbsmax)
		for i, v := range block {
			codes[b*blocksize+i] = dynamicCode(code, v*inv)
		}
	}
	return codes, absmax
}

// dynamicCode is csrc/kernels.cu's dQuantize<0>: a binary search from the middle of the sorted
// code for the entry nearest to x, which compares x only with the midpoints on its side of the
// last probed entry.
func dynamicCode(code *[256]float32, x float32) uint8 {
	pivot, upperPivot, lowerPivot := 127, 255, 0
	lower, upper := float32(-1), float32(1)
	val := code[pivot]
	for i := 64; i > 0; i >>= 1 {
		if x > val {
			lowerPivot, lower = pivot, val
			pivot += i
		} else {
			upperPivot, upper = pivot, val
			pivot -= i
		}
		val = code[pivot]
	}
	if upperPivot == 255 {
		upper = code[upperPivot]
	}
	if lowerPivot == 0 {
		lower = code[lowerPivot]
	}
	if x > val {
		if x > (upper+val)*0.5 {
			return uint8(upperPivot)
		}
		return uint8(pivot)
	}
	if x < (lower+val)*0.5 {
		return uint8(lowerPivot)
	}
	return uint8(pivot)
}

// DequantizeBlockwise is bitsandbytes' dequantize_blockwise into float32: out[i] =
// code[codes[i]] * absmax[i/blocksize].
func DequantizeBlockwise(codes []uint8, absmax []float32, code []float32, blocksize int, out []float32) error {
	if blocksize <= 0 || len(code) != 256 {
		return fmt.Errorf("blockwise: blocksize %d and a code of %d entries, want a positive blocksize and 256", blocksize, len(code))
	}
	if len(out) != len(codes) || len(absmax) != (len(codes)+blocksize-1)/blocksize {
		return fmt.Errorf("blockwise: %d codes, %d absmax values of blocks of %d and %d outputs do not agree", len(codes), len(absmax), blocksize, len(out))
	}
	for i, c := range codes {
		// The conversion keeps the product rounded, so a later addition is not fused with it.
		out[i] = float32(code[c] * absmax[i/blocksize])
	}
	return nil
}

// BlockAbsmax returns the weight's per-block absmax values, undoing the double quantization
// (dequantize_blockwise, then the offset added, each rounded to float32 as bitsandbytes does).
func (w *Weight) BlockAbsmax() ([]float32, error) {
	if w.Nested == nil {
		return w.Absmax, nil
	}
	out := make([]float32, len(w.Nested.Codes))
	if err := DequantizeBlockwise(w.Nested.Codes, w.Nested.Absmax, w.Nested.Code[:], NestedBlockSize, out); err != nil {
		return nil, err
	}
	for i := range out {
		out[i] += w.Nested.Offset
	}
	return out, nil
}

// Dequantize writes the weight's values (float32, as bitsandbytes computes them before the
// conversion to the weight's dtype) into out, which must hold Len values.
func (w *Weight) Dequantize(out []float32) error {
	n := w.Len()
	if err := checkBlockSize(w.BlockSize); err != nil {
		return err
	}
	blocks := (n + w.BlockSize - 1) / w.BlockSize
	if len(out) != n || len(w.Packed) != (n+1)/2 {
		return fmt.Errorf("nf4: %d packed bytes and %d outputs for %d values", len(w.Packed), len(out), n)
	}
	absmax, err := w.BlockAbsmax()
	if err != nil {
		return err
	}
	if len(absmax) != blocks {
		return fmt.Errorf("nf4: %d absmax values for %d blocks of %d", len(absmax), blocks, w.BlockSize)
	}
	return forBlocks(blocks, n, func(lo, hi int) error {
		for i := lo * w.BlockSize; i < min(hi*w.BlockSize, n); i++ {
			c := w.Packed[i/2]
			if i%2 == 0 {
				c >>= 4
			}
			out[i] = NF4[c&0xF] * absmax[i/w.BlockSize]
		}
		return nil
	})
}

// parallelMin is the number of values from which QuantizeNF4 and Dequantize split their blocks
// over GOMAXPROCS goroutines (a base quantized or dequantized at load has billions): the result
// is the same, and so is the error (the first chunk's).
var parallelMin = 1 << 20

// forBlocks runs fn over [0, blocks) in contiguous chunks, concurrently when the n values are
// many, and returns the error of the first chunk that failed.
func forBlocks(blocks, n int, fn func(lo, hi int) error) error {
	workers := 1
	if n >= parallelMin {
		workers = min(runtime.GOMAXPROCS(0), blocks)
	}
	if workers <= 1 {
		return fn(0, blocks)
	}
	per := (blocks + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for k := range workers {
		lo, hi := k*per, min((k+1)*per, blocks)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = fn(lo, hi)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func checkBlockSize(b int) error {
	for _, v := range ValidBlockSizes {
		if v == b {
			return nil
		}
	}
	return fmt.Errorf("nf4: blocksize %d, want one of %v", b, ValidBlockSizes)
}
