"""A tiny pure-Python safetensors reader/writer (numpy; F32, F64, I32, I64, U8, BF16, F16).

safetensors is an 8-byte little-endian header length, a JSON header
{name: {"dtype", "shape", "data_offsets": [start, end]}, "__metadata__": {...}} and the raw
little-endian data. The `safetensors` package is not installed here (Debian has none), so the
generators write the format themselves; the Go side reads it through go-huggingface, which checks
it independently. BF16 arrays are passed as numpy uint16 arrays of the raw bits, tagged with
write(..., bf16={"name", ...}).
"""

import json
import struct

import numpy as np

_DTYPES = {
    np.dtype("float32"): "F32",
    np.dtype("float64"): "F64",
    np.dtype("float16"): "F16",
    np.dtype("int32"): "I32",
    np.dtype("int64"): "I64",
    np.dtype("uint8"): "U8",
}
_NUMPY = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I32": "<i4", "I64": "<i8", "U8": "u1", "BF16": "<u2"}


def write(path, tensors, metadata=None, bf16=()):
    """Writes {name: numpy array} to path, names sorted, data 8-byte aligned."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        if name in bf16:
            if a.dtype != np.uint16:
                raise ValueError(f"{name}: bf16 tensors are passed as uint16 bits")
            st = "BF16"
        elif a.dtype in _DTYPES:
            st = _DTYPES[a.dtype]
        else:
            raise ValueError(f"{name}: dtype {a.dtype} not supported")
        b = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": st, "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    header["__metadata__"] = metadata or {"format": "pt"}
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * ((8 - (8 + len(hb)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)


def read(path):
    """Reads a safetensors file into {name: numpy array} (BF16 as uint16 bits)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        s, e = meta["data_offsets"]
        out[name] = np.frombuffer(data[s:e], dtype=_NUMPY[meta["dtype"]]).reshape(meta["shape"])
    return out


def bf16_to_f32(bits):
    """Widens raw bfloat16 bits (uint16) to float32 exactly."""
    return (bits.astype(np.uint32) << 16).view(np.float32)
