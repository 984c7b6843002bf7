#!/usr/bin/python3
"""Golden NF4 quantizations for hf/quant's tests: bitsandbytes' 4-bit codec, written again here.

bitsandbytes is not installable here, so this reimplements, from its source, what
`bitsandbytes.functional.quantize_4bit(A, blocksize, compress_statistics, quant_type="nf4")` and
`dequantize_4bit` compute (backends/default/ops.py for the 4-bit codes, csrc/kernels.cu's
dQuantize for the 8-bit codes of the double quantization, functional.py for the NF4 table, the
dynamic map and the nesting), in torch on the CPU (Debian's python3-torch 1.13), independently of
the Go code. It writes hf/quant/testdata/nf4.safetensors:

  nf4, dynamic_map                 the 16 NF4 levels and the 256-entry 8-bit dynamic map
  <case>.input                     seeded weights (float32)
  <case>.packed                    U8 [(n+1)/2, 1], two codes per byte, the first in the high nibble
  <case>.absmax                    float32 per block, or (nested) the U8 codes of absmax - offset
  <case>.nested_absmax, .offset    (nested) float32 scales per 256 absmax values, and the mean
  <case>.dequant                   the dequantized weights (float32)

and the cases' blocksize, nesting and shape in __metadata__["cases"].

Rounding (what the Go code must match byte for byte): values scaled by the float32 reciprocal of
their block's absmax (clamped to 1e-38), each to the nearest level, a tie to the lower level (the
CUDA kernel's tree and the default backend's bucketize). The default backend divides the last,
partial block by its absmax instead; the CUDA kernel, which wrote the Hub's snapshots, multiplies
every block by the reciprocal, as here. The double quantization's offset is the mean of the
absmax values summed in float64 (torch's float32 mean may differ in the last bit; a snapshot
stores the offset it used).

Regenerate: /usr/bin/python3 tools/hfparity/nf4.py   (from the repository root)
"""

import itertools  # noqa: F401  (create_dynamic_map's module imports it)
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _st  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "hf", "quant", "testdata", "nf4.safetensors")

# bitsandbytes/functional.py get_4bit_type("nf4") (divided by its max, 1.0).
NF4 = torch.tensor([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
    0.7229568362236023, 1.0], dtype=torch.float32)

# csrc/kernels.cu dQuantizeNF4's thresholds, in the order of the levels they separate.
CUDA_TREE = [-0.8480964004993439, -0.6106329262256622, -0.4599952697753906, -0.33967943489551544,
             -0.23460740596055984, -0.13791173323988914, -0.045525018125772476, 0.03979014977812767,
             0.1202552504837513, 0.2035212516784668, 0.2920137718319893, 0.3893125355243683,
             0.5016634166240692, 0.6427869200706482, 0.8614784181118011]


def create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8):
    """bitsandbytes/functional.py create_dynamic_map, as written there."""
    data = []
    non_sign_bits = total_bits - 1
    additional_items = 2 ** (non_sign_bits - max_exponent_bits) - 1
    for i in range(max_exponent_bits):
        fraction_items = int(
            2 ** (i + non_sign_bits - max_exponent_bits) + 1
            if signed
            else 2 ** (i + non_sign_bits - max_exponent_bits + 1) + 1,
        )
        boundaries = torch.linspace(0.1, 1, fraction_items, dtype=torch.float32)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
    if additional_items > 0:
        boundaries = torch.linspace(0.1, 1, additional_items + 1, dtype=torch.float32)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
    data.append(0)
    data.append(1.0)
    assert len(data) == 2**total_bits
    gap = 256 - len(data)
    for i in range(gap):
        data.append(0)
    data.sort()
    return torch.tensor(data, dtype=torch.float32)


def blocks_of(a, blocksize):
    """The values as [blocks, blocksize], the last block padded with zeros (which change neither
    its absmax nor its other codes), and the count."""
    flat = a.reshape(-1).float()
    n = flat.numel()
    pad = (-n) % blocksize
    return torch.cat([flat, torch.zeros(pad)]).reshape(-1, blocksize), n


def quantize_4bit(a, blocksize):
    """backends/default/ops.py quantize_4bit (nf4), every block scaled by a reciprocal."""
    blocks, n = blocks_of(a, blocksize)
    absmax = blocks.abs().max(dim=-1)[0]
    scaled = torch.clamp(blocks * (1.0 / absmax.clamp(min=1e-38).view(-1, 1)), -1, 1).reshape(-1)[:n]
    if n % 2:
        scaled = torch.nn.functional.pad(scaled, (0, 1))
    bounds = (NF4[:-1] + NF4[1:]) / 2
    q = torch.bucketize(scaled, bounds, out_int32=True).to(torch.uint8)
    # The CUDA kernel's tree, `x > threshold` down to a leaf, gives the same codes.
    tree = torch.tensor(CUDA_TREE, dtype=torch.float32)
    assert torch.equal(bounds, tree), "NF4 midpoints differ from the CUDA tree's thresholds"
    assert torch.equal((scaled.view(-1, 1) > tree.view(1, -1)).sum(-1).to(torch.uint8), q)
    packed = ((q[::2] << 4) | q[1::2]).unsqueeze(1)
    return packed, absmax


def dquantize(code, x):
    """csrc/kernels.cu dQuantize<0>: the binary search for the nearest code entry."""
    pivot, upper_pivot, lower_pivot = 127, 255, 0
    lower, upper = np.float32(-1.0), np.float32(1.0)
    val = code[pivot]
    i = 64
    while i > 0:
        if x > val:
            lower_pivot, lower = pivot, val
            pivot += i
        else:
            upper_pivot, upper = pivot, val
            pivot -= i
        val = code[pivot]
        i >>= 1
    if upper_pivot == 255:
        upper = code[upper_pivot]
    if lower_pivot == 0:
        lower = code[lower_pivot]
    half = np.float32(0.5)
    if x > val:
        return upper_pivot if x > (upper + val) * half else pivot
    return lower_pivot if x < (lower + val) * half else pivot


def quantize_blockwise(a, code, blocksize):
    """functional.quantize_blockwise's 8-bit codes, as the CUDA kernel computes them."""
    blocks, n = blocks_of(a, blocksize)
    absmax = blocks.abs().max(dim=-1)[0]
    scaled = (blocks * (1.0 / absmax.clamp(min=1e-38).view(-1, 1))).reshape(-1)[:n]
    c = code.numpy()
    q = torch.tensor([dquantize(c, np.float32(x)) for x in scaled.numpy()], dtype=torch.uint8)
    # Away from ties the search gives the default backend's bucketize.
    near = torch.bucketize(scaled, (code[:-1] + code[1:]) / 2, out_int32=True).to(torch.uint8)
    assert torch.equal(q, near), "dQuantize and bucketize disagree"
    return q, absmax


def dequantize_blockwise(q, absmax, code, blocksize):
    out = code[q.to(torch.int64)]
    blocks, n = blocks_of(out, blocksize)
    return (blocks * absmax.view(-1, 1)).reshape(-1)[:n]


def dequantize_4bit(packed, absmax, blocksize, shape):
    """backends/default/ops.py _dequantize_4bit_compute."""
    flat = packed.reshape(-1)
    q = torch.empty(flat.numel() * 2, dtype=torch.int64)
    q[1::2] = (flat & 0xF).to(torch.int64)
    q[::2] = (flat >> 4).to(torch.int64)
    n = int(np.prod(shape))
    vals, _ = blocks_of(NF4[q][:n], blocksize)
    return (vals * absmax.view(-1, 1)).reshape(-1)[:n].reshape(shape)


def ties_input():
    """Blocks of 32 with absmax 1: the levels, the midpoints exactly (ties), the float32 values
    just above them; an all-zero block; a block with one outlier; the first block negated."""
    bounds = ((NF4[:-1] + NF4[1:]) / 2).numpy()
    up = np.nextafter(bounds, np.float32(2), dtype=np.float32)
    b0 = np.concatenate([[1.0], bounds, up, [-1.0]]).astype(np.float32)
    assert b0.size == 32
    rng = np.random.default_rng(3)
    b2 = rng.normal(0, 0.01, 32).astype(np.float32)
    b2[5] = 0.9
    return torch.from_numpy(np.concatenate([b0, np.zeros(32, np.float32), b2, -b0]).reshape(4, 32))


CASES = [
    # name, shape, blocksize, nested, weights
    ("normal", (128, 136), 64, True, lambda rng, s: rng.normal(0, 0.02, s)),
    ("odd", (7, 19), 64, False, lambda rng, s: rng.normal(0, 1.0, s)),
    ("blocks128", (24, 96), 128, True, lambda rng, s: rng.standard_t(3, s) * 0.05),
    ("ties", (4, 32), 32, False, None),
]


def main():
    code = create_dynamic_map()
    tensors = {"nf4": NF4.numpy(), "dynamic_map": code.numpy()}
    meta = {}
    for seed, (name, shape, blocksize, nested, draw) in enumerate(CASES):
        if draw is None:
            a = ties_input()
        else:
            a = torch.from_numpy(draw(np.random.default_rng(seed), shape).astype(np.float32))
        packed, absmax = quantize_4bit(a, blocksize)
        tensors[name + ".input"] = a.numpy()
        tensors[name + ".packed"] = packed.numpy()
        if nested:
            offset = torch.tensor(absmax.double().mean().item(), dtype=torch.float32)
            qabsmax, nested_absmax = quantize_blockwise(absmax - offset, code, 256)
            used = dequantize_blockwise(qabsmax, nested_absmax, code, 256) + offset
            tensors[name + ".absmax"] = qabsmax.numpy()
            tensors[name + ".nested_absmax"] = nested_absmax.numpy()
            tensors[name + ".offset"] = offset.reshape(1).numpy()
        else:
            used = absmax
            tensors[name + ".absmax"] = absmax.numpy()
        tensors[name + ".dequant"] = dequantize_4bit(packed, used, blocksize, shape).numpy()
        meta[name] = {"shape": list(shape), "blocksize": blocksize, "nested": nested}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    _st.write(OUT, tensors, metadata={"format": "pt", "cases": json.dumps(meta, sort_keys=True)})
    print("wrote", os.path.normpath(OUT))


if __name__ == "__main__":
    main()
