"""CPU pointwise kernels, generated from three tables: ``UNARY``, ``BINARY`` and ``TERNARY``.

Each row names the NumPy function that computes the op and its dtype rule (how PyTorch picks the
result dtype from the operands' dtypes). Every overload of an op (``add.Tensor``, ``add.Scalar``,
the in-place ``add_.Tensor`` ...) is generated from its row, so an op is defined exactly once.
The rules and the operand checks are shared with the Meta kernels (``meta/pointwise.py``).

Operands may be Python numbers ("wrapped numbers"): they take part in type promotion weakly
(``result_type_of``) and are converted to the computation dtype before NumPy sees them, so NumPy's
own promotion never decides a dtype. In-place kernels check the broadcast shape and castability
first, then let NumPy write straight into ``self``; a failing call leaves ``self`` untouched.

Ops with non-tensor arguments (``logit``'s eps, ``clamp``'s bounds, ``lerp``'s weight ...) pass
them as ``params``: the row's function receives ``(*arrays, dtype, *params)``. Special functions
NumPy lacks (erf, erfinv, lgamma, digamma) come from ``scipy.special``.
"""
import math

import numpy as np
import scipy.special as _sp

from ..._core import dtype as D
from ..._core import overlap as _overlap
from ..._core import strides as _st
from ..._core.allocator import THRESHOLD as _BIG, cpu_cache as _cpu_cache
from ..._core.promotion import can_cast, result_type_of
from ..._tensor import Tensor
from ._util import nd, wrap

# ---------------------------------------------------------------------------------------------
# dtype rules: operands -> result dtype. The computation runs in the promoted dtype, except
# where the rule says otherwise (comparisons compute in the promoted dtype and return bool).

PROMOTE = "promote"        # PyTorch's result_type
INT_TO_FLOAT = "float"     # result_type, integral/bool promoted to the default float dtype
COMPARE = "compare"        # computed in result_type, result bool
LOGICAL = "logical"        # result bool, inputs of any dtype
INTEGRAL = "integral"      # result_type, which must be integral or bool (bitwise ops)
SAME = "same"              # unary: the input's dtype
TO_REAL = "real"           # unary: the input's dtype, complex -> its real dtype (abs)
FLOAT_REAL = "float_real"  # INT_TO_FLOAT, complex -> its real dtype (angle)
FIRST = "first"            # the first operand's dtype, which the others must share (lerp)


def result_dtype(rule, operands):
    """(computation dtype, result dtype) of a pointwise op under ``rule``."""
    if rule == SAME or rule == FIRST:
        dt = operands[0]._dtype
        return dt, dt
    if rule == TO_REAL:
        dt = operands[0]._dtype
        return dt, dt.to_real()
    dt = result_type_of(operands)
    if rule == PROMOTE or rule == INTEGRAL:
        return dt, dt
    if rule == INT_TO_FLOAT or rule == FLOAT_REAL:
        if dt._category < D.FLOATING:
            dt = D.get_default_dtype()
        return dt, (dt.to_real() if rule == FLOAT_REAL else dt)
    if rule == COMPARE:
        return dt, D.bool_
    return None, D.bool_  # LOGICAL


# ---------------------------------------------------------------------------------------------
# Operand checks (dtype-level, so the Meta kernels raise the same errors). Each receives the op
# name, the operands and the computation dtype.

def _not_implemented(name, dt):
    return NotImplementedError(f'"{name}_cpu" not implemented for \'{dt._short}\'')


def _is_bool(x):
    return getattr(x, "_dtype", None) is D.bool_ or x.__class__ is bool


def check_sub(name, operands, dt):
    self, other = operands[0], operands[1]
    if _is_bool(self) and _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if _is_bool(self) or _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def check_integral(name, operands, dt):
    if dt._category > D.INTEGRAL:
        raise _not_implemented(name, dt)


def no_bool(kernel):
    """Check for ops PyTorch has no bool kernel for (named as its dtype-dispatch error does)."""
    def check(name, operands, dt):
        if dt is D.bool_:
            raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    return check


def check_pow(name, operands, dt):
    e = operands[1]
    # PyTorch answers x ** 0 and x ** 1 (Python numbers) before dispatching on dtype
    if not (e.__class__ in (int, float, bool) and e in (0, 1)):
        no_bool("pow")(name, operands, dt)
    # only a Python-number exponent is checked; PyTorch lets tensor exponents through
    if dt._category <= D.INTEGRAL and e.__class__ is int and e < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


def check_not_bool(message):
    def check(name, operands, dt):
        if dt is D.bool_:
            raise RuntimeError(message)
    return check


def check_abs(name, operands, dt):
    if dt is D.bool_:
        raise _not_implemented(name, dt)


def check_alpha(dt, alpha):
    """add/sub/rsub's alpha must fit the result dtype (PyTorch's alpha_check)."""
    if alpha.__class__ is bool and dt is not D.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if dt._category <= D.INTEGRAL and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")


def not_for(categories, kernel=None, message=None, exc=NotImplementedError):
    """Reject computation dtypes of the given categories: with PyTorch's dtype-dispatch error
    naming ``kernel``, or with a fixed ``message``."""
    def check(name, operands, dt):
        if dt._category in categories:
            raise exc(message if message is not None else
                      f'"{kernel}" not implemented for \'{dt._short}\'')
    return check


def check_rounding(op):
    """floor/ceil/trunc: no bool kernel, and complex numbers have no order to round in."""
    no_bool_kernel = not_for((D.BOOL,), f"{op}_vml_cpu")
    no_complex = not_for((D.COMPLEX,), message=f"{op} is not supported for complex inputs")

    def check(name, operands, dt):
        no_bool_kernel(name, operands, dt)
        no_complex(name, operands, dt)
    return check


_NOT_FLOAT = (D.BOOL, D.INTEGRAL, D.COMPLEX)
_NOT_REAL_FLOAT = (D.BOOL, D.INTEGRAL)
_BOOL_COMPLEX = (D.BOOL, D.COMPLEX)
_NOT_INTEGRAL = (D.BOOL, D.FLOATING, D.COMPLEX)


def check_addcdiv(name, operands, dt):
    t1, t2 = operands[1], operands[2]
    if all(getattr(t, "_dtype", D.float32)._category <= D.INTEGRAL for t in (t1, t2)):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
            "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    not_for((D.BOOL,), "addcdiv_cpu_out")(name, operands, dt)


def _c_name(dt):
    from ..meta.factory import C_TYPE_NAMES
    return C_TYPE_NAMES[dt]


def lerp_check(kernel):
    """lerp computes in self's dtype: end (and a tensor weight) must share it."""
    def check(name, operands, dt):
        for what, x in zip(("end", "weight"), operands[1:]):
            if hasattr(x, "_keyset") and x._dtype is not dt:
                raise RuntimeError(f"expected dtype {_c_name(dt)} for `{what}` but got dtype "
                                   f"{_c_name(x._dtype)}")
        not_for(_NOT_REAL_FLOAT, kernel)(name, operands, dt)
    return check


def clamp_check(scalar_kernel, tensor_kernel=None):
    """clamp rejects complex, and bool in its scalar kernels (and in two-sided clamp.Tensor);
    Python-number bounds are converted to an integral dtype with c10's overflow check (unsigned
    types accept -max..max)."""
    def check(name, operands, dt):
        if dt.is_complex:
            raise NotImplementedError("clamp is not supported for complex types")
        numbers = [b for b in operands[1:] if not hasattr(b, "_keyset")]
        kernel = scalar_kernel if numbers else tensor_kernel
        if dt is D.bool_ and kernel is not None:
            raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
        if not numbers or dt._category > D.INTEGRAL:
            return
        info = np.iinfo(dt._np)
        lo = -info.max if info.min == 0 else info.min
        if any(not (lo <= b <= info.max) for b in numbers):
            raise RuntimeError(f"value cannot be converted to type {_c_name(dt)} without overflow")
    return check


ROUNDING_MODES = (None, "trunc", "floor")


def check_rounding_mode(mode):
    if mode not in ROUNDING_MODES:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{mode}'")


# ---------------------------------------------------------------------------------------------
# NumPy functions for ops NumPy has no exact ufunc for. Inputs arrive in the computation dtype.

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
    if dt._category > D.INTEGRAL or np.all(np.asarray(b) >= 0):
        return np.power(a, b)
    # integer ** negative integer: 1 for base 1, +-1 for base -1, 0 otherwise (C integer pow)
    r = np.power(a, np.maximum(b, 0))
    neg = b < 0
    odd = np.remainder(b, 2) != 0
    ones = np.ones_like(r)
    small = np.where(a == 1, ones, np.where(a == -1, np.where(odd, -ones, ones), 0 * ones))
    return np.where(neg, small, r)


def sigmoid(x, dt):
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


def relu(x, dt):
    return np.maximum(x, x.dtype.type(0))


def _ufunc(f):
    """Adapt a NumPy ufunc to the (arrays..., dt) convention of the functions above."""
    def fn(*args):
        return f(*args[:-1])
    fn.ufunc = f
    return fn


def _half_as_float(f):
    """Compute float16/bfloat16 in float32 (NumPy/SciPy lack half loops for many functions;
    PyTorch computes half ops in float too); other dtypes go to ``f`` as they are."""
    def fn(*args):
        dt = args[-1]
        arrays = args[:-1]
        if dt is D.float16 or dt is D.bfloat16:
            arrays = [np.asarray(a, np.float32) for a in arrays]
        return f(*arrays)
    return fn


def sign_values(x, dt):
    if dt is D.bool_:
        return x.copy()
    # 0 for NaN and for -0.0, as PyTorch's (0 < x) - (x < 0)
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def sgn_values(x, dt):
    if dt._category != D.COMPLEX:
        return sign_values(x, dt)
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


def rsqrt_values(x):
    return 1 / np.sqrt(x)


def logit_values(x, dt, eps):
    if dt in (D.float16, D.bfloat16):
        x = np.asarray(x, np.float32)
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


def lgamma_values(x):
    # PyTorch: lgamma(-inf) = +inf (|Gamma| grows without bound); SciPy's gammaln gives -inf
    return np.where(x == -np.inf, x.dtype.type(np.inf), _sp.gammaln(x))


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
        x = np.asarray(x, np.float32)
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


def lerp_values(start, end, weight, dt):
    # PyTorch's two-sided formula: exact at weight 0 and at weight 1
    if dt in (D.float16, D.bfloat16):
        start, end, weight = (np.asarray(v, np.float32) for v in (start, end, weight))
    diff = end - start
    return np.where(np.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))


def addcmul_values(x, t1, t2, dt, value):
    return x + x.dtype.type(value) * (t1 * t2)  # value in the computation dtype (0.5 -> 0 for ints)


def addcdiv_values(x, t1, t2, dt, value):
    return x + x.dtype.type(value) * (t1 / t2)


# ---------------------------------------------------------------------------------------------
# The tables: op name -> (numpy function, dtype rule, operand check or None).

BINARY = {
    "add": (_ufunc(np.add), PROMOTE, None),
    "sub": (_ufunc(np.subtract), PROMOTE, check_sub),
    "mul": (_ufunc(np.multiply), PROMOTE, None),
    "div": (_ufunc(np.true_divide), INT_TO_FLOAT, None),
    "div_trunc": (trunc_divide, PROMOTE, no_bool("div_trunc_cpu")),
    "div_floor": (floor_divide, PROMOTE, no_bool("div_floor_cpu")),
    "floor_divide": (floor_divide, PROMOTE, no_bool("div_floor_cpu")),
    "remainder": (remainder, PROMOTE, no_bool("remainder_cpu")),
    "pow": (power, PROMOTE, check_pow),
    "eq": (_ufunc(np.equal), COMPARE, None),
    "ne": (_ufunc(np.not_equal), COMPARE, None),
    "lt": (_ufunc(np.less), COMPARE, None),
    "le": (_ufunc(np.less_equal), COMPARE, None),
    "gt": (_ufunc(np.greater), COMPARE, None),
    "ge": (_ufunc(np.greater_equal), COMPARE, None),
    "logical_and": (_ufunc(np.logical_and), LOGICAL, None),
    "logical_or": (_ufunc(np.logical_or), LOGICAL, None),
    "logical_xor": (_ufunc(np.logical_xor), LOGICAL, None),
    "bitwise_and": (_ufunc(np.bitwise_and), INTEGRAL, check_integral),
    "bitwise_or": (_ufunc(np.bitwise_or), INTEGRAL, check_integral),
    "bitwise_xor": (_ufunc(np.bitwise_xor), INTEGRAL, check_integral),
    "maximum": (_ufunc(np.maximum), PROMOTE, None),
    "minimum": (_ufunc(np.minimum), PROMOTE, None),
    "fmod": (fmod_values, PROMOTE, not_for(_BOOL_COMPLEX, "fmod_cpu")),
    "atan2": (_half_as_float(np.arctan2), INT_TO_FLOAT, not_for((D.COMPLEX,), "atan2_cpu")),
    "hypot": (_half_as_float(np.hypot), PROMOTE, not_for(_NOT_FLOAT, "hypot_cpu")),
    "fmax": (_ufunc(np.fmax), PROMOTE, not_for(
        (D.COMPLEX,), message="fmax not implemented for complex tensors.", exc=RuntimeError)),
    "fmin": (_ufunc(np.fmin), PROMOTE, not_for(
        (D.COMPLEX,), message="fmin not implemented for complex tensors.", exc=RuntimeError)),
    "copysign": (_half_as_float(np.copysign), INT_TO_FLOAT, not_for((D.COMPLEX,), "copysign_cpu")),
    "logaddexp": (logaddexp_values, PROMOTE, not_for(_NOT_REAL_FLOAT, "logaddexp_cpu")),
    "logaddexp2": (_half_as_float(np.logaddexp2), PROMOTE, not_for(_NOT_FLOAT, "logaddexp2_cpu")),
    "xlogy": (_half_as_float(xlogy_values), INT_TO_FLOAT, not_for((D.COMPLEX,), "xlogy_cpu")),
    "bitwise_left_shift": (left_shift, PROMOTE, not_for(_NOT_INTEGRAL, "lshift_cpu")),
    "bitwise_right_shift": (right_shift, PROMOTE, not_for(_NOT_INTEGRAL, "rshift_cpu")),
    "clamp_min": (_ufunc(np.maximum), PROMOTE, clamp_check("clamp_min_scalar_cpu")),
    "clamp_max": (_ufunc(np.minimum), PROMOTE, clamp_check("clamp_max_scalar_cpu")),
}

TERNARY = {
    "clamp": (clamp_values, PROMOTE, clamp_check("clamp_scalar_cpu", "clamp_cpu")),
    "lerp": (lerp_values, FIRST, lerp_check("lerp_kernel_scalar")),  # weight: tensor or number
    "addcmul": (addcmul_values, PROMOTE, not_for((D.BOOL,), "addcmul_cpu_out")),
    "addcdiv": (addcdiv_values, PROMOTE, check_addcdiv),
}

UNARY = {
    "neg": (_ufunc(np.negative), SAME, check_not_bool(
        "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
        "invert a mask, use the `~` or `logical_not()` operator instead.")),
    "abs": (_ufunc(np.abs), TO_REAL, check_abs),
    "relu": (relu, SAME, check_not_bool("Boolean inputs not supported for relu")),
    "exp": (_ufunc(np.exp), INT_TO_FLOAT, None),
    "log": (_ufunc(np.log), INT_TO_FLOAT, None),
    "sqrt": (_ufunc(np.sqrt), INT_TO_FLOAT, None),
    "sin": (_ufunc(np.sin), INT_TO_FLOAT, None),
    "cos": (_ufunc(np.cos), INT_TO_FLOAT, None),
    "tanh": (_ufunc(np.tanh), INT_TO_FLOAT, None),
    "sigmoid": (sigmoid, INT_TO_FLOAT, None),
    "reciprocal": (_ufunc(np.reciprocal), INT_TO_FLOAT, None),
    "logical_not": (_ufunc(np.logical_not), LOGICAL, None),
    "bitwise_not": (_ufunc(np.invert), INTEGRAL, check_integral),
    "sign": (sign_values, SAME, not_for((D.COMPLEX,), message=(
        "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
        "torch.sgn instead."))),
    "sgn": (sgn_values, SAME, None),
    "exp2": (_half_as_float(np.exp2), INT_TO_FLOAT, None),
    "expm1": (_half_as_float(np.expm1), INT_TO_FLOAT, None),
    "log2": (_half_as_float(np.log2), INT_TO_FLOAT, None),
    "log10": (_half_as_float(np.log10), INT_TO_FLOAT, None),
    "log1p": (_half_as_float(np.log1p), INT_TO_FLOAT, None),
    "rsqrt": (_half_as_float(rsqrt_values), INT_TO_FLOAT, None),
    "tan": (_half_as_float(np.tan), INT_TO_FLOAT, None),
    "asin": (_half_as_float(np.arcsin), INT_TO_FLOAT, None),
    "acos": (_half_as_float(np.arccos), INT_TO_FLOAT, None),
    "atan": (_half_as_float(np.arctan), INT_TO_FLOAT, None),
    "sinh": (_half_as_float(np.sinh), INT_TO_FLOAT, None),
    "cosh": (_half_as_float(np.cosh), INT_TO_FLOAT, None),
    "asinh": (_half_as_float(np.arcsinh), INT_TO_FLOAT, None),
    "acosh": (_half_as_float(np.arccosh), INT_TO_FLOAT, None),
    "atanh": (_half_as_float(np.arctanh), INT_TO_FLOAT, None),
    "logit": (logit_values, INT_TO_FLOAT, not_for((D.COMPLEX,), "logit_cpu")),
    "erf": (_half_as_float(_sp.erf), INT_TO_FLOAT, not_for((D.COMPLEX,), "erf_vml_cpu")),
    "erfc": (_half_as_float(_sp.erfc), INT_TO_FLOAT, not_for((D.COMPLEX,), "erfc_vml_cpu")),
    "erfinv": (_half_as_float(_sp.erfinv), INT_TO_FLOAT, not_for((D.COMPLEX,), "erfinv_vml_cpu")),
    "lgamma": (_half_as_float(lgamma_values), INT_TO_FLOAT, not_for((D.COMPLEX,), "lgamma_vml_cpu")),
    "digamma": (_half_as_float(digamma_values), INT_TO_FLOAT, not_for((D.COMPLEX,), "digamma")),
    "polygamma": (polygamma_values, INT_TO_FLOAT, not_for((D.COMPLEX,), "polygamma")),
    "floor": (_integral_identity(np.floor), SAME, check_rounding("floor")),
    "ceil": (_integral_identity(np.ceil), SAME, check_rounding("ceil")),
    "trunc": (_integral_identity(np.trunc), SAME, check_rounding("trunc")),
    "round": (_integral_identity(np.rint), SAME, not_for(_BOOL_COMPLEX, "round_vml_cpu")),
    "round_decimals": (round_decimals_values, SAME, not_for(_NOT_REAL_FLOAT + (D.COMPLEX,),
                                                            "round_cpu")),
    "frac": (_half_as_float(frac_values), SAME, not_for(_NOT_FLOAT, "frac_cpu")),
    "nan_to_num": (nan_to_num_values, SAME, None),
    "isnan": (_ufunc(np.isnan), COMPARE, None),
    "isinf": (_half_as_float(np.isinf), COMPARE, None),
    "isposinf": (_half_as_float(isposinf_values), COMPARE, not_for(
        (D.COMPLEX,), message="isposinf does not support complex inputs.", exc=RuntimeError)),
    "isneginf": (_half_as_float(isneginf_values), COMPARE, not_for(
        (D.COMPLEX,), message="isneginf does not support complex inputs.", exc=RuntimeError)),
    "signbit": (signbit_values, COMPARE, not_for(
        (D.COMPLEX,), message="signbit is not implemented for complex tensors.")),
    "angle": (angle_values, FLOAT_REAL, None),
    "conj_physical": (_ufunc(np.conjugate), SAME, None),
}


# ---------------------------------------------------------------------------------------------
# Operand conversion and the shared evaluation path.

def as_array(x, dt):
    """Operand ``x`` (tensor or Python number) as a NumPy array/scalar of dtype ``dt``."""
    if x.__class__ is Tensor or hasattr(x, "_keyset"):
        a = nd(x)
        return a if x._dtype is dt else a.astype(dt._np)
    # a wrapped number converts like PyTorch's scalar-to-dtype cast (ints wrap around)
    return np.asarray(x).astype(dt._np)


def _arrays(operands, cdt):
    if cdt is None:  # logical ops: truth values of operands of any dtype
        return [nd(x) != 0 if hasattr(x, "_keyset") else bool(x) for x in operands]
    return [as_array(x, cdt) for x in operands]


def _quiet():
    """PyTorch computes 1/0, overflow and NaN silently; NumPy would warn."""
    return np.errstate(all="ignore")


_TABLES = {1: UNARY, 2: BINARY, 3: TERNARY}


def row(name, n):
    """The table row of op ``name`` applied to ``n`` operands."""
    return _TABLES[n][name]


def _prepare(name, operands, alpha, out=None):
    """Row, dtypes and NumPy operands of an op (after its checks, and the in-place checks
    against ``out``); ``alpha`` scales the last operand in the computation dtype (add/sub)."""
    fn, rule, check = row(name, len(operands))
    cdt, rdt = result_dtype(rule, operands)
    check_operands(name, operands, check, cdt, rdt, out)
    arrays = _arrays(operands, cdt)
    if alpha is not None:
        check_alpha(cdt, alpha)
        if not (alpha == 1 and alpha.__class__ is int):
            arrays[-1] = np.multiply(arrays[-1], as_array(alpha, cdt))
    return fn, cdt, rdt, arrays


def check_operands(name, operands, check, cdt, rdt, out=None):
    """PyTorch's order: broadcast errors, then (in-place) the output's shape and castability,
    then the op's own dtype check (which runs when the kernel dispatches on dtype)."""
    if len(operands) > 1:
        sizes = [x._size for x in operands if hasattr(x, "_keyset")]
        if any(sz != sizes[0] for sz in sizes):
            _st.broadcast_shapes(*sizes)
    if out is not None:
        check_inplace(out, operands, rdt)
    if check is not None:
        check(name, operands, cdt if cdt is not None else rdt)


def _broadcast_error(operands, err):
    """NumPy's broadcast ValueError as PyTorch's RuntimeError (naming the mismatched sizes)."""
    _st.broadcast_shapes(*[getattr(x, "_size", ()) for x in operands])
    raise err


def evaluate(name, *operands, alpha=None, params=()):
    """Run the row of ``name`` on tensors/numbers; returns (result array, result dtype)."""
    fn, cdt, rdt, arrays = _prepare(name, operands, alpha)
    try:
        with _quiet():
            r = fn(*arrays, cdt, *params)
    except ValueError as e:
        _broadcast_error(operands, e)
    if getattr(r, "dtype", None) != rdt._np:
        r = np.asarray(r).astype(rdt._np)
    return r, rdt


def _fmt(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


def check_inplace(self, operands, rdt):
    """PyTorch's in-place checks: the broadcast must keep self's shape; the result must cast."""
    shape = _st.broadcast_shapes(*[getattr(x, "_size", ()) for x in operands])
    if shape != self._size:
        raise RuntimeError(f"output with shape {_fmt(self._size)} doesn't match the broadcast "
                           f"shape {_fmt(shape)}")
    if not can_cast(rdt, self._dtype):
        raise RuntimeError(f"result type {rdt._short} can't be cast to the desired output type "
                           f"{self._dtype._short}")


def evaluate_into(name, self, *operands, alpha=None, params=()):
    """In-place form of :func:`evaluate`: checks first, then writes into ``self``."""
    _overlap.check_write(self, operands)
    fn, cdt, rdt, arrays = _prepare(name, operands, alpha, self)
    dst = nd(self)
    uf = getattr(fn, "ufunc", None)
    with _quiet():
        if uf is not None:
            uf(*arrays, out=dst, casting="unsafe")
        else:
            np.copyto(dst, fn(*arrays, cdt, *params), casting="unsafe")
    return self


# ---------------------------------------------------------------------------------------------
# Kernels. The same-dtype tensor/tensor case of add/sub/mul skips promotion (and NumPy's
# error-state context, which costs more than the addition): it is the hot path of ``a + b``.
#
# _FP_WARNING: without the error-state context NumPy warns on ``inf * 0`` or an overflow, where
# PyTorch is silent. ember/_kernels/__init__.py filters those warnings out of its kernel modules;
# where the user's filters turn them into errors instead, the fast path catches the
# RuntimeWarning (a try block costs nothing until it catches) and the quiet slow path redoes it.

_NEP50_EXACT = (D.float32, D.float64)


def _number_fast(self, other):
    """True when NumPy may take Python number ``other`` as is: NumPy 2 converts an int/float to
    a float32/float64 array's dtype exactly as PyTorch converts a wrapped number."""
    return (other.__class__ is float or other.__class__ is int) and self._dtype in _NEP50_EXACT


def _large(ufunc, x, y):
    """``ufunc(x, y)`` for operands of at least THRESHOLD bytes: written into a block of the
    caching allocator (warm pages instead of fresh ones) when ``x`` is C-contiguous and ``y``
    is a number or an array of the same shape, so the result layout is the one NumPy picks."""
    if x.flags.c_contiguous and (y.__class__ is not np.ndarray or y.shape == x.shape):
        return ufunc(x, y, out=_cpu_cache.empty(x.shape, x.dtype, x.nbytes))
    return ufunc(x, y)


def add_Tensor(self, other, alpha=1):
    if alpha.__class__ is int and alpha == 1:
        # nd() inlined (self is a tensor here; its cached array is almost always there)
        x = self._np
        if x is None:
            x = self._nd()
        try:
            if getattr(other, "_dtype", None) is self._dtype:
                y = other._np
                if y is None:
                    y = other._nd()
                return wrap(np.add(x, y) if x.nbytes < _BIG else _large(np.add, x, y))
            if _number_fast(self, other):
                return wrap(np.add(x, other) if x.nbytes < _BIG else _large(np.add, x, other))
        except ValueError as e:
            _broadcast_error((self, other), e)
        except RuntimeWarning:  # see _FP_WARNING
            pass
    return wrap(evaluate("add", self, other, alpha=alpha)[0])


def sub_Tensor(self, other, alpha=1):
    if alpha.__class__ is int and alpha == 1:
        x = self._np
        if x is None:
            x = self._nd()
        try:
            if getattr(other, "_dtype", None) is self._dtype and self._dtype is not D.bool_:
                y = other._np
                if y is None:
                    y = other._nd()
                return wrap(np.subtract(x, y) if x.nbytes < _BIG else _large(np.subtract, x, y))
            if _number_fast(self, other):
                return wrap(np.subtract(x, other) if x.nbytes < _BIG
                            else _large(np.subtract, x, other))
        except ValueError as e:
            _broadcast_error((self, other), e)
        except RuntimeWarning:  # see _FP_WARNING
            pass
    return wrap(evaluate("sub", self, other, alpha=alpha)[0])


def rsub_Tensor(self, other, alpha=1):
    return wrap(evaluate("sub", other, self, alpha=alpha)[0])


def mul_Tensor(self, other):
    x = self._np
    if x is None:
        x = self._nd()
    try:
        if getattr(other, "_dtype", None) is self._dtype:
            y = other._np
            if y is None:
                y = other._nd()
            return wrap(np.multiply(x, y) if x.nbytes < _BIG else _large(np.multiply, x, y))
        if _number_fast(self, other):
            return wrap(np.multiply(x, other) if x.nbytes < _BIG
                        else _large(np.multiply, x, other))
    except ValueError as e:
        _broadcast_error((self, other), e)
    except RuntimeWarning:  # see _FP_WARNING
        pass
    return wrap(evaluate("mul", self, other)[0])


def div_Tensor(self, other):
    return wrap(evaluate("div", self, other)[0])


def div_Tensor_mode(self, other, rounding_mode):
    check_rounding_mode(rounding_mode)
    return wrap(evaluate(_DIV_MODES[rounding_mode], self, other)[0])


_DIV_MODES = {None: "div", "trunc": "div_trunc", "floor": "div_floor"}


def _binary_kernel(name):
    def kernel(self, other):
        return wrap(evaluate(name, self, other)[0])
    kernel.__name__ = name
    return kernel


def _unary_kernel(name):
    def kernel(self):
        return wrap(evaluate(name, self)[0])
    kernel.__name__ = name
    return kernel


def _inplace_kernel(name, nargs):
    if nargs == 1:
        def kernel(self):
            return evaluate_into(name, self, self)
    else:
        def kernel(self, other):
            return evaluate_into(name, self, self, other)
    kernel.__name__ = name + "_"
    return kernel


def add__Tensor(self, other, alpha=1):
    if alpha.__class__ is int and alpha == 1 and other.__class__ is Tensor \
            and other._dtype is self._dtype \
            and other._size == self._size and self._dtype is not D.bool_:
        if 0 in self._stride or other._storage_ is self._storage_:  # cheap: may overlap
            _overlap.check_write(self, (other,))
        a = nd(self)
        try:
            np.add(a, nd(other), out=a)
        except RuntimeWarning:  # see _FP_WARNING: the sum is written before NumPy checks flags
            pass
        return self
    return evaluate_into("add", self, self, other, alpha=alpha)


def sub__Tensor(self, other, alpha=1):
    return evaluate_into("sub", self, self, other, alpha=alpha)


def div__Tensor_mode(self, other, rounding_mode):
    check_rounding_mode(rounding_mode)
    return evaluate_into(_DIV_MODES[rounding_mode], self, self, other)


def where_self(condition, self, other):
    if condition._dtype is not D.bool_ and condition._dtype is not D.uint8:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition._dtype._short}")
    dt = result_type_of((self, other))
    try:
        r = np.where(nd(condition), as_array(self, dt), as_array(other, dt))
    except ValueError as e:
        _broadcast_error((condition, self, other), e)
    return wrap(np.asarray(r).astype(dt._np, copy=False))


# ---------------------------------------------------------------------------------------------
# Kernels of ops with non-tensor arguments or optional operands. ``*_operands`` helpers are
# shared with the Meta kernels: they pick the table row and the operands it runs on.

def clamp_operands(opname, self, min, max):  # noqa: A002  (schema names)
    if min is None and max is None:
        raise RuntimeError(f"torch.{opname}: At least one of 'min' or 'max' must not be None")
    if max is None:
        return "clamp_min", (self, min)
    if min is None:
        return "clamp_max", (self, max)
    return "clamp", (self, min, max)


def clamp(self, min=None, max=None):  # noqa: A002
    name, operands = clamp_operands("clamp", self, min, max)
    return wrap(evaluate(name, *operands)[0])


def clamp_(self, min=None, max=None):  # noqa: A002
    name, operands = clamp_operands("clamp", self, min, max)
    return evaluate_into(name, self, *operands)


clamp_Tensor = clamp
clamp__Tensor = clamp_


def lerp_Scalar(self, end, weight):
    return wrap(evaluate("lerp", self, end, weight)[0])


def lerp__Scalar(self, end, weight):
    return evaluate_into("lerp", self, self, end, weight)


lerp_Tensor = lerp_Scalar
lerp__Tensor = lerp__Scalar


def addcmul(self, tensor1, tensor2, value=1):
    return wrap(evaluate("addcmul", self, tensor1, tensor2, params=(value,))[0])


def addcmul_(self, tensor1, tensor2, value=1):
    return evaluate_into("addcmul", self, self, tensor1, tensor2, params=(value,))


def addcdiv(self, tensor1, tensor2, value=1):
    return wrap(evaluate("addcdiv", self, tensor1, tensor2, params=(value,))[0])


def addcdiv_(self, tensor1, tensor2, value=1):
    return evaluate_into("addcdiv", self, self, tensor1, tensor2, params=(value,))


def round_decimals(self, decimals):
    return wrap(evaluate("round_decimals", self, params=(decimals,))[0])


def round__decimals(self, decimals):
    return evaluate_into("round_decimals", self, self, params=(decimals,))


def logit(self, eps=None):
    return wrap(evaluate("logit", self, params=(eps,))[0])


def logit_(self, eps=None):
    return evaluate_into("logit", self, self, params=(eps,))


def check_polygamma_order(n):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")


def polygamma(n, self):
    check_polygamma_order(n)
    return wrap(evaluate("polygamma", self, params=(n,))[0])


def polygamma_(self, n):  # the in-place form takes (self, n)
    check_polygamma_order(n)
    return evaluate_into("polygamma", self, self, params=(n,))


def nan_to_num(self, nan=None, posinf=None, neginf=None):
    return wrap(evaluate("nan_to_num", self, params=(nan, posinf, neginf))[0])


def nan_to_num_(self, nan=None, posinf=None, neginf=None):
    return evaluate_into("nan_to_num", self, self, params=(nan, posinf, neginf))


def abs_(self):
    if self._dtype.is_complex:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return evaluate_into("abs", self, self)


def check_polar(abs, angle):  # noqa: A002  (schema names)
    """polar's dtype checks, in PyTorch's order; returns the complex result dtype."""
    a, b = abs._dtype, angle._dtype
    if a not in (D.float16, D.float32, D.float64) or b not in (D.float16, D.float32, D.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{a._short} and {b._short}")
    if a is not b:
        raise RuntimeError(f"Expected object of scalar type {a._short} but got scalar type "
                           f"{b._short} for second argument")
    if a is D.float16:  # the result would be ComplexHalf, which PyTorch's CPU polar lacks
        raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
    _st.broadcast_shapes(abs._size, angle._size)
    return a.to_complex()


def polar(abs, angle):  # noqa: A002
    rdt = check_polar(abs, angle)
    r, t = nd(abs), nd(angle)
    out = np.empty(np.broadcast_shapes(r.shape, t.shape), rdt._np)
    with _quiet():
        np.multiply(r, np.cos(t), out=out.real)
        np.multiply(r, np.sin(t), out=out.imag)
    return wrap(out)


def equal(self, other):
    """True when both have the same size and elements (compared after type promotion)."""
    if self._size != other._size:
        return False
    dt = result_type_of((self, other))
    return bool(np.array_equal(as_array(self, dt), as_array(other, dt)))


# Generated kernels, named as native_functions.yaml names them: <op>_<overload> (CPU) for every
# overload sharing a row. The Scalar overloads take a number where the Tensor ones take a tensor;
# the kernels accept both.
_ALIASES = {
    "add_Scalar": add_Tensor, "sub_Scalar": sub_Tensor, "rsub_Scalar": rsub_Tensor,
    "mul_Scalar": mul_Tensor, "div_Scalar": div_Tensor, "div_Scalar_mode": div_Tensor_mode,
    "add__Scalar": add__Tensor, "sub__Scalar": sub__Tensor, "div__Scalar_mode": div__Tensor_mode,
}
_BINARY_OVERLOADS = {
    # op -> functional overload names (the first is the Tensor one), in-place overload names
    "mul": ((), ("Tensor", "Scalar")),
    "div": ((), ("Tensor", "Scalar")),
    "floor_divide": (("", "Scalar"), ("Tensor", "Scalar")),
    "remainder": (("Tensor", "Scalar", "Scalar_Tensor"), ("Tensor", "Scalar")),
    "pow": (("Tensor_Tensor", "Tensor_Scalar", "Scalar"), ("Tensor", "Scalar")),
    "eq": (("Tensor", "Scalar"), ("Tensor", "Scalar")),
    "ne": (("Tensor", "Scalar"), ("Tensor", "Scalar")),
    "lt": (("Tensor", "Scalar"), ("Tensor", "Scalar")),
    "le": (("Tensor", "Scalar"), ("Tensor", "Scalar")),
    "gt": (("Tensor", "Scalar"), ("Tensor", "Scalar")),
    "ge": (("Tensor", "Scalar"), ("Tensor", "Scalar")),
    "logical_and": (("",), ("",)),
    "logical_or": (("",), ("",)),
    "logical_xor": (("",), ("",)),
    "bitwise_and": (("Tensor", "Scalar", "Scalar_Tensor"), ("Tensor", "Scalar")),
    "bitwise_or": (("Tensor", "Scalar", "Scalar_Tensor"), ("Tensor", "Scalar")),
    "bitwise_xor": (("Tensor", "Scalar", "Scalar_Tensor"), ("Tensor", "Scalar")),
    "maximum": (("",), ()),
    "minimum": (("",), ()),
    "fmod": (("Tensor", "Scalar"), ("Tensor", "Scalar")),
    "atan2": (("",), ("",)),
    "hypot": (("",), ("",)),
    "fmax": (("",), ()),
    "fmin": (("",), ()),
    "copysign": (("Tensor", "Scalar"), ("Tensor", "Scalar")),
    "logaddexp": (("",), ()),
    "logaddexp2": (("",), ()),
    "xlogy": (("Tensor", "Scalar_Self", "Scalar_Other"), ("Tensor", "Scalar_Other")),
    "bitwise_left_shift": (("Tensor", "Tensor_Scalar", "Scalar_Tensor"),
                           ("Tensor", "Tensor_Scalar")),
    "bitwise_right_shift": (("Tensor", "Tensor_Scalar", "Scalar_Tensor"),
                            ("Tensor", "Tensor_Scalar")),
    "clamp_min": (("", "Tensor"), ("", "Tensor")),
    "clamp_max": (("", "Tensor"), ("", "Tensor")),
}
# The Python operators << and >> (aten::__lshift__ ...) share the bitwise shift rows.
_SHIFT_OPERATORS = {"lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift"}
# Unary rows whose ops take extra arguments (explicit kernels above) or have no in-place form.
_UNARY_EXPLICIT = {"round_decimals", "logit", "nan_to_num", "conj_physical", "polygamma"}
_UNARY_NO_INPLACE = {"isnan", "isinf", "isposinf", "isneginf", "signbit", "angle", "abs"}


def kernel_name(op, overload):
    return f"{op}_{overload}" if overload else op


def _generate():
    kernels = dict(_ALIASES)
    for op, (functional, inplace) in _BINARY_OVERLOADS.items():
        for ov in functional:
            kernels[kernel_name(op, ov)] = _binary_kernel(op)
        for ov in inplace:
            kernels.setdefault(kernel_name(op + "_", ov), _inplace_kernel(op, 2))
    for short, op in _SHIFT_OPERATORS.items():
        for ov in ("Tensor", "Scalar"):
            kernels[f"{short}_{ov}"] = _binary_kernel(op)
            kernels[f"i{short}_{ov}"] = _inplace_kernel(op, 2)
    for op in UNARY:
        if op in _UNARY_EXPLICIT:
            continue
        kernels[op] = _unary_kernel(op)
        if op not in _UNARY_NO_INPLACE:
            kernels[op + "_"] = _inplace_kernel(op, 1)
    kernels["_conj_physical"] = _unary_kernel("conj_physical")
    return kernels


_GENERATED = _generate()
globals().update(_GENERATED)

__all__ = ["add_Tensor", "sub_Tensor", "rsub_Tensor", "mul_Tensor", "div_Tensor",
           "div_Tensor_mode", "add__Tensor", "sub__Tensor", "div__Tensor_mode", "where_self",
           "clamp", "clamp_", "clamp_Tensor", "clamp__Tensor", "lerp_Scalar", "lerp__Scalar",
           "lerp_Tensor", "lerp__Tensor", "addcmul", "addcmul_", "addcdiv", "addcdiv_",
           "round_decimals", "round__decimals", "logit", "logit_", "nan_to_num", "nan_to_num_",
           "polygamma", "polygamma_",
           "abs_", "polar", "equal", *_GENERATED]
