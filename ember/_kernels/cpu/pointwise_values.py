"""NumPy functions of the pointwise ops NumPy has no exact ufunc for, in the row convention of
``cpu/pointwise.py``'s compute tables: ``(*arrays, computation dtype, *params)``, the arrays
already in the computation dtype. Special functions NumPy lacks (erf, erfinv, lgamma, digamma)
come from ``scipy.special``."""
import math

import numpy as np
import scipy.special as _sp

from ..._core import dtype as D
from ._util import array_module


def _check_int_divisor(b, dt):
    if dt._category <= D.INTEGRAL and not np.all(b):
        raise RuntimeError("ZeroDivisionError")


def floor_divide(a, b, dt):
    _check_int_divisor(b, dt)
    return np.floor_divide(a, b)


def remainder(a, b, dt):
    _check_int_divisor(b, dt)
    return np.remainder(a, b)


def trunc_divide(a, b, dt):
    if dt._category <= D.INTEGRAL:
        _check_int_divisor(b, dt)
        q = np.floor_divide(a, b)
        # floor and trunc differ where the exact quotient is negative and not whole
        fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        return q + fix.astype(q.dtype)
    return np.trunc(np.true_divide(a, b))


def power(a, b, dt):
    if dt.is_complex:
        # at a zero base PyTorch's std::pow is exp(b * log(a)) (inf+nanj for a negative real
        # part), where NumPy's power gives nan+nanj
        with np.errstate(all="ignore"):
            return np.where(a == 0, np.exp(b * np.log(a)), np.power(a, b))
    if dt._category > D.INTEGRAL or np.all(np.asarray(b) >= 0):
        return np.power(a, b)
    # integer ** negative integer: 1 for base 1, +-1 for base -1, 0 otherwise (C integer pow)
    r = np.power(a, np.maximum(b, 0))
    neg = b < 0
    odd = np.remainder(b, 2) != 0
    ones = np.ones_like(r)
    small = np.where(a == 1, ones, np.where(a == -1, np.where(odd, -ones, ones), 0 * ones))
    return np.where(neg, small, r)


def sigmoid_values(x):
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


def fmax_values(a, b, dt):
    # NaN only where both are, and the first operand at a tie (fmax(0.0, -0.0) is 0.0), as
    # ATen's (NumPy's fmax gives either zero)
    return np.where(np.isnan(b) | (a >= b), a, b)


def fmin_values(a, b, dt):
    return np.where(np.isnan(b) | (a <= b), a, b)


def relu(x, dt):
    # x < 0 ? 0 : x, as ATen's clamp_min(x, 0) and the generated C kernel: relu(-0.0) is -0.0
    # and NaN stays (np.maximum gives +0.0 at -0.0)
    return np.where(x < 0, x.dtype.type(0), x)


def _ufunc(f):
    """Adapt a NumPy ufunc to the (arrays..., dt) convention of the functions above."""
    def fn(*args):
        return f(*args[:-1])
    fn.ufunc = f
    return fn


def _half_as_float(f):
    """Compute float16/bfloat16 in float32 (NumPy/SciPy lack half loops for many functions;
    PyTorch computes half ops in float too); other dtypes go to ``f`` as they are. Device arrays
    stay on their device (``astype``: CuPy refuses ``np.asarray``)."""
    def fn(*args):
        dt = args[-1]
        arrays = args[:-1]
        if dt is D.float16 or dt is D.bfloat16:
            arrays = [a.astype(np.float32) if hasattr(a, "astype") else np.float32(a)
                      for a in arrays]
        return f(*arrays)
    if isinstance(f, np.ufunc):
        fn.ufunc_in_float = f  # the CUDA kernels call the array module's ufunc of this name
    return fn


def sign_values(x, dt):
    if dt is D.bool_:
        return x.copy()
    # 0 for NaN and for -0.0, as PyTorch's (0 < x) - (x < 0)
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def sgn_values(x, dt):
    if dt._category != D.COMPLEX:
        return sign_values(x, dt)
    # x / |x| as a complex division, as ATen's scalar loop (its vectorised loop, for longer
    # tensors, divides part by part: -0+1j keeps its -0 there, inf+0j gives NaN+0j)
    a = np.abs(x)
    return np.where(a == 0, x.dtype.type(0), x / np.where(a == 0, 1, a))


def _integral_identity(f):
    """floor/ceil/trunc/round leave integers as they are (a copy, never an alias)."""
    def fn(x, dt):
        if dt._category <= D.INTEGRAL:
            return x.copy()
        return _half_as_float(f)(x, dt)
    return fn


def round_decimals_values(x, dt, decimals):
    # PyTorch: nearbyint(x * 10^d) / 10^d, or nearbyint(x / 10^-d) * 10^-d for negative d
    a = np.asarray(x, np.float32) if dt in (D.float16, D.bfloat16) else x
    if decimals >= 0:
        p = a.dtype.type(10.0 ** decimals)
        return np.rint(a * p) / p
    p = a.dtype.type(10.0 ** -decimals)
    return np.rint(a / p) * p


def frac_values(x):
    return x - np.trunc(x)


def from_parts(xp, re, im):
    """The complex array with real parts ``re`` and imaginary parts ``im`` (not ``re + 1j * im``,
    which makes NaN of an infinite part)."""
    re, im = xp.broadcast_arrays(xp.asarray(re), xp.asarray(im))
    out = xp.empty(re.shape, np.result_type(re.dtype, np.complex64))
    out.real[...] = re
    out.imag[...] = im
    return out


def complex_divide(a, b):
    """a / b of complex arrays (NumPy's or CuPy's) by c10::complex's algorithm (Smith's; a
    division by 0 gives an infinite or NaN part, part by part), as PyTorch's reciprocal and
    rsqrt divide: reciprocal(0j) is inf + NaNj there, NaN + NaNj in NumPy's reciprocal and in
    CuPy's division."""
    xp = array_module(b)
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    with np.errstate(all="ignore"):
        wide = xp.abs(br) >= xp.abs(bi)
        rat = xp.where(wide, bi / br, br / bi)
        scl = 1 / xp.where(wide, br + bi * rat, bi + br * rat)
        re = xp.where(wide, (ar + ai * rat) * scl, (ar * rat + ai) * scl)
        im = xp.where(wide, (ai - ar * rat) * scl, (ai * rat - ar) * scl)
        zero = (br == 0) & (bi == 0)
        re = xp.where(zero, ar / xp.abs(br), re)
        im = xp.where(zero, ai / xp.abs(br), im)
    return from_parts(xp, re, im)


def reciprocal_values(x, dt):
    return complex_divide(np.complex64(1), x) if dt.is_complex else np.reciprocal(x)


def rsqrt_values(x):
    if x.dtype.kind == "c":
        return complex_divide(np.complex64(1), np.sqrt(x))
    return 1 / np.sqrt(x)


def logit_values(x, dt, eps):
    if dt in (D.float16, D.bfloat16):
        x = np.asarray(x, np.float32)
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


def lgamma_values(x):
    # PyTorch: lgamma(-inf) = +inf (|Gamma| grows without bound); SciPy's gammaln gives -inf,
    # and +inf for a float64 subnormal (its 1/x overflows) where lgamma(x) is -log|x| to
    # double precision (std::lgamma's value)
    r = np.where(x == -np.inf, x.dtype.type(np.inf), _sp.gammaln(x))
    if x.dtype != np.float64:
        return r
    with np.errstate(divide="ignore"):
        return np.where(np.abs(x) < np.finfo(np.float64).tiny, -np.log(np.abs(x)), r)


def erfinv_values(x):
    # SciPy's erfinv(-0.0) is +0.0; PyTorch's keeps the sign
    return np.where(x == 0, x, _sp.erfinv(x))


def digamma_values(x):
    # PyTorch: digamma(+-0) = -+inf (SciPy agrees); negative integers give NaN in both
    return _sp.psi(x)


def polygamma_values(x, dt, n):
    if dt in (D.float16, D.bfloat16):
        x = np.asarray(x, np.float32)
    if n == 0:
        return digamma_values(x)
    return trigamma_values(x) if n == 1 else _sp.polygamma(n, x)


def trigamma_values(x):
    """PyTorch's trigamma (not SciPy's): x < 1/2 is reflected, psi1(x) = pi^2 / sin^2(pi x) -
    psi1(1 - x), so poles give large finite values and -inf gives NaN; then six recurrence
    steps and the asymptotic series."""
    t = x.dtype.type
    x = np.asarray(x)
    reflect = x < 0.5
    with np.errstate(all="ignore"):
        result = np.where(reflect, -t(math.pi) ** 2 / np.sin(t(math.pi) * x) ** 2, t(0))
        x = np.where(reflect, 1 - x, x)
        for _ in range(6):
            result = result + 1 / (x * x)
            x = x + 1
        ixx = 1 / (x * x)
        result = result + (1 + 1 / (2 * x) + ixx * (t(1 / 6) - ixx * (t(1 / 30) - ixx * t(1 / 42)))) / x
    return np.where(reflect, -result, result)


def nan_to_num_values(x, dt, nan, posinf, neginf):
    if dt._category <= D.INTEGRAL:
        return x.copy()
    from ..._core.dtype import finfo
    info = finfo(dt)
    if dt is D.bfloat16:  # np.nan_to_num has no bfloat16 loop; float32 holds every bfloat16
        x = x.astype(np.float32)
    real = x.real.dtype.type if dt.is_complex else x.dtype.type
    return np.nan_to_num(x, nan=real(0.0 if nan is None else nan),
                         posinf=real(info.max if posinf is None else posinf),
                         neginf=real(info.min if neginf is None else neginf))


def isposinf_values(x):
    return np.isinf(x) & (x > 0)


def isneginf_values(x):
    return np.isinf(x) & (x < 0)


def signbit_values(x, dt):
    if dt._category <= D.INTEGRAL:
        return x < 0
    return np.signbit(np.asarray(x, np.float32) if dt is D.bfloat16 else x)


def angle_values(x, dt):
    if dt.is_complex:
        return np.angle(x)
    x = np.asarray(x, np.float32) if dt in (D.float16, D.bfloat16) else x
    # PyTorch: pi for negative numbers, 0 otherwise, NaN kept
    return np.where(np.isnan(x), x, np.where(x < 0, x.dtype.type(math.pi), x.dtype.type(0)))


def fmod_values(a, b, dt):
    _check_int_divisor(b, dt)
    return _half_as_float(np.fmod)(a, b, dt)


def xlogy_values(x, y):
    # 0 where x == 0 unless y is NaN (PyTorch's convention; log(0) would give NaN)
    return np.where((x == 0) & ~np.isnan(y), x.dtype.type(0), x * np.log(y))


def logaddexp_values(a, b, dt):
    if dt.is_complex:  # NumPy's logaddexp has no complex loop; PyTorch's branch: max + log1p
        b_max = b.real > a.real  # (exp(min - max)), max by real part; a ties goes to a
        hi, lo = np.where(b_max, b, a), np.where(b_max, a, b)
        return hi + np.log1p(np.exp(lo - hi))
    return _half_as_float(np.logaddexp)(a, b, dt)


def _shift_bits(a):
    return a.dtype.itemsize * 8


def left_shift(a, b, dt):
    # PyTorch: shifting by a negative amount or by the width or more gives 0
    bits = _shift_bits(np.asarray(a))
    out_of_range = (b < 0) | (b >= bits)
    return np.where(out_of_range, 0, np.left_shift(a, np.clip(b, 0, bits - 1))).astype(
        np.result_type(a, b))


def right_shift(a, b, dt):
    # ... and an out-of-range right shift fills with the sign bit
    bits = _shift_bits(np.asarray(a))
    out_of_range = (b < 0) | (b >= bits)
    fill = np.where(a < 0, -1, 0) if dt.is_signed else 0
    return np.where(out_of_range, fill, np.right_shift(a, np.clip(b, 0, bits - 1))).astype(
        np.result_type(a, b))


def clamp_values(x, lo, hi, dt):
    # max then min: NaN bounds propagate, and min > max gives max, as in PyTorch
    return np.minimum(np.maximum(x, lo), hi)


def _fma(a, b, c):
    """a * b + c rounded once, as C's fma: float32 through float64 (the product is exact there,
    the sum rounds twice only at a float32 tie, about once in 2**29); float64 by Dekker's exact
    product and Knuth's two-sum (where those overflow, a * b + c rounded twice)."""
    if a.dtype == np.float32:
        return (a.astype(np.float64) * b + c.astype(np.float64)).astype(np.float32)
    p = a * b
    t = 134217729.0 * a  # Veltkamp's split into 26- and 27-bit halves (2**27 + 1)
    ah = t - (t - a)
    al = a - ah
    t = 134217729.0 * b
    bh = t - (t - b)
    bl = b - bh
    product_error = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # a * b = p + product_error
    total = p + c
    back = total - p
    sum_error = (p - (total - back)) + (c - back)  # p + c = total + sum_error
    correction = sum_error + product_error
    # (a zero correction is left out: it would turn a -0.0 total into +0.0)
    return np.where(np.isfinite(correction) & (correction != 0), total + correction, total)


def lerp_values(start, end, weight, dt):
    # ATen's vectorised kernel: one fused multiply-add from the nearer end (exact at weight 0
    # and 1): fma(weight, end - start, start) below |weight| 0.5, else fma(weight - 1, end -
    # start, end). Reduced floats arrive in float32 (see pointwise._prepare); complex numbers
    # take ATen's scalar formula.
    if dt.is_complex:
        diff = end - start
        return np.where(np.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))
    start, end, weight = np.asarray(start), np.asarray(end), np.asarray(weight, start.dtype)
    small = np.abs(weight) < 0.5
    coeff = np.where(small, weight, weight - weight.dtype.type(1))
    base = np.where(small, start, end)
    return _fma(coeff, end - start, base)


def addcmul_values(x, t1, t2, dt, value):
    v = x.dtype.type(value)  # value in the computation dtype (0.5 -> 0 for ints)
    if dt in (D.float32, D.float64):  # ATen's vectorised kernel: fma(value * t1, t2, self)
        return _fma(np.multiply(v, t1), np.asarray(t2), np.asarray(x))
    return x + v * (t1 * t2)


def addcdiv_values(x, t1, t2, dt, value):
    if dt in (D.float32, D.float64):  # ATen's order: self + (value * t1) / t2
        return x + np.multiply(x.dtype.type(value), t1) / t2
    return x + x.dtype.type(value) * (t1 / t2)


def add_alpha_values(x, y, alpha):
    """``x + alpha * y`` of float32/float64 arrays (``alpha`` a number) as ATen's add kernel
    rounds it: one fused multiply-add (sub passes -alpha)."""
    a = np.asarray(alpha, x.dtype)
    return _fma(np.broadcast_to(a, np.broadcast_shapes(np.shape(x), np.shape(y))),
                np.asarray(y), np.asarray(x))


def sigmoid_backward_values(grad, out, dt):
    """grad * conj((1 - out) * out): sigmoid's derivative from its output, multiplied in
    PyTorch's order for real dtypes (grad * (1 - out) * out: a zero gradient stays zero where
    (1 - out) * out overflows)."""
    if dt.is_complex:
        return grad * np.conj((1 - out) * out)
    return _half_as_float(lambda g, y: g * (1 - y) * y)(grad, out, dt)


def tanh_backward_values(grad, out, dt):
    """grad * conj(1 - out**2): tanh's derivative from its output."""
    return _half_as_float(lambda g, y: g * np.conj(1 - y * y))(grad, out, dt)
