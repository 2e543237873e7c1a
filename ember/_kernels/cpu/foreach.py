"""CPU kernels of the multi-tensor ("foreach") ops the optimizers use (PyTorch's ForeachOps).

One dispatcher call updates a whole list of tensors: the kernel loops over the list and calls
NumPy on each tensor's array, in place (``out=``). That fast path serves lists whose tensors are
all float32 or all float64 with matching shapes across the lists; anything else (other dtypes,
mixed dtypes, broadcasting) takes PyTorch's "slow path": the single-tensor op per element, through
the dispatcher, so dtype rules and error messages are exactly the single op's.
"""
import numpy as np

from ..._core import dtype as D
from ..._dispatch.tls import ExcludeDispatchKeyGuard
from . import generated as _generated
from ._util import array_module, nd
from .pointwise_values import add_alpha_values
from ..._ops.overload import ops
from ..rules.foreach import _check_lengths, check_scalar_list, check_scalar_tensor

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load


_FAST_DTYPES = (D.float32, D.float64)


def _slow_path(tensors):
    """The single-tensor in-place ops of a slow path run below ADInplaceOrView: the foreach op
    already bumped each tensor's version once, as in PyTorch. On device arrays (the CUDA key
    runs these bodies on a GPU, ``cuda/shared.py``) the slow path is refused before anything is
    written: a single op failing half-way through the list would leave it half updated when the
    CUDA key then runs the call through the host."""
    if array_module(nd(tensors[0])) is not np:
        raise TypeError("a foreach slow path on device arrays")
    return ExcludeDispatchKeyGuard("ADInplaceOrView")


def _empty(a):
    # A fresh result/temporary array, on a's device: NumPy returns a scalar, not an array, for
    # 0-dim operands unless given one.
    return array_module(a).empty(a.shape, a.dtype)


def _fast(*lists):
    """True when every tensor shares the first one's float32/float64 dtype and its list
    neighbours have the same shape (no broadcasting, no promotion)."""
    dt = lists[0][0]._dtype
    if dt not in _FAST_DTYPES:
        return False
    for group in zip(*lists):
        size = group[0]._size
        for t in group:
            if t._dtype is not dt or t._size != size:
                return False
    return True


def _foreach_add__Scalar(self, scalar):
    _check_lengths(self)
    if not _fast(self):
        with _slow_path(self):
            for t in self:
                _aten.add_.Tensor._call(t, scalar, 1)
        return None
    for t in self:
        a = nd(t)
        np.add(a, a.dtype.type(scalar), out=a)
    return None


def _foreach_add__List(self, other, alpha=1):
    _check_lengths(self, other)
    if not _fast(self, other):
        with _slow_path(self):
            for t, o in zip(self, other):
                _aten.add_.Tensor._call(t, o, alpha)
        return None
    one = alpha == 1 and alpha.__class__ is int
    scale = None if one else np.full(1, alpha, self[0]._dtype._np)  # (one dtype: _fast)
    for t, o in zip(self, other):
        a, b = nd(t), nd(o)
        if a.__class__ is np.ndarray and a.size >= _generated.MIN_NUMEL and (
                _generated.pointwise_into("add", a, [a, b]) if one else
                _generated.pointwise_into("add_alpha", a, [a, b, scale])):
            continue  # one pass on the threads, alpha fused (as ATen's fmadd)
        if one:
            np.add(a, b, out=a)
        elif a.dtype.char in "fd":  # ATen's fused multiply-add
            np.copyto(a, add_alpha_values(a, b, alpha))
        else:
            np.add(a, np.multiply(b, a.dtype.type(alpha)), out=a)  # alpha in the result dtype
    return None


def _foreach_mul__Scalar(self, scalar):
    _check_lengths(self)
    if not _fast(self):
        with _slow_path(self):
            for t in self:
                _aten.mul_.Tensor._call(t, scalar)
        return None
    factor = np.full(1, scalar, self[0]._dtype._np)
    for t in self:
        a = nd(t)
        if a.__class__ is np.ndarray and a.size >= _generated.MIN_NUMEL and \
                _generated.pointwise_into("mul", a, [a, factor]):
            continue
        np.multiply(a, a.dtype.type(scalar), out=a)
    return None


def _foreach_mul__Tensor(self, other):
    _check_lengths(self)
    check_scalar_tensor(other)
    if not (_fast(self) and other._dtype.is_floating_point):
        with _slow_path(self):
            for t in self:
                _aten.mul_.Tensor._call(t, other)
        return None
    # mul_'s rule for a 0-dim operand: converted to the (float) result dtype, then multiplied
    scalar = self[0]._dtype._np.type(nd(other)[()])
    for t in self:
        a = nd(t)
        np.multiply(a, scalar, out=a)
    return None


def _foreach_mul__List(self, other):
    _check_lengths(self, other)
    if not _fast(self, other):
        with _slow_path(self):
            for t, o in zip(self, other):
                _aten.mul_.Tensor._call(t, o)
        return None
    for t, o in zip(self, other):
        a = nd(t)
        np.multiply(a, nd(o), out=a)
    return None


def _foreach_div__ScalarList(self, scalars):
    _check_lengths(self)
    check_scalar_list(self, scalars)
    if not _fast(self):
        with _slow_path(self):
            for t, s in zip(self, scalars):
                _aten.div_.Tensor._call(t, s)
        return None
    for t, s in zip(self, scalars):
        a = nd(t)
        np.true_divide(a, a.dtype.type(s), out=a)
    return None


def _foreach_lerp__Scalar(self, tensors1, weight):
    _check_lengths(self, tensors1)
    if not _fast(self, tensors1):
        with _slow_path(self):
            for t, e in zip(self, tensors1):
                _aten.lerp_.Scalar._call(t, e, weight)
        return None
    for t, e in zip(self, tensors1):
        start, end = nd(t), nd(e)
        w = start.dtype.type(weight)
        diff = np.subtract(end, start, out=_empty(start))
        # PyTorch's two-sided formula (exact at weight 0 and 1), as lerp's single-tensor kernel
        if abs(weight) < 0.5:
            np.multiply(diff, w, out=diff)
            np.add(start, diff, out=start)
        else:
            np.multiply(diff, start.dtype.type(1 - w), out=diff)
            np.subtract(end, diff, out=start)
    return None


def _foreach_addcmul__Scalar(self, tensor1, tensor2, value=1):
    _check_lengths(self, tensor1, tensor2)
    if not _fast(self, tensor1, tensor2):
        with _slow_path(self):
            for t, a, b in zip(self, tensor1, tensor2):
                _aten.addcmul_.default._call(t, a, b, value)
        return None
    for t, a, b in zip(self, tensor1, tensor2):
        x = nd(t)
        prod = np.multiply(nd(a), nd(b), out=_empty(x))
        np.multiply(prod, x.dtype.type(value), out=prod)
        np.add(x, prod, out=x)
    return None


def _foreach_addcdiv__ScalarList(self, tensor1, tensor2, scalars):
    _check_lengths(self, tensor1, tensor2)
    check_scalar_list(self, scalars)
    if not _fast(self, tensor1, tensor2):
        with _slow_path(self):
            for t, a, b, s in zip(self, tensor1, tensor2, scalars):
                _aten.addcdiv_.default._call(t, a, b, s)
        return None
    for t, a, b, s in zip(self, tensor1, tensor2, scalars):
        x = nd(t)
        quot = np.true_divide(nd(a), nd(b), out=_empty(x))
        np.multiply(quot, x.dtype.type(s), out=quot)
        np.add(x, quot, out=x)
    return None


def _foreach_maximum__List(self, other):
    _check_lengths(self, other)
    if not _fast(self, other):
        with _slow_path(self):
            for t, o in zip(self, other):
                _aten.copy_.default._call(t, _aten.maximum.default._call(t, o), False)
        return None
    for t, o in zip(self, other):
        a = nd(t)
        np.maximum(a, nd(o), out=a)
    return None


def _clamp_bound_(self, scalar, single_op, ufunc):
    _check_lengths(self)
    if not _fast(self) or isinstance(scalar, complex):
        with _slow_path(self):
            for t in self:
                single_op._call(t, scalar)
        return None
    for t in self:
        a = nd(t)
        ufunc(a, a.dtype.type(scalar), out=a)  # NaN propagates, as in clamp
    return None


def _foreach_clamp_min__Scalar(self, scalar):
    return _clamp_bound_(self, scalar, _aten.clamp_min_.default, np.maximum)


def _foreach_clamp_max__Scalar(self, scalar):
    return _clamp_bound_(self, scalar, _aten.clamp_max_.default, np.minimum)
