"""The safetensors format (``safetensors.torch``'s API): ``save``/``load`` for bytes,
``save_file``/``load_file`` for files.

Layout: an 8-byte little-endian header length N, N bytes of JSON
``{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {...}}``
(padded with spaces to a multiple of 8), then the raw little-endian tensor bytes. Nothing in a
file is executed on load.
"""
import json
import struct

import numpy as np

from ._core import dtype as _dt

__all__ = ["save", "load", "save_file", "load_file"]

_CODES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
          "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8",
          "bool": "BOOL", "complex64": "C64", "complex128": "C128"}
_DTYPES = {code: _dt.ALIASES[name] for name, code in _CODES.items()}


def save(tensors, metadata=None):
    """Serialize a ``{name: tensor}`` dict to safetensors bytes."""
    if metadata is not None and not all(isinstance(k, str) and isinstance(v, str)
                                        for k, v in metadata.items()):
        raise ValueError("metadata must be a dict of str to str")
    header = {}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name]
        if not hasattr(t, "_keyset"):
            raise ValueError(f"Key `{name}` is invalid, expected torch.Tensor but received "
                             f"{type(t)}")
        data = np.ascontiguousarray(t.detach().cpu()._nd()).tobytes()
        header[name] = {"dtype": _CODES[t.dtype.name], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"".join(chunks)


def _parse(buf):
    if len(buf) < 8:
        raise ValueError("Error while deserializing header: HeaderTooSmall")
    (n,) = struct.unpack("<Q", buf[:8])
    if 8 + n > len(buf):
        raise ValueError("Error while deserializing header: InvalidHeaderLength")
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    return header, 8 + n


def load(data):
    """``{name: tensor}`` from safetensors bytes."""
    from ._tensor import wrap_array
    header, start = _parse(data)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data[start + begin:start + end], dtype=dtype._np)
        out[name] = wrap_array(arr.reshape(info["shape"]).copy())
    return out


def save_file(tensors, filename, metadata=None):
    with open(filename, "wb") as f:
        f.write(save(tensors, metadata))


def load_file(filename, device="cpu"):
    with open(filename, "rb") as f:
        tensors = load(f.read())
    if str(device) != "cpu":
        tensors = {k: v.to(device) for k, v in tensors.items()}
    return tensors


def load_metadata(filename):
    """The ``__metadata__`` dict of a file (or ``None``)."""
    with open(filename, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)).get("__metadata__")


