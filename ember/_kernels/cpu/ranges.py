"""CPU kernels for ranges and the identity: arange (three overloads), linspace, eye.

Values are computed as PyTorch's CPU kernels compute them: arange as ``start + i * step`` in the
accumulation type (int64 or double), linspace symmetrically from both ends so the last value is
exactly ``end`` (in float32 with one rounding per value, as ATen's fused multiply-add).
"""
import numpy as np

from ..._core.dtype import get_default_dtype
from ..rules.factory import (arange_dtype, arange_params, check_eye, check_range_kernel,
                             check_steps, linspace_dtype)
from ._util import wrap
from .factory import honour_pin_memory


def arange_values(xp, start, end, step, dtype):
    """(dtype, the values of arange as array module ``xp``'s array): the CPU kernel's formula,
    which the CUDA kernel runs with CuPy."""
    dtype = arange_dtype(start, end, step, dtype)
    xs, xst, n = arange_params(start, end, step, dtype)
    acc = np.int64 if isinstance(xs, int) else np.float64
    values = xp.arange(n, dtype=acc)
    values *= xst
    values += xs
    return dtype, values.astype(dtype._np, copy=False)


@honour_pin_memory
def arange_start_step(start, end, step=1, dtype=None, layout=None, device=None, pin_memory=None):
    check_range_kernel("arange_cpu", arange_dtype(start, end, step, dtype))
    return wrap(arange_values(np, start, end, step, dtype)[1])


@honour_pin_memory
def arange(end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_start_step(0, end, 1, dtype)


@honour_pin_memory
def arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_start_step(start, end, 1, dtype)


@honour_pin_memory
def linspace(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None):
    check_steps(steps)
    dtype = linspace_dtype(start, end, dtype)
    check_range_kernel("linspace_cpu", dtype, steps)
    # step in the result type for floating dtypes, in double for integral ones (as ATen does)
    if dtype.is_complex:
        work = dtype._np
    elif dtype.is_floating_point:
        work = dtype._np if dtype.itemsize >= 4 else np.float32
    else:
        work = np.float64
        start, end = int(start), int(end)
    a, b = np.array(start, work), np.array(end, work)
    if steps == 1:
        return wrap(np.full(1, start, dtype._np))
    step = (b - a) / np.array(steps - 1, work)
    idx = np.arange(steps)
    half = steps // 2
    out = np.empty(steps, work)
    if dtype._np == np.float32 and steps <= 2 ** 29:
        # ATen's float loop compiles to one fused multiply-add per value
        out[:half] = _fma_float32(step, idx[:half], a)
        out[half:] = _fma_float32(-step, steps - idx[half:] - 1, b)
    else:
        out[:half] = a + step * idx[:half].astype(work)
        out[half:] = b - step * (steps - idx[half:] - 1).astype(work)
    return wrap(out.astype(dtype._np, copy=False))


def _fma_float32(x, n, z):
    """``x * n + z`` rounded once to float32, as an FMA instruction computes it, for float32
    ``x`` and ``z`` and integers ``0 <= n < 2**29``: the product is exact in double; the sum
    there is rounded to odd (an inexact sum takes the odd one of the two doubles around it), which
    makes its rounding to float32 the correctly rounded one."""
    with np.errstate(invalid="ignore"):
        p = np.float64(x) * n
        z = np.float64(z)
        s = p + z
        t = s - p
        err = (p - (s - t)) + (z - t)  # Knuth's two-sum: p + z == s + err exactly
        even = (s.view(np.int64) & 1) == 0
        toward = np.where(err > 0, np.inf, -np.inf)
        s = np.where(np.isfinite(err) & (err != 0) & even, np.nextafter(s, toward), s)
    return s.astype(np.float32)


@honour_pin_memory
def eye_m(n, m, dtype=None, layout=None, device=None, pin_memory=None):
    check_eye(n, m)
    return wrap(np.eye(n, m, dtype=(dtype or get_default_dtype())._np))


@honour_pin_memory
def eye(n, dtype=None, layout=None, device=None, pin_memory=None):
    return eye_m(n, n, dtype)
