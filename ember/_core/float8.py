"""Conversions to and from the float8 dtypes with c10's rounding, saturation and NaN encodings.

ml_dtypes rounds to nearest-even exactly as c10 does, but differs on the edges, so its result is
corrected here:

* every source converts through float32 first (c10's Float8 constructors take a float, so a
  double rounds twice, as in PyTorch);
* float8_e4m3fn saturates: a finite or infinite value beyond its range becomes +-448, where
  ml_dtypes gives NaN; NaN keeps its sign as 0x7F/0xFF;
* float8_e5m2 encodes NaN as 0x7F/0xFF (ml_dtypes: 0x7E/0xFE);
* float8_e8m0fnu has no sign bit: c10 takes the exponent of |x| (rounded to nearest) and maps
  zero to the smallest value 2**-127, where ml_dtypes gives NaN for zero and negatives.

Reading float8 values back is exact in float32, so conversions out of float8 go through float32
(with c10's NaN bit patterns, whose sign a conversion back to float8 keeps).
"""
import numpy as np

from . import dtype as D

_NP = {d._np: d for d in D.FLOAT8}


def is_float8(np_dtype):
    return np.dtype(np_dtype) in _NP


def to_float8(arr, dtype):
    """``arr`` (any real or bool NumPy array) as float8 ``dtype``, bit-exact with PyTorch."""
    with np.errstate(all="ignore"):
        f = np.asarray(arr)
        if f.dtype.kind == "c":
            f = f.real
        f = f.astype(np.float32)
        if dtype is D.float8_e8m0fnu:
            out = np.asarray(np.abs(f).astype(dtype._np))  # (0-dim stays an array)
            out.view(np.uint8)[f == 0] = 0
            return out
        out = f.astype(dtype._np)
    bits = out.view(np.uint8)
    if dtype is D.float8_e4m3fn:
        nan = np.isnan(f)
        sign = np.signbit(f).astype(np.uint8) << 7
        over = ~nan & ((bits & 0x7F) == 0x7F)  # out of range (incl. +-inf): saturate
        bits[over] = sign[over] | 0x7E
        bits[nan] = sign[nan] | 0x7F
    elif dtype is D.float8_e5m2:
        nan = np.isnan(f)
        bits[nan] = (np.signbit(f[nan]).astype(np.uint8) << 7) | 0x7F
    return out


def _nan_bits(b, dtype):
    """c10's float32 NaN for float8 NaN bytes ``b``: e4m3fn/e5m2 keep sign and mantissa (quiet),
    the fnuz types and e8m0fnu give 0x7F800001."""
    sign = (b.astype(np.uint32) & 0x80) << 24
    if dtype is D.float8_e4m3fn:
        return sign | 0x7FC00000 | ((b.astype(np.uint32) & 0x7) << 20)
    if dtype is D.float8_e5m2:
        return sign | 0x7FC00000 | ((b.astype(np.uint32) & 0x3) << 21)
    return np.full(b.shape, 0x7F800001, np.uint32)


def to_float32(arr):
    """A float8 NumPy array as float32: exact, with c10's NaN encodings."""
    arr = np.asarray(arr)
    f = np.asarray(arr.astype(np.float32))
    nan = np.isnan(f)
    if nan.any():
        f.view(np.uint32)[nan] = _nan_bits(arr.view(np.uint8)[nan], _NP[arr.dtype])
    return f


def from_float8(arr, np_dtype):
    """A float8 NumPy array as ``np_dtype``, through float32 (exact) as c10 converts."""
    with np.errstate(all="ignore"):
        f = to_float32(arr)
        np_dtype = np.dtype(np_dtype)
        if np_dtype in _NP:
            return to_float8(f, _NP[np_dtype])
        return f.astype(np_dtype)


def cast(arr, np_dtype):
    """``arr`` as ``np_dtype`` with PyTorch's float8 semantics wherever either side is float8
    (NumPy's own cast otherwise)."""
    arr = np.asarray(arr)
    np_dtype = np.dtype(np_dtype)
    if arr.dtype in _NP:
        return from_float8(arr, np_dtype)
    if np_dtype in _NP:
        return to_float8(arr, _NP[np_dtype])
    return arr.astype(np_dtype)
