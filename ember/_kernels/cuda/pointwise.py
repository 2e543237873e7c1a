"""CUDA pointwise kernels: every overload of ``rules/pointwise.py``'s ``OVERLOADS`` whose calling
form is listed in ``_FORMS`` below.

One op is one row, as on the CPU: the row's promotion kind and operand checks are the rules'
(shared with the CPU and Meta kernels), and its values are the CPU table's compute row run on
device arrays (``arrays.py``): a row that is a NumPy ufunc becomes the array module's ufunc of the
same name (CuPy's on a GPU), written straight into the result; any other row is called with
device arrays, which NumPy's dispatch protocols hand to CuPy. A row CuPy cannot compute raises
``NeedsHost`` and the op runs through the host-kernel fallback.

The result's layout follows the operands as TensorIterator's does: an operand of the result's
shape whose layout is dense gives its strides; otherwise the result is contiguous.
float8 and complex32 computations stay on the host (their rounding helpers are NumPy-only).

add, sub, mul and div of contiguous operands of one dtype (or one a scalar) into a contiguous
result take a raw kernel on a GPU instead (``csrc/binary.cu``): one pass with 16-byte loads and
stores, where the ufunc's element-wise indexing reaches less of the memory bandwidth.
"""
import math

import numpy as np

from ..._core import dtype as D
from ..._core import overlap as _overlap
from ..._core import strides as _st
from ..._core.tensor_impl import empty_tensor
from ..cpu import pointwise as _cpu
from ..cpu.pointwise_values import from_parts
from ..rules import pointwise as _R
from ..rules.pointwise import (_DIV_MODES, check_alpha, check_operands, check_rounding_mode,
                               clamp_operands, result_dtype)
from .arrays import HOST_DTYPES, NeedsHost, device_array, device_of, launch
from .fused import _kernel, pointer

_TABLES = {1: _cpu.UNARY, 2: _cpu.BINARY, 3: _cpu.TERNARY}
_HALF = (D.float16, D.bfloat16)


# ---------------------------------------------------------------------------------------------
# Rows CuPy computes otherwise than PyTorch (and the CPU rows) at zeros and infinities: computed
# here from CuPy's parts instead, by PyTorch's formulas (seen on an H200, CuPy 14.2, with
# benchmarks/gpu_special_values_check.py). Each takes the module and the operand arrays.

def _complex_log(base):
    """log(z) divided by the real log(base), part by part, as c10::complex's log2/log10. CuPy
    divides by a complex log(base): a NaN imaginary part where log(z) is infinite (z = 0)."""
    def row(xp, z):
        r = xp.log(z)
        return from_parts(xp, r.real / math.log(base), r.imag / math.log(base))
    return row


def _floor_divide(xp, a, b):
    """PyTorch's div_floor_floating (CPython's float floor division, as NumPy's): CuPy gives -0
    for 1 // -1e30 where PyTorch gives -1. Half operands compute in float32, as PyTorch's."""
    if a.dtype == np.float16:
        a, b = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        mod = xp.fmod(a, b)
        div = (a - mod) / b
        div = xp.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
        floor = xp.floor(div)
        floor = xp.where(div - floor > 0.5, floor + 1, floor)
        floor = xp.where(div != 0, floor, xp.copysign(xp.zeros_like(div), a / b))
        return xp.where(b == 0, a / b, floor)


_COMPLEX_ROWS = {"log2": _complex_log(2), "log10": _complex_log(10)}
_FLOAT_ROWS = {"floor_divide": _floor_divide, "div_floor": _floor_divide}


def _device_row(name, cdt):
    """This module's own computation of row ``name`` in ``cdt``, or None (the CPU's row)."""
    if cdt is None:
        return None
    if cdt.is_complex:
        return _COMPLEX_ROWS.get(name)
    return _FLOAT_ROWS.get(name) if cdt.is_floating_point else None


def _is_tensor(x):
    return hasattr(x, "_keyset")


def _result_layout(shape, tensors):
    for x in tensors:
        if x._size == shape and x._size and _st.is_non_overlapping_and_dense(x._size, x._stride):
            return x._stride
    return None


def _result_shape(tensors):
    """The broadcast shape of ``tensors`` (most often one shape they all have)."""
    shape = tensors[0]._size if tensors else ()
    for t in tensors:
        if t._size != shape:
            return _st.broadcast_shapes(*[x._size for x in tensors])
    return shape


def _operand(x, cdt, xp, rt):
    """Operand ``x`` as the row computes it: an array in the computation dtype, or a NumPy scalar
    of that dtype for a wrapped number (converted as PyTorch converts it: ints wrap around)."""
    if _is_tensor(x):
        if x._device.type == "cpu":  # a 0-dim CPU tensor, which may join any device's op
            a = x._nd()
            return (a != 0)[()] if cdt is None else a.astype(cdt._np)[()]
        a = device_array(x, rt)
        if cdt is None:  # logical ops: truth values
            return a != 0
        return a if x._dtype is cdt else a.astype(cdt._np)
    if cdt is None:
        return np.bool_(x)
    return np.asarray(x).astype(cdt._np)[()]


def _row_function(name, n, xp):
    """(xp's ufunc or None, whether half dtypes compute in float32, the compute row)."""
    fn = _TABLES[n][name]
    uf = getattr(fn, "ufunc", None)
    if uf is not None:
        return _ufunc_of(xp, uf), False, fn
    uf = getattr(fn, "ufunc_in_float", None)
    if uf is not None:
        return _ufunc_of(xp, uf), True, fn
    return None, False, fn


def _ufunc_of(xp, uf):
    """NumPy or SciPy ufunc ``uf`` of array module ``xp``: CuPy's of the same name (its SciPy
    special functions are in ``cupyx.scipy.special``)."""
    if xp is np:
        return uf
    f = getattr(xp, uf.__name__, None)
    if f is None:
        import cupyx.scipy.special as special
        f = getattr(special, uf.__name__, None)
    if f is None:
        raise NeedsHost(f"CuPy has no ufunc {uf.__name__}")
    return f


# ---------------------------------------------------------------------------------------------
# The contiguous binary fast path (csrc/binary.cu)

# dtype -> kernel suffix; dtype -> the opmath type of the kernels' alpha and scalar arguments
# (float for the half types, as PyTorch's opmath_type)
BINARY_SUFFIX = {D.float32: "f32", D.float64: "f64", D.float16: "f16", D.bfloat16: "bf16",
                 D.int32: "i32", D.int64: "i64"}
_OPMATH = {D.float32: np.float32, D.float64: np.float64, D.float16: np.float32,
           D.bfloat16: np.float32, D.int32: np.int32, D.int64: np.int64}
_BINARY_OPS = frozenset(("add", "sub", "mul", "div"))
_BINARY_BLOCK = 256
_sm_counts = {}


def binary_kernel_name(op, dt):
    return f"binary_{op}_{BINARY_SUFFIX[dt]}"


def _binary_scalar(x, dt):
    """(pointer, value) of operand ``x`` as the scalar of a binary kernel: a 1-element CUDA tensor
    of ``dt`` by address, a number or 0-dim CPU tensor by value (converted to ``dt`` first, as
    ``_operand`` converts it, then to the opmath type); None when it is neither."""
    if not _is_tensor(x):
        return np.uint64(0), np.asarray(x).astype(dt._np).astype(_OPMATH[dt])[()]
    if x.numel() != 1:
        return None
    if x._device.type == "cpu":
        return np.uint64(0), x._nd().astype(dt._np).astype(_OPMATH[dt])[()]
    if x._dtype is not dt:
        return None
    return pointer(x), _OPMATH[dt](0)


def _binary_launch(name, operands, alpha, dst, cdt):
    """Launch csrc/binary.cu's kernel for this call and return True, or return False where its
    conditions do not hold: add/sub/mul/div, result, computation and operand dtypes one of
    BINARY_SUFFIX's, a contiguous result, each operand either a contiguous tensor of the result's
    shape or a scalar (not both), every array 16-byte aligned (for the packs)."""
    if name not in _BINARY_OPS or cdt not in BINARY_SUFFIX or dst._dtype is not cdt or \
            not dst.is_contiguous() or not dst.numel():
        return False
    args, scalar, pos = [], None, 0
    for i, x in enumerate(operands):
        if _is_tensor(x) and x._size == dst._size and x._device.type == "cuda":
            if x._dtype is not cdt or not x.is_contiguous():
                return False
            args.append(pointer(x))
            continue
        s = None if pos else _binary_scalar(x, cdt)
        if s is None:
            return False
        ptr, scalar = s
        args.append(ptr)
        pos = i + 1
    out = pointer(dst)
    if any(int(p) % 16 for p in args + [out] if p):
        return False
    opmath = _OPMATH[cdt]
    alpha_arg = (opmath(1) if alpha is None or (alpha.__class__ is int and alpha == 1)
                 else np.asarray(alpha).astype(opmath)[()])
    n = dst.numel()
    idx = dst._device.index or 0
    sms = _sm_counts.get(idx)
    if sms is None:
        import cupy
        sms = _sm_counts[idx] = cupy.cuda.runtime.getDeviceProperties(idx)["multiProcessorCount"]
    packs = n // (16 // cdt.itemsize)
    # a grid-stride loop: enough blocks to fill every SM several times over, at least one
    # (the tail alone)
    grid = max(1, min(math.ceil(packs / _BINARY_BLOCK), sms * 32))
    _kernel("binary.cu", binary_kernel_name(name, cdt))(
        (grid,), (_BINARY_BLOCK,),
        (*args, out, np.int64(n), alpha_arg, opmath(scalar if pos else 0), np.int32(pos)))
    return True


def evaluate(name, operands, alpha=None, params=(), into=None):
    """Row ``name`` on ``operands``: a new CUDA tensor, or written into ``into`` (in-place)."""
    n = len(operands)
    rule, check = _R.RULES[n][name]
    if into is not None:
        _overlap.check_write(into, operands)
    cdt, rdt = result_dtype(rule, operands)
    check_operands(name, operands, check, cdt, rdt, into)
    tensors = [x for x in operands if _is_tensor(x)]
    if cdt in HOST_DTYPES or rdt in HOST_DTYPES:
        raise NeedsHost("float8/complex32 computation")
    for x in tensors:
        if x._dtype in HOST_DTYPES:
            raise NeedsHost("float8/complex32 computation")
    if alpha is not None:
        check_alpha(cdt, alpha)
    dev = device_of(*tensors)
    if into is not None:
        dst = into
    else:
        shape = _result_shape(tensors)
        dst = empty_tensor(shape, rdt, dev, stride=_result_layout(shape, tensors))

    def body(xp, rt):
        if not rt.simulated and _binary_launch(name, operands, alpha, dst, cdt):
            return dst
        arrays = [_operand(x, cdt, xp, rt) for x in operands]
        if alpha is not None and not (alpha == 1 and alpha.__class__ is int):
            arrays[-1] = arrays[-1] * np.asarray(alpha).astype(cdt._np)[()]
        uf, in_float, row = _row_function(name, n, xp)
        out = device_array(dst, rt)
        own = _device_row(name, cdt)
        if own is not None:
            xp.copyto(out, own(xp, *arrays), casting="unsafe")
        elif uf is None:
            xp.copyto(out, xp.asarray(row(*arrays, cdt, *params)), casting="unsafe")
        elif in_float and cdt in _HALF:
            xp.copyto(out, uf(*[a.astype(np.float32) for a in arrays]), casting="unsafe")
        else:
            uf(*arrays, out=out, casting="unsafe")
        return dst
    return launch(dev, body)


# ---------------------------------------------------------------------------------------------
# Calling forms -> kernels (the CPU's hand-written overloads take the same arguments).

def _unary(name):
    return lambda self: evaluate(name, (self,))


def _binary(name):
    return lambda self, other: evaluate(name, (self, other))


def _ternary(name):
    return lambda self, a, b: evaluate(name, (self, a, b))


def _inplace_unary(name):
    return lambda self: evaluate(name, (self,), into=self)


def _inplace_binary(name):
    return lambda self, other: evaluate(name, (self, other), into=self)


def _inplace_ternary(name):
    return lambda self, a, b: evaluate(name, (self, a, b), into=self)


def _alpha(name):
    return lambda self, other, alpha=1: evaluate(name, (self, other), alpha=alpha)


def _ralpha(name):
    return lambda self, other, alpha=1: evaluate(name, (other, self), alpha=alpha)


def _inplace_alpha(name):
    return lambda self, other, alpha=1: evaluate(name, (self, other), alpha=alpha, into=self)


def _mode(name):
    def kernel(self, other, rounding_mode=None):
        check_rounding_mode(rounding_mode)
        return evaluate(_DIV_MODES[rounding_mode], (self, other))
    return kernel


def _inplace_mode(name):
    def kernel(self, other, rounding_mode=None):
        check_rounding_mode(rounding_mode)
        return evaluate(_DIV_MODES[rounding_mode], (self, other), into=self)
    return kernel


def _ternary_value(name):
    return lambda self, t1, t2, value=1: evaluate(name, (self, t1, t2), params=(value,))


def _inplace_ternary_value(name):
    return lambda self, t1, t2, value=1: evaluate(name, (self, t1, t2), params=(value,),
                                                  into=self)


_FORMS = {
    _R.UNARY: _unary, _R.BINARY: _binary, _R.TERNARY: _ternary,
    _R.INPLACE_UNARY: _inplace_unary, _R.INPLACE_BINARY: _inplace_binary,
    _R.INPLACE_TERNARY: _inplace_ternary,
    _R.ALPHA: _alpha, _R.RALPHA: _ralpha, _R.INPLACE_ALPHA: _inplace_alpha,
    _R.MODE: _mode, _R.INPLACE_MODE: _inplace_mode,
    _R.TERNARY_VALUE: _ternary_value, _R.INPLACE_TERNARY_VALUE: _inplace_ternary_value,
}


def clamp(self, min=None, max=None):  # noqa: A002  (schema names)
    name, operands = clamp_operands("clamp", self, min, max)
    return evaluate(name, operands)


def clamp_(self, min=None, max=None):  # noqa: A002
    name, operands = clamp_operands("clamp", self, min, max)
    return evaluate(name, operands, into=self)


def where_self(condition, self, other):
    _R.check_where_condition(condition)
    from ..._core.promotion import result_type_of
    dt = result_type_of((self, other))
    if dt in HOST_DTYPES:
        raise NeedsHost("float8/complex32 computation")
    operands = (condition, self, other)
    tensors = [x for x in operands if _is_tensor(x)]
    shape = _result_shape(tensors)
    dev = device_of(*tensors)
    dst = empty_tensor(shape, dt, dev, stride=_result_layout(
        shape, [x for x in (self, other) if _is_tensor(x)]))

    def body(xp, rt):
        c = device_array(condition, rt)
        xp.copyto(device_array(dst, rt), xp.where(c, _operand(self, dt, xp, rt),
                                                  _operand(other, dt, xp, rt)),
                  casting="unsafe")
        return dst
    return launch(dev, body)


def _foreach_mul_(self, other):
    """``_foreach_mul_`` by a number or a (0-dim) tensor: each tensor scaled in place, one
    kernel each — foreach.py's way for the lists its one launch does not take."""
    for t in self:
        evaluate("mul", (t, other), into=t)


def kernels():
    """op overload -> CUDA kernel, for every overload this module computes."""
    table = {op: _FORMS[form](row) for op, (row, form) in _R.OVERLOADS.items()
             if form in _FORMS}
    table.update({"clamp": clamp, "clamp.Tensor": clamp, "clamp_": clamp_,
                  "clamp_.Tensor": clamp_, "where.self": where_self})
    return table
