"""CPU pointwise kernels, generated from three tables: ``UNARY``, ``BINARY`` and ``TERNARY``.

Each row names the NumPy function that computes the op; its type-promotion kind (how PyTorch
picks the result dtype from the operands' dtypes) and its operand check are the row of the same
name in ``rules/pointwise.py``, which the Meta kernels (``meta/pointwise.py``) use too. Every
overload of an op (``add.Tensor``, ``add.Scalar``, the in-place ``add_.Tensor`` ...) gets its
kernel from its row (``rules.pointwise.OVERLOADS``) and registers it by reference.

Operands may be Python numbers ("wrapped numbers"): they take part in type promotion weakly
(``result_type_of``) and are converted to the computation dtype before NumPy sees them, so NumPy's
own promotion never decides a dtype. In-place kernels check the broadcast shape and castability
first, then let NumPy write straight into ``self``; a failing call leaves ``self`` untouched.

Ops with non-tensor arguments (``logit``'s eps, ``clamp``'s bounds, ``lerp``'s weight ...) pass
them as ``params``: the row's function receives ``(*arrays, dtype, *params)``. The functions
NumPy has no exact ufunc for are in ``pointwise_values.py``.
"""
import numpy as np
import scipy.special as _sp

from ..._core import complex32 as _complex32
from ..._core import dtype as D
from ..._core import float8 as _float8
from ..._core import overlap as _overlap
from ..._core import strides as _st
from ..._core.allocator import cpu_cache as _cpu_cache
from ..._core.promotion import result_type_of
from ..._tensor import Tensor  # the frontend class itself: an exact-class test on the hot path
from ..registration import register
from ..rules import pointwise as _R
from ..rules import float8 as _gates
from ..rules.float8 import REFUSED as _REFUSED
from ..rules.unsigned import BAREBONES as _BAREBONES
from . import generated as _generated
from ..rules.pointwise import (_DIV_MODES, check_alpha, check_operands, check_polar,
                               check_polygamma_order, check_rounding_mode, clamp_operands,
                               result_dtype)
from ._util import array_module, array_of, nd, wrap
from .pointwise_values import (_half_as_float, _integral_identity, _ufunc, add_alpha_values,
                               addcdiv_values,
                               addcmul_values, angle_values, clamp_values, digamma_values,
                               erfinv_values, fmax_values, fmin_values,
                               floor_divide, fmod_values, frac_values, isneginf_values,
                               isposinf_values, left_shift, lerp_values, lgamma_values,
                               logaddexp_values, logit_values, nan_to_num_values,
                               polygamma_values, power, reciprocal_values, relu, remainder,
                               right_shift, round_decimals_values, rsqrt_values, sgn_values,
                               sigmoid_values,
                               sigmoid_backward_values, sign_values, signbit_values,
                               tanh_backward_values, trunc_divide, xlogy_values)

# ---------------------------------------------------------------------------------------------
# The compute rows: op row name -> NumPy function of (arrays..., computation dtype, *params).
# Each row's type-promotion kind and operand check are in rules/pointwise.py under the same name.

BINARY = {
    "add": _ufunc(np.add),
    "sub": _ufunc(np.subtract),
    "mul": _ufunc(np.multiply),
    "div": _ufunc(np.true_divide),
    "div_trunc": trunc_divide,
    "div_floor": floor_divide,
    "floor_divide": floor_divide,
    "remainder": remainder,
    "pow": power,
    "eq": _ufunc(np.equal),
    "ne": _ufunc(np.not_equal),
    "lt": _ufunc(np.less),
    "le": _ufunc(np.less_equal),
    "gt": _ufunc(np.greater),
    "ge": _ufunc(np.greater_equal),
    "logical_and": _ufunc(np.logical_and),
    "logical_or": _ufunc(np.logical_or),
    "logical_xor": _ufunc(np.logical_xor),
    "bitwise_and": _ufunc(np.bitwise_and),
    "bitwise_or": _ufunc(np.bitwise_or),
    "bitwise_xor": _ufunc(np.bitwise_xor),
    "maximum": _ufunc(np.maximum),
    "minimum": _ufunc(np.minimum),
    "fmod": fmod_values,
    "atan2": _half_as_float(np.arctan2),
    "hypot": _half_as_float(np.hypot),
    "sigmoid_backward": sigmoid_backward_values,
    "tanh_backward": tanh_backward_values,
    "fmax": fmax_values,
    "fmin": fmin_values,
    "copysign": _half_as_float(np.copysign),
    "logaddexp": logaddexp_values,
    "logaddexp2": _half_as_float(np.logaddexp2),
    "xlogy": _half_as_float(xlogy_values),
    "bitwise_left_shift": left_shift,
    "bitwise_right_shift": right_shift,
    "clamp_min": _ufunc(np.maximum),
    "clamp_max": _ufunc(np.minimum),
}

TERNARY = {
    "clamp": clamp_values,
    "lerp": lerp_values,
    "addcmul": addcmul_values,
    "addcdiv": addcdiv_values,
}

UNARY = {
    "neg": _ufunc(np.negative),
    "abs": _ufunc(np.abs),
    "relu": relu,
    "exp": _ufunc(np.exp),
    "log": _ufunc(np.log),
    "sqrt": _ufunc(np.sqrt),
    "sin": _ufunc(np.sin),
    "cos": _ufunc(np.cos),
    "tanh": _ufunc(np.tanh),
    "sigmoid": _half_as_float(sigmoid_values),
    "reciprocal": reciprocal_values,
    "logical_not": _ufunc(np.logical_not),
    "bitwise_not": _ufunc(np.invert),
    "sign": sign_values,
    "sgn": sgn_values,
    "exp2": _half_as_float(np.exp2),
    "expm1": _half_as_float(np.expm1),
    "log2": _half_as_float(np.log2),
    "log10": _half_as_float(np.log10),
    "log1p": _half_as_float(np.log1p),
    "rsqrt": _half_as_float(rsqrt_values),
    "tan": _half_as_float(np.tan),
    "asin": _half_as_float(np.arcsin),
    "acos": _half_as_float(np.arccos),
    "atan": _half_as_float(np.arctan),
    "sinh": _half_as_float(np.sinh),
    "cosh": _half_as_float(np.cosh),
    "asinh": _half_as_float(np.arcsinh),
    "acosh": _half_as_float(np.arccosh),
    "atanh": _half_as_float(np.arctanh),
    "logit": logit_values,
    "erf": _half_as_float(_sp.erf),
    "erfc": _half_as_float(_sp.erfc),
    "erfinv": _half_as_float(erfinv_values),
    "lgamma": _half_as_float(lgamma_values),
    "digamma": _half_as_float(digamma_values),
    "polygamma": polygamma_values,
    "floor": _integral_identity(np.floor),
    "ceil": _integral_identity(np.ceil),
    "trunc": _integral_identity(np.trunc),
    "round": _integral_identity(np.rint),
    "round_decimals": round_decimals_values,
    "round_zero_decimals": round_decimals_values,
    "frac": _half_as_float(frac_values),
    "nan_to_num": nan_to_num_values,
    "isnan": _ufunc(np.isnan),
    "isinf": _half_as_float(np.isinf),
    "isposinf": _half_as_float(isposinf_values),
    "isneginf": _half_as_float(isneginf_values),
    "signbit": signbit_values,
    "angle": angle_values,
    "conj_physical": _ufunc(np.conjugate),
}


# ---------------------------------------------------------------------------------------------
# Operand conversion and the shared evaluation path.

def as_array(x, dt):
    """Operand ``x`` (tensor or Python number) as a NumPy array/scalar of dtype ``dt``."""
    if x.__class__ is Tensor or hasattr(x, "_keyset"):
        a = nd(x)
        if x._dtype is dt:
            return a
        if x._dtype is D.complex32:  # (NumPy cannot cast the float16 pair)
            return _complex32.to_complex64(a).astype(dt._np)
        return D.cast_values(a, dt)
    # a wrapped number converts like PyTorch's scalar-to-dtype cast (ints wrap around)
    if dt is D.complex32:
        return _complex32.scalar(x)
    return D.cast_values(x, dt)


def _arrays(operands, cdt):
    if cdt is None:  # logical ops: truth values of operands of any dtype
        return [nd(x) != 0 if hasattr(x, "_keyset") else bool(x) for x in operands]
    if cdt in D.FLOAT8:
        # c10 computes float8 ops in float: operands widen exactly (numbers after becoming
        # float8 themselves), and results round back with c10's conversion (_float8_result)
        return [nd(x).astype(np.float32) if hasattr(x, "_keyset") else
                _float8.to_float8(np.asarray(x), cdt).astype(np.float32) for x in operands]
    if cdt is D.complex32:
        # ATen computes ComplexHalf ops in complex<float>: operands widen exactly, results round
        # back part by part (_float8_result)
        return [_complex32.to_complex64(nd(x)) if getattr(x, "_dtype", None) is D.complex32
                else as_array(x, D.complex64) for x in operands]
    return [as_array(x, cdt) for x in operands]


# complex32 ops whose ATen kernel rounds between operations (the others round once, at the end)
_COMPLEX32_ROWS = {"addcmul": lambda x, t1, t2, dt, value: _complex32.addcmul(x, t1, t2, value)}


def _float8_result(r, rdt):
    """A result computed in float32/complex64 for a float8/complex32 op, rounded back."""
    if rdt in D.FLOAT8:
        return _float8.to_float8(r, rdt)
    if rdt is D.complex32:
        return _complex32.from_any(r)
    return array_of(r).astype(rdt._np)


def _quiet():
    """PyTorch computes 1/0, overflow and NaN silently; NumPy would warn."""
    return np.errstate(all="ignore")


_TABLES = {1: UNARY, 2: BINARY, 3: TERNARY}


# ATen's CPU mul/div of a half or bfloat16 tensor compute in float ("opmath"), and a scalar
# second operand (a Python number, or a one-element tensor of another dtype) enters as its
# original value converted to float, not rounded to the tensor's dtype first; add/sub round
# the scalar (and alpha) to the dtype, then compute a + alpha * b in float, rounding once
_OPMATH_ROWS = frozenset(("mul", "div"))


def _add_alpha(a, b, alpha, dt):
    """add/sub with an alpha in float32/float64: ATen's one fused multiply-add, by the generated
    kernel where it takes the operands, else in NumPy."""
    if a.__class__ is np.ndarray and b.__class__ is np.ndarray:
        r = _generated.pointwise("add_alpha", [a, b, np.full(1, alpha, a.dtype)])
        if r is not None:
            return r
    return add_alpha_values(a, b, alpha)


_ALPHA_ROWS_FMA = {"add": _add_alpha, "sub": _add_alpha}
_ALPHA_ROWS = frozenset(("add", "sub"))
_REDUCED = (D.float16, D.bfloat16)


def _mul__Scalar(self, other):
    """``mul_.Scalar``: unlike the other overloads (see _OPMATH_ROWS), ATen's converts the
    number to a half or bfloat16 tensor's dtype first (blackman_window's ``arange.mul_``)."""
    if self._dtype in _REDUCED and other.__class__ in (int, float):
        other = float(as_array(other, self._dtype))
    return evaluate_into("mul", self, self, other)


def _bfloat16_rounded(x):
    return x.astype(D.bfloat16._np).astype(np.float32)


# ATen's bfloat16 pow by 3 or -2 is a vector expression on bfloat16 vectors, each of whose
# operations rounds to bfloat16 (x * x * x, 1 / (x * x)); other exponents, a tensor's exponent
# and float16 compute in float and round once
_BFLOAT16_POW = {3: lambda x, dt: _bfloat16_rounded(x * x) * x,
                 -2: lambda x, dt: 1 / _bfloat16_rounded(x * x)}


def _opmath_arrays(operands, cdt):
    """The operands of a reduced-float add/sub/mul/div as float32 arrays (see _OPMATH_ROWS)."""
    first, other = operands
    a = as_array(first, cdt).astype(np.float32)  # a number first is cast to the dtype first
    if hasattr(other, "_keyset") and not (other._dtype is not cdt and other.numel() == 1):
        b = as_array(other, cdt).astype(np.float32)
    else:
        b = as_array(other, D.float32)
    return [a, b]


def _prepare(name, operands, alpha, out=None):
    """Row, dtypes and NumPy operands of an op (after its checks, and the in-place checks
    against ``out``); ``alpha`` scales the last operand in the computation dtype (add/sub).
    The computation dtype returned is float32 for a reduced-float add/sub/mul/div (whose result
    is rounded once, to the result dtype)."""
    n = len(operands)
    fn = _TABLES[n][name]  # the compute row; its rule row has the same name
    rule, check = _R.RULES[n][name]
    cdt, rdt = result_dtype(rule, operands)
    check_operands(name, operands, check, cdt, rdt, out)
    if cdt in _REDUCED:
        if name in _OPMATH_ROWS:
            return fn, D.float32, rdt, _opmath_arrays(operands, cdt)
        if name == "pow" and cdt is D.bfloat16 and not hasattr(operands[1], "_keyset") and \
                operands[1] in _BFLOAT16_POW:
            return (_BFLOAT16_POW[operands[1]], D.float32, rdt,
                    [as_array(operands[0], cdt).astype(np.float32)])
        if name == "lerp":  # ATen's lerp computes in float32 with a number weight kept as is
            return fn, D.float32, rdt, [
                as_array(x, cdt if hasattr(x, "_keyset") else D.float32).astype(np.float32)
                for x in operands]
        if name in _ALPHA_ROWS and alpha is not None and \
                not (alpha == 1 and alpha.__class__ is int):
            check_alpha(cdt, alpha)
            arrays = [as_array(x, cdt).astype(np.float32) for x in operands]
            arrays[-1] = np.multiply(arrays[-1], as_array(alpha, cdt).astype(np.float32))
            return fn, D.float32, rdt, arrays
    arrays = _arrays(operands, cdt)
    if alpha is not None and cdt in _GENERATED and not (alpha == 1 and alpha.__class__ is int):
        # ATen's vectorised loop fuses; with a number for other, its scalar loop over the last
        # elements (fewer than a vector) does not, so a few of those may differ by an ulp
        check_alpha(cdt, alpha)
        return _ALPHA_ROWS_FMA[name], cdt, rdt, arrays + [-alpha if name == "sub" else alpha]
    if alpha is not None:
        check_alpha(cdt, alpha)
        if cdt is D.complex32 or cdt.is_complex and any(
                getattr(x, "_dtype", None) is D.complex32 for x in operands):
            # ATen's complex add always multiplies by alpha: 1 * (inf+0j) has a NaN part
            with _quiet():
                arrays[-1] = np.multiply(arrays[-1], np.complex64(alpha))
        elif not (alpha == 1 and alpha.__class__ is int):
            arrays[-1] = np.multiply(arrays[-1], as_array(alpha, cdt))
    return fn, cdt, rdt, arrays


def _broadcast_error(operands, err):
    """NumPy's broadcast ValueError as PyTorch's RuntimeError (naming the mismatched sizes)."""
    _st.broadcast_shapes(*[getattr(x, "_size", ()) for x in operands])
    raise err


# computation dtypes with generated C kernels for large operands (cpu/generated.py)
_GENERATED = frozenset((D.float32, D.float64))


def evaluate(name, *operands, alpha=None, params=()):
    """Run the row of ``name`` on tensors/numbers; returns (result array, result dtype)."""
    fn, cdt, rdt, arrays = _prepare(name, operands, alpha)
    if cdt is rdt and cdt in _GENERATED and not params:
        r = _generated.pointwise(name, arrays)
        if r is not None:
            return r, rdt
    if cdt in D.FLOAT8:
        cdt = D.float32  # see _arrays
    elif cdt is D.complex32:
        cdt = D.complex64
        fn = _COMPLEX32_ROWS.get(name, fn)
    try:
        with _quiet():
            r = fn(*arrays, cdt, *params)
    except ValueError as e:
        _broadcast_error(operands, e)
    if getattr(r, "dtype", None) != rdt._np:
        r = _float8_result(r, rdt)
    return r, rdt


def evaluate_into(name, self, *operands, alpha=None, params=()):
    """In-place form of :func:`evaluate`: checks first, then writes into ``self``."""
    _overlap.check_write(self, operands)
    fn, cdt, rdt, arrays = _prepare(name, operands, alpha, self)
    dst = nd(self)
    if cdt in D.FLOAT8 or self._dtype in D.FLOAT8:  # see _arrays
        with _quiet():
            r = fn(*arrays, D.float32 if cdt in D.FLOAT8 else cdt, *params)
            np.copyto(dst, _float8.cast(r, dst.dtype), casting="unsafe")
        return self
    if cdt is D.complex32 or self._dtype is D.complex32:
        if cdt is D.complex32:
            fn = _COMPLEX32_ROWS.get(name, fn)
        with _quiet():
            r = fn(*arrays, D.complex64 if cdt is D.complex32 else cdt, *params)
            np.copyto(dst, _complex32.cast(r, dst.dtype), casting="unsafe")
        return self
    if cdt is self._dtype and cdt in _GENERATED and not params and \
            _generated.pointwise_into(name, dst, arrays):
        return self
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
_GEN_MIN = _generated.MIN_NUMEL


def _number_fast(self, other):
    """True when NumPy may take Python number ``other`` as is: NumPy 2 converts an int/float to
    a float32/float64 array's dtype exactly as PyTorch converts a wrapped number."""
    return (other.__class__ is float or other.__class__ is int) and self._dtype in _NEP50_EXACT


def _large(name, ufunc, x, y):
    """``ufunc(x, y)`` for an operand of at least ``generated.MIN_NUMEL`` elements: a generated
    kernel's result where one applies (``cpu/generated.py``), else NumPy's, written into a block
    of the caching allocator (warm pages instead of fresh ones) when ``x`` is C-contiguous and
    ``y`` is a number or an array of the same shape, so the result layout is the one NumPy
    picks."""
    r = _generated.pointwise(name, [x, y if y.__class__ is np.ndarray else
                                    np.asarray(y).astype(x.dtype)])
    if r is not None:
        return r
    if x.flags.c_contiguous and (y.__class__ is not np.ndarray or y.shape == x.shape):
        return ufunc(x, y, out=_cpu_cache.empty(x.shape, x.dtype, x.nbytes))
    return ufunc(x, y)


def _add_sub_mul_kernel(name, ufunc, with_alpha=True, bool_ok=True):
    """The kernel of ``add``/``sub``/``mul.Tensor``: when ``other`` is a tensor of ``self``'s
    dtype (not bool unless ``bool_ok``, never float8) or a Python number NumPy converts exactly,
    and alpha is 1, one ufunc call; otherwise the general path. (A closure, not a helper the
    kernels call: a Python call is a measurable part of a 1-element ``a + b``.)"""
    slow = frozenset(D.FLOAT8 + (D.complex32,) + (() if bool_ok else (D.bool_,))) | _BAREBONES
    row = f"{name}.Tensor"
    checked = row in _gates.IN_KERNEL  # (add's and sub's: mul has a kernel for every dtype)

    def kernel(self, other, alpha=1):
        if alpha.__class__ is int and alpha == 1:
            # nd() inlined (self is a tensor here; its cached array is almost always there)
            x = self._np
            if x is None:
                x = self._nd()
            try:
                if getattr(other, "_dtype", None) is self._dtype and self._dtype not in slow:
                    y = other._np
                    if y is None:
                        y = other._nd()
                    return wrap(ufunc(x, y) if x.size < _GEN_MIN and y.size < _GEN_MIN
                                else _large(name, ufunc, x, y))
                if _number_fast(self, other):
                    return wrap(ufunc(x, other) if x.size < _GEN_MIN
                                else _large(name, ufunc, x, other))
            except ValueError as e:
                _broadcast_error((self, other), e)
            except RuntimeWarning:  # see _FP_WARNING
                pass
        if checked and (self._dtype in _REFUSED or getattr(other, "_dtype", None) in _REFUSED):
            _gates.refuse(row, (self, other, alpha))
        return wrap(evaluate(name, self, other, alpha=alpha if with_alpha else None)[0])
    kernel.__name__ = kernel.__qualname__ = f"{name}_Tensor"
    return kernel


add_Tensor = _add_sub_mul_kernel("add", np.add)
sub_Tensor = _add_sub_mul_kernel("sub", np.subtract, bool_ok=False)
mul_Tensor = _add_sub_mul_kernel("mul", np.multiply, with_alpha=False)


def rsub_Tensor(self, other, alpha=1):
    return wrap(evaluate("sub", other, self, alpha=alpha)[0])


def div_Tensor(self, other):
    return wrap(evaluate("div", self, other)[0])


def div_Tensor_mode(self, other, rounding_mode):
    check_rounding_mode(rounding_mode)
    return wrap(evaluate(_DIV_MODES[rounding_mode], self, other)[0])


def _binary_kernel(name):
    def kernel(self, other):
        return wrap(evaluate(name, self, other)[0])
    kernel.__name__ = name
    return kernel


def _unary_kernel(name, op=None):
    """The kernel of a unary row; of ``op``, when that is an ``IN_KERNEL`` op (rules/float8.py),
    with the dtype gates' check."""
    if op is None:
        def kernel(self):
            return wrap(evaluate(name, self)[0])
    else:
        def kernel(self):
            if self._dtype in _REFUSED:
                _gates.refuse(op, (self,))
            return wrap(evaluate(name, self)[0])
    kernel.__name__ = name
    return kernel


def _inplace_kernel(name, nargs, op=None):
    if op is not None:  # (see _unary_kernel)
        def kernel(self):
            if self._dtype in _REFUSED:
                _gates.refuse(op, (self,))
            return evaluate_into(name, self, self)
    elif nargs == 1:
        def kernel(self):
            return evaluate_into(name, self, self)
    else:
        def kernel(self, other):
            return evaluate_into(name, self, self, other)
    kernel.__name__ = name + "_"
    return kernel


# add_'s NumPy fast path skips the rules: not for these (bool's or, complex32's pairs, float8's
# missing kernel)
_ADD_SLOW_DTYPES = frozenset((D.bool_, D.complex32) + tuple(D.FLOAT8)) | _BAREBONES


def add__Tensor(self, other, alpha=1):
    if alpha.__class__ is int and alpha == 1 and other.__class__ is Tensor \
            and other._dtype is self._dtype \
            and other._size == self._size and self._dtype not in _ADD_SLOW_DTYPES:
        if 0 in self._stride or other._storage_ is self._storage_:  # cheap: may overlap
            _overlap.check_write(self, (other,))
        a = nd(self)
        if a.size >= _GEN_MIN and _generated.pointwise_into("add", a, [a, nd(other)]):
            return self
        try:
            np.add(a, nd(other), out=a)
        except RuntimeWarning:  # see _FP_WARNING: the sum is written before NumPy checks flags
            pass
        return self
    if self._dtype in _REFUSED or getattr(other, "_dtype", None) in _REFUSED:
        _gates.refuse("add_.Tensor", (self, other, alpha))
    return evaluate_into("add", self, self, other, alpha=alpha)


def sub__Tensor(self, other, alpha=1):
    if self._dtype in _REFUSED or getattr(other, "_dtype", None) in _REFUSED:
        _gates.refuse("sub_.Tensor", (self, other, alpha))
    return evaluate_into("sub", self, self, other, alpha=alpha)


def div__Tensor_mode(self, other, rounding_mode):
    check_rounding_mode(rounding_mode)
    return evaluate_into(_DIV_MODES[rounding_mode], self, self, other)


def where_self(condition, self, other):
    _R.check_where_condition(condition)
    dt = result_type_of((self, other))
    try:
        r = np.where(nd(condition), as_array(self, dt), as_array(other, dt))
    except ValueError as e:
        _broadcast_error((condition, self, other), e)
    return wrap(np.asarray(r).astype(dt._np, copy=False))


# ---------------------------------------------------------------------------------------------
# Kernels of ops with non-tensor arguments or optional operands. ``*_operands`` helpers are
# shared with the Meta kernels: they pick the table row and the operands it runs on.

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


def addcmul(self, tensor1, tensor2, value=1):
    return wrap(evaluate("addcmul", self, tensor1, tensor2, params=(value,))[0])


def addcmul_(self, tensor1, tensor2, value=1):
    return evaluate_into("addcmul", self, self, tensor1, tensor2, params=(value,))


def addcdiv(self, tensor1, tensor2, value=1):
    return wrap(evaluate("addcdiv", self, tensor1, tensor2, params=(value,))[0])


def addcdiv_(self, tensor1, tensor2, value=1):
    return evaluate_into("addcdiv", self, self, tensor1, tensor2, params=(value,))


def round_decimals(self, decimals):
    return wrap(evaluate(_R.params_row("round_decimals", (decimals,)), self,
                         params=(decimals,))[0])


def round__decimals(self, decimals):
    return evaluate_into(_R.params_row("round_decimals", (decimals,)), self, self,
                         params=(decimals,))


def logit(self, eps=None):
    return wrap(evaluate("logit", self, params=(eps,))[0])


def logit_(self, eps=None):
    return evaluate_into("logit", self, self, params=(eps,))


def polygamma(n, self):
    check_polygamma_order(n, self)
    return wrap(evaluate("polygamma", self, params=(n,))[0])


def polygamma_(self, n):  # the in-place form takes (self, n)
    check_polygamma_order(n, self)
    return evaluate_into("polygamma", self, self, params=(n,))


def nan_to_num(self, nan=None, posinf=None, neginf=None):
    return wrap(evaluate("nan_to_num", self, params=(nan, posinf, neginf))[0])


def nan_to_num_(self, nan=None, posinf=None, neginf=None):
    return evaluate_into("nan_to_num", self, self, params=(nan, posinf, neginf))


def abs_(self):
    if self._dtype.is_complex:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return evaluate_into("abs", self, self)


def polar(abs, angle):  # noqa: A002
    rdt = check_polar(abs, angle)
    r, t = nd(abs), nd(angle)
    out = array_module(r).empty(np.broadcast_shapes(r.shape, t.shape), rdt._np)
    with _quiet():
        np.multiply(r, np.cos(t), out=out.real)
        np.multiply(r, np.sin(t), out=out.imag)
    return wrap(out)


def equal(self, other):
    """True when both have the same size and elements (compared after type promotion)."""
    if self._size != other._size:
        return False
    dt = result_type_of((self, other))
    if dt is D.complex32:
        raise NotImplementedError("\"equal_cpu\" not implemented for 'ComplexHalf'")
    return bool(np.array_equal(as_array(self, dt), as_array(other, dt)))


# ---------------------------------------------------------------------------------------------
# Registration: a CPU kernel for every overload in rules/pointwise.py's OVERLOADS. The
# hand-written kernels above serve the overloads named here (the Scalar overloads take a number
# where the Tensor ones take a tensor; the kernels accept both); every other overload gets the
# kernel its calling form generates from its row.

HAND_WRITTEN = {
    "add.Tensor": add_Tensor, "add.Scalar": add_Tensor,
    "add_.Tensor": add__Tensor, "add_.Scalar": add__Tensor,
    "sub.Tensor": sub_Tensor, "sub.Scalar": sub_Tensor,
    "sub_.Tensor": sub__Tensor, "sub_.Scalar": sub__Tensor,
    "rsub.Tensor": rsub_Tensor, "rsub.Scalar": rsub_Tensor,
    "mul.Tensor": mul_Tensor, "mul.Scalar": mul_Tensor,
    "div.Tensor": div_Tensor, "div.Scalar": div_Tensor,
    "mul_.Scalar": _mul__Scalar,
    "div.Tensor_mode": div_Tensor_mode, "div.Scalar_mode": div_Tensor_mode,
    "div_.Tensor_mode": div__Tensor_mode, "div_.Scalar_mode": div__Tensor_mode,
    "round.decimals": round_decimals, "round_.decimals": round__decimals,
    "logit": logit, "logit_": logit_,
    "nan_to_num": nan_to_num, "nan_to_num_": nan_to_num_,
    "addcmul": addcmul, "addcmul_": addcmul_,
    "addcdiv": addcdiv, "addcdiv_": addcdiv_,
    "lerp.Scalar": lerp_Scalar, "lerp.Tensor": lerp_Scalar,
    "lerp_.Scalar": lerp__Scalar, "lerp_.Tensor": lerp__Scalar,
}

_FORMS = {
    _R.UNARY: _unary_kernel,
    _R.BINARY: lambda name, op: _binary_kernel(name),
    _R.INPLACE_UNARY: lambda name, op: _inplace_kernel(name, 1, op),
    _R.INPLACE_BINARY: lambda name, op: _inplace_kernel(name, 2),
}


def register_overloads(overloads, hand_written=HAND_WRITTEN):
    """Register a CPU kernel for each ``op overload -> (row, calling form)`` of ``overloads``."""
    for op, (name, form) in overloads.items():
        fn = hand_written.get(op)
        register(op, "CPU", fn if fn is not None else
                 _FORMS[form](name, op if op in _gates.IN_KERNEL else None))


register_overloads(_R.OVERLOADS)
