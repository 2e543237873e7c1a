"""Rules of the factories, fills and random ops, for every backend: one place decides an
``arange``'s length and dtype, whether a fill value fits its dtype, the strides of a memory format
and the bounds of ``random_``. The CPU, Meta and CUDA kernels call these; this module imports no
backend."""
import math
import warnings

import ml_dtypes
import numpy as np

from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.dtype import get_default_dtype
from ..._core.symint import SymInt, is_symbolic
from .unsigned import BAREBONES as _BAREBONES

# The C++ type names PyTorch's messages use ("value cannot be converted to type uint8_t ...").
C_TYPE_NAMES = {
    D.bool_: "bool", D.uint8: "uint8_t", D.int8: "int8_t", D.int16: "int16_t",
    D.int32: "int", D.int64: "int64_t", D.float16: "c10::Half", D.bfloat16: "c10::BFloat16",
    D.float32: "float", D.float64: "double", D.complex64: "c10::complex<float>",
    D.complex128: "c10::complex<double>",
}
C_TYPE_NAMES.update({d: d._cpp for d in D.FLOAT8 + (D.complex32,)})  # c10::Float8_e4m3fn ...
C_TYPE_NAMES.update({D.uint16: "uint16_t", D.uint32: "uint32_t", D.uint64: "uint64_t"})
# "unsigned char", as PyTorch's random_ messages name uint8
RANDOM_TYPE_NAMES = {**C_TYPE_NAMES, D.uint8: "unsigned char", D.int8: "signed char",
                     D.int16: "short", D.int64: "long",
                     # (the barebones unsigned types by their typeid names, as random_ prints them)
                     D.uint16: "short unsigned int", D.uint32: "unsigned int",
                     D.uint64: "long unsigned int"}


def _limits(d):
    if d in D.FLOAT8:  # (float8_e8m0fnu's lowest value is its smallest, 2 ** -127)
        info = ml_dtypes.finfo(d._np)
        return float(info.min), float(info.max)
    d = d.to_real()
    if d.is_floating_point:
        m = float(ml_dtypes.finfo(d._np).max)
        return -m, m
    info = np.iinfo(d._np)
    return int(info.min), int(info.max)


LIMITS = {d: _limits(d) for d in D.ALL_DTYPES if d is not D.bool_}


# floating types without an infinity: inf overflows them (and saturates in a conversion)
_NO_INF = frozenset(D.FLOAT8) - {D.float8_e5m2}


def overflows(value, dtype):
    """c10::overflows: would converting the Python number ``value`` to ``dtype`` overflow?
    Unsigned targets accept negative integers down to -max (they wrap, two's complement)."""
    if dtype is D.bool_ or value.__class__ is bool:
        return False
    if isinstance(value, complex):
        if not dtype.is_complex and value.imag != 0:
            return True
        value = value.real
    lo, hi = LIMITS[dtype]
    floating = dtype._category >= D.FLOATING
    if isinstance(value, float):
        if value != value or math.isinf(value) and dtype not in _NO_INF:
            return not floating  # inf and nan exist only in floating types
        return value < lo or value > hi
    value = int(value)
    if not dtype.is_signed and value < 0:
        return -value > hi
    return value < lo or value > hi


def check_fits(value, dtype, names=C_TYPE_NAMES):
    if overflows(value, dtype):
        raise RuntimeError(f"value cannot be converted to type {names[dtype]} without overflow")


def check_fill(value, dtype, numel):
    """``full``/``fill_``/``scalar_tensor``'s check, as ATen's fill: a one-element Half or
    BFloat16 tensor takes the number unchecked (1e5 makes inf), every other fill checks it as
    every Scalar conversion does."""
    if numel != 1 or (dtype is not D.float16 and dtype is not D.bfloat16):
        check_fits(value, dtype)


def check_size(size):
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"[{', '.join(map(str, size))}]")


def scalar_dtype(value):
    """The dtype PyTorch gives a tensor filled from a Python number: bool, int64, the default
    floating dtype or the default complex dtype."""
    if value.__class__ is bool:
        return D.bool_
    if isinstance(value, int):
        return D.int64
    if isinstance(value, complex):
        return D.default_complex_dtype()
    return get_default_dtype()


def check_resize_memory_format(size, memory_format):
    """resize_'s memory_format: preserve_format is refused (ATen's message), channels_last needs
    its rank."""
    if memory_format is not None:
        if getattr(memory_format, "_name", None) == "preserve_format":
            raise RuntimeError("Unsupported memory formatPreserve")
        memory_format_strides(size, memory_format)


def memory_format_strides(size, memory_format):
    """Strides of a fresh tensor in ``memory_format`` (None or contiguous_format: row-major)."""
    name = getattr(memory_format, "_name", "contiguous_format")
    if name == "channels_last":
        if len(size) != 4:
            raise RuntimeError("required rank 4 tensor to use channels_last format")
        return _st.channels_last_strides(tuple(size))
    if name == "channels_last_3d":
        if len(size) != 5:
            raise RuntimeError("required rank 5 tensor to use channels_last_3d format")
        return _st.channels_last_strides(tuple(size))
    if name == "preserve_format":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return _st.contiguous_strides(tuple(size))


def _g(x):
    """A number as C++'s ostream prints a double (what PyTorch's range messages show)."""
    return "%g" % x


def arange_dtype(start, end, step, dtype):
    """PyTorch's inference: int64 when every bound is an integer, else the default dtype."""
    if dtype is not None:
        return dtype
    if any(isinstance(v, (float, complex)) for v in (start, end, step)):
        return get_default_dtype()
    return D.int64


def _real(v, dtype):
    if isinstance(v, complex):
        if v.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {C_TYPE_NAMES[dtype]} without overflow")
        return v.real
    return v


def arange_params(start, end, step, dtype):
    """(start, step, length) in the accumulation type of ``dtype``, with PyTorch's checks.

    As ATen's compute_arange_size: the bounds are checked in double, the length is computed in
    double except for int64, whose length comes from the bounds truncated to int64 (so a
    fractional step that truncates to 0 is a ValueError there, and gives repeated values in the
    other integral dtypes)."""
    if dtype in D.FLOAT8 or dtype is D.complex32:
        _not_implemented("arange_cpu", dtype)
    if any(is_symbolic(v) for v in (start, end)) and isinstance(step, int) and \
            all(isinstance(v, (int, SymInt)) for v in (start, end)):
        # symbolic integer bounds (arange(x.size(0))): the integer length formula keeps the
        # length symbolic where the double one would specialise it
        if step == 0:
            raise RuntimeError("step must be nonzero")
        if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
            raise RuntimeError("upper bound and lower bound inconsistent with step sign")
        n = (end - start + step - 1) // step if step > 0 else (start - end - step - 1) // -step
        return start, step, n
    acc = D.int64 if dtype._category <= D.INTEGRAL else D.float64
    s, e, st = (_real(v, acc) for v in (start, end, step))
    ds, de, dst = float(s), float(e), float(st)
    if dst == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(ds) and math.isfinite(de)):
        raise RuntimeError(f"unsupported range: {_g(ds)} -> {_g(de)}")
    if not ((dst > 0 and de >= ds) or (dst < 0 and de <= ds)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is D.int64:
        xs, xe, xst = int(s), int(e), int(st)
        if xst == 0:
            raise ValueError("step must be nonzero")
        sgn = (xst > 0) - (xst < 0)
        q = xe - xs + xst - sgn
        n = abs(q) // abs(xst) * (1 if (q >= 0) == (xst > 0) else -1)  # C++ truncating division
    else:
        n = math.ceil((de - ds) / dst)
    if n < 0 or n > 2 ** 63 - 1:
        raise RuntimeError("invalid size, possible overflow?")
    if acc is D.int64:
        return int(s), int(st), n
    return ds, dst, n


def linspace_dtype(start, end, dtype):
    if dtype in D.FLOAT8 or dtype is D.complex32:
        _not_implemented("linspace_cpu", dtype)
    if dtype is not None:
        return dtype
    if isinstance(start, complex) or isinstance(end, complex):
        return D.default_complex_dtype()
    return get_default_dtype()


def check_steps(steps):
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")


def check_eye(n, m):
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")


# -- random-op argument checks -----------------------------------------------------------------

def _not_implemented(kernel, dtype):
    raise NotImplementedError(f'"{kernel}" not implemented for \'{dtype._short}\'')


def check_range_kernel(kernel, dtype, steps=None):
    """The dtypes ATen's CPU range kernels have no loop for: bool and the barebones unsigned
    types (arange_cpu, linspace_cpu, logspace_cpu) and complex (arange_cpu). The Meta kernels,
    which run no loop, take them, and so does linspace/logspace of no ``steps`` or one (ATen
    returns before its loop, or fills the one value)."""
    if steps is not None and steps <= 1:
        return
    if dtype is D.bool_ or dtype in _BAREBONES or (kernel == "arange_cpu" and dtype.is_complex):
        _not_implemented(kernel, dtype)


def check_uniform(self, from_, to):
    d = self._dtype
    if d._category < D.FLOATING or d in D.FLOAT8:  # (no float8 random kernels in ATen)
        _not_implemented("check_uniform_bounds", d)
    lo, hi = LIMITS[d]
    if not lo <= from_ <= hi:
        raise RuntimeError(f"from is out of bounds for {C_TYPE_NAMES[d.to_real()]}")
    if not lo <= to <= hi:
        raise RuntimeError(f"to is out of bounds for {C_TYPE_NAMES[d.to_real()]}")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_g(from_)} > to={_g(to)}")
    if to - from_ > hi:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<"
                           f"{C_TYPE_NAMES[d.to_real()]}>::max(), but found to={_g(to)} and "
                           f"from={_g(from_)} which result in to-from to exceed the limit")


def check_normal(dtype, std):
    if dtype._category < D.FLOATING or dtype in D.FLOAT8:
        _not_implemented("normal_kernel_cpu", dtype)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")


# Largest integer a floating dtype holds exactly: random_ draws from [0, 2**digits].
FLOAT_DIGITS = {D.float16: 11, D.bfloat16: 8, D.float32: 24, D.float64: 53}


def _random_max(d):
    """Highest value random_ may produce for dtype ``d`` by default."""
    if d.is_complex:
        _not_implemented("random_", d)
    if d is D.bool_:
        return 1
    if d.is_floating_point:
        return 2 ** FLOAT_DIGITS[d]
    return LIMITS[d][1]


def random_bounds(self, from_, to):
    """Validated inclusive [low, high] of random_(from, to) (to=None: up to the dtype's max)."""
    d = self._dtype
    name = RANDOM_TYPE_NAMES[d]
    if to is None:
        top = _random_max(d)
        if from_ > top:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than or equal to "
                               f"'to_inc' casted to dtype, but got from={from_} > to_inc={top}")
        return from_, top
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} "
                           f">= to={to}")
    if d.is_complex:
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean "
                           "types")
    lo, hi = (0, 1) if d is D.bool_ else LIMITS[d]
    if not lo <= from_ <= hi:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not lo <= to - 1 <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {name}")
    if d.is_floating_point:
        top = _random_max(d)
        digits = FLOAT_DIGITS[d]
        for what, v in (("from", from_), ("to - 1", to - 1)):
            if not -top <= v <= top:
                warnings.warn(f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision "
                              f"limitations {C_TYPE_NAMES[d]} can support discrete uniform "
                              f"distribution only within this range. This warning will become an "
                              f"error in version 1.7 release, please fix the code in advance",
                              UserWarning, stacklevel=4)
    return from_, to - 1


def random_default_bounds(self):
    """random_() with no range: [0, 2**digits] for floats, [0, max] for integers."""
    return 0, _random_max(self._dtype)


def normal_tensor_dtype(mean, std):
    """normal(Tensor, Tensor): dtype and shape of the result (mean's dtype, broadcast shape)."""
    from ..._core.promotion import result_type_of
    return result_type_of((mean, std))
