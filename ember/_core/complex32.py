"""complex32 (PyTorch's ComplexHalf) values: conversions with c10's rounding, ATen's
per-operation rounding where a kernel computes in complex<Half>, and the experimental-support
warning.

complex32 arrays are NumPy structured arrays of two float16 fields, ``real`` and ``imag`` (see
``_core.dtype``). NumPy cannot compute on them, so every conversion and every supported op goes
through complex64, which holds each float16 part exactly:

* into complex32, each part rounds to float16 from float32 (c10's Half constructor takes a
  float, so a double rounds twice, as in PyTorch);
* out of complex32, the parts widen exactly to complex64 and then take NumPy's (= c10's)
  conversion to the target (a real target keeps the real part, bool is "either part nonzero").
"""
import warnings

import numpy as np

from . import dtype as D

NP = D.complex32._np
_warned = []


def warn_experimental():
    """PyTorch's TORCH_WARN_ONCE on the first complex32 allocation of the process."""
    if not _warned:
        _warned.append(True)
        warnings.warn("ComplexHalf support is experimental and many operators don't support it "
                      "yet.", UserWarning, stacklevel=3)


def to_complex64(arr):
    """A complex32 NumPy array as complex64 (exact)."""
    arr = np.asarray(arr)
    out = np.empty(arr.shape, np.complex64)
    out.real = arr["real"]
    out.imag = arr["imag"]
    return out


def from_any(arr):
    """``arr`` (any NumPy array, including complex32) as a complex32 array."""
    arr = np.asarray(arr)
    if arr.dtype == NP:
        return arr.copy()
    out = np.empty(arr.shape, NP)
    with np.errstate(all="ignore"):
        from . import float8 as _float8
        if _float8.is_float8(arr.dtype):
            arr = _float8.to_float32(arr)
        if arr.dtype.kind == "c":
            c = arr.astype(np.complex64)
            out["real"] = c.real.astype(np.float16)
            out["imag"] = c.imag.astype(np.float16)
        else:
            out["real"] = arr.astype(np.float32).astype(np.float16)
            out["imag"] = 0
    return out


def to_any(arr, np_dtype):
    """A complex32 NumPy array as ``np_dtype``."""
    np_dtype = np.dtype(np_dtype)
    arr = np.asarray(arr)
    if np_dtype == NP:
        return arr.copy()
    with np.errstate(all="ignore"):
        if np_dtype == np.bool_:
            return (arr["real"] != 0) | (arr["imag"] != 0)
        if np_dtype.kind == "c":
            return to_complex64(arr).astype(np_dtype)
        from . import float8 as _float8
        if _float8.is_float8(np_dtype):
            return _float8.cast(arr["real"].astype(np.float32), np_dtype)
        return arr["real"].astype(np.float32).astype(np_dtype)


def cast(arr, np_dtype):
    """``arr`` as ``np_dtype`` where either side is complex32 (NumPy's own cast otherwise)."""
    arr = np.asarray(arr)
    np_dtype = np.dtype(np_dtype)
    if arr.dtype == NP:
        return to_any(arr, np_dtype)
    if np_dtype == NP:
        return from_any(arr)
    return arr.astype(np_dtype)


def rounded(c):
    """complex64 ``c`` with each part rounded to float16 (c10::complex<Half>'s per-operation
    rounding: its operators compute in float and store Half parts)."""
    return to_complex64(from_any(c))


def addcmul(x, t1, t2, value):
    """ATen's ComplexHalf addcmul, ``self + value * t1 * t2`` in complex<Half> arithmetic, each
    operation rounded (complex64 operands, holding float16 parts)."""
    with np.errstate(all="ignore"):
        p = rounded(np.complex64(value) * t1)
        p = rounded(p * t2)
        return x + p


def scalar(value):
    """A Python number as a 0-dim complex32 array (for fills)."""
    return from_any(np.asarray(complex(value) if not isinstance(value, bool) else int(value)))
