"""The safetensors format (``safetensors.torch``'s API): ``save``/``load`` for bytes,
``save_file``/``load_file`` for files.

Layout: an 8-byte little-endian header length N, N bytes of JSON
``{"__metadata__": {...}, name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}}``
(padded with spaces to a multiple of 8), then the raw little-endian tensor bytes, ordered as the
reference implementation orders them (widest dtype first, then by name), so both write the same
bytes. Nothing in a file is executed on load, and every header entry is validated against the
buffer before any tensor is built. Saving validates every tensor before anything is written, and
``save_file`` replaces the file atomically: a failed save leaves the previous file as it was.
"""
import json
import struct

import numpy as np

from ._core import dtype as D
from ._core import strides as _st

__all__ = ["save", "load", "save_file", "load_file", "load_metadata", "SafetensorError"]

_CODES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
          "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8",
          "bool": "BOOL", "complex64": "C64", "complex128": "C128", "float8_e4m3fn": "F8_E4M3",
          "float8_e4m3fnuz": "F8_E4M3FNUZ", "float8_e5m2": "F8_E5M2",
          "float8_e5m2fnuz": "F8_E5M2FNUZ"}
_DTYPES = {code: D.ALIASES[name] for name, code in _CODES.items()}


class SafetensorError(Exception):
    """A malformed safetensors buffer (the reference implementation's exception)."""


def _deserializing(what):
    return SafetensorError(f"Error while deserializing: {what}")


# ---------------------------------------------------------------------------------------------
# Saving

def _shared_groups(tensors):
    """Names of tensors whose bytes overlap in one storage (safetensors' _find_shared_tensors:
    same storage, then overlapping byte ranges)."""
    by_storage = {}
    for name, t in tensors.items():
        if t.numel() and t.device.type != "meta":
            by_storage.setdefault(id(t.untyped_storage()), []).append(name)
    groups = []
    for names in by_storage.values():
        spans = sorted((tensors[n]._offset * tensors[n].element_size(),
                        (tensors[n]._offset + _st.storage_extent(tensors[n]._size,
                                                                 tensors[n]._stride, 0))
                        * tensors[n].element_size(), n) for n in names)
        current, end = set(), -1
        for start, stop, n in spans:
            if current and start < end:
                current.add(n)
                end = max(end, stop)
            else:
                if current:
                    groups.append(current)
                current, end = {n}, stop
        groups.append(current)
    return [g for g in groups if len(g) > 1]


def _check(tensors, metadata):
    if metadata is not None and not all(isinstance(k, str) and isinstance(v, str)
                                        for k, v in metadata.items()):
        raise ValueError("metadata must be a dict of str to str")
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"argument 'tensor_dict': '{type(name).__name__}' object is not an "
                            f"instance of 'str'")
        if not hasattr(t, "_keyset"):
            raise ValueError(f"Key `{name}` is invalid, expected torch.Tensor but received "
                             f"{type(t)}")
    shared = _shared_groups(tensors)
    if shared:
        raise RuntimeError(f"""
            Some tensors share memory, this will lead to duplicate memory on disk and potential differences when loading them again: {shared}.
            A potential way to correctly save your model is to use `save_model`.
            More information at https://huggingface.co/docs/safetensors/torch_shared_tensors
            """)
    for name, t in tensors.items():
        if not t.is_contiguous():
            raise ValueError(f"You are trying to save a non contiguous tensor: `{name}` which is "
                             f"not allowed. It either means you are trying to save tensors which "
                             f"are reference of each other in which case it's recommended to save "
                             f"only the full tensors, and reslice at load time, or simply call "
                             f"`.contiguous()` on your tensor to pack it before saving.")


def save(tensors, metadata=None):
    """Serialize a ``{name: tensor}`` dict to safetensors bytes."""
    _check(tensors, metadata)
    header = {"__metadata__": metadata} if metadata else {}
    chunks, offset = [], 0
    for name in sorted(tensors, key=lambda n: (-tensors[n].element_size(), n)):
        t = tensors[name]
        data = np.ascontiguousarray(t.detach().cpu()._nd()).tobytes()
        header[name] = {"dtype": _CODES[t.dtype.name], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"".join(chunks)


def save_file(tensors, filename, metadata=None):
    from .serialization import _atomic_write
    data = save(tensors, metadata)  # everything is checked before the file is touched
    with _atomic_write(filename) as f:
        f.write(data)


# ---------------------------------------------------------------------------------------------
# Loading

def _parse(buf):
    """The header, validated against the buffer: (entries sorted by offset, data start)."""
    if len(buf) < 8:
        raise _deserializing("header too small")
    (n,) = struct.unpack("<Q", buf[:8])
    if 8 + n > len(buf):
        raise _deserializing("invalid header length")
    try:
        header = json.loads(bytes(buf[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _deserializing("invalid JSON in header") from None
    if not isinstance(header, dict):
        raise _deserializing("invalid JSON in header")
    metadata = header.pop("__metadata__", None)
    entries = []
    for name, info in header.items():
        try:
            dtype = _DTYPES[info["dtype"]]
            shape = [int(s) for s in info["shape"]]
            begin, end = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise _deserializing("invalid JSON in header") from None
        entries.append((begin, end, name, dtype, shape))
    entries.sort(key=lambda e: (e[0], e[1]))
    expected = 0
    for begin, end, name, dtype, shape in entries:
        if begin != expected or end < begin:
            raise _deserializing(f"invalid offset for tensor `{name}`")
        if _st.numel(shape) * dtype.itemsize != end - begin:
            raise _deserializing("invalid shape, data type, or offset for tensor")
        expected = end
    if 8 + n + expected != len(buf):
        raise _deserializing("incomplete metadata, file not fully covered")
    return entries, 8 + n, metadata


def load(data):
    """``{name: tensor}`` from safetensors bytes."""
    from ._tensor import wrap_array
    entries, start, _ = _parse(data)
    out = {}
    for begin, end, name, dtype, shape in sorted(entries, key=lambda e: e[2]):
        arr = np.frombuffer(data, dtype=dtype._np, count=end - begin and _st.numel(shape),
                            offset=start + begin)
        out[name] = wrap_array(arr.reshape(shape).copy())
    return out


def load_file(filename, device="cpu"):
    with open(filename, "rb") as f:
        tensors = load(f.read())
    if str(device) != "cpu":
        tensors = {k: v.to(device) for k, v in tensors.items()}
    return tensors


def load_metadata(filename):
    """The ``__metadata__`` dict of a file (or ``None``)."""
    with open(filename, "rb") as f:
        return _parse(f.read())[2]
