"""Pointwise ops PyTorch defines by decomposition, written in ember ops (every call goes through
the dispatcher), and the complex views.

* CompositeImplicitAutograd: ``square`` (pow), ``clip`` (clamp), ``isfinite``, ``isclose``,
  ``float_power`` (pow in double), ``real``/``imag`` (views of ``view_as_real``), ``conj``,
  ``conj_physical``, ``resolve_conj``, ``is_conj``;
* CompositeExplicitAutograd: ``allclose`` and the views ``view_as_real``/``view_as_complex``,
  which reinterpret a complex element as two real ones (sizes, strides and offset doubled or
  halved; the storage and version counter are shared).

``conj`` of a dense complex tensor is PyTorch's lazy view ``_conj`` (the conjugate bit, resolved
by the Conjugate key's kernels, ``ember/_kernels/math_bits.py``); ``conj_physical`` computes.
The imaginary part of a conjugate view is a view of its memory with the negative bit set.
"""
import math

from ..._core import dtype as D
from ..._core import overlap as _overlap
from ..._core.tensor_impl import CONJUGATE, _alias
from ..._dispatch.keys import SPARSE_BITS, SPARSE_CSR_BITS
from ..._ops.overload import ops
from ..generic import copy_into


_aten = ops.aten


# ---- aliases and simple decompositions -----------------------------------------------------------

def square(self):
    return _aten.pow.Tensor_Scalar._call(self, 2)


def square_(self):
    return _aten.pow_.Scalar._call(self, 2)


def clip(self, min=None, max=None):  # noqa: A002  (schema names)
    return _aten.clamp.default._call(self, min, max)


def clip_(self, min=None, max=None):  # noqa: A002
    return _aten.clamp_.default._call(self, min, max)


def clip_Tensor(self, min=None, max=None):  # noqa: A002
    return _aten.clamp.Tensor._call(self, min, max)


def clip__Tensor(self, min=None, max=None):  # noqa: A002
    return _aten.clamp_.Tensor._call(self, min, max)


def isfinite(self):
    if self._dtype._category <= D.INTEGRAL:  # integers are always finite
        return _aten.ones_like.default._call(self, D.bool_, None, None, None, None)
    if self._dtype.is_complex:
        return _aten.bitwise_and.Tensor._call(isfinite(real(self)), isfinite(imag(self)))
    if self._dtype in D.FLOAT8:  # ATen's isfinite dispatches on floating types, half, bfloat16
        raise NotImplementedError(f"\"isfinite\" not implemented for '{self._dtype._short}'")
    not_nan = _aten.eq.Tensor._call(self, self)
    not_inf = _aten.ne.Scalar._call(_aten.abs.default._call(self), math.inf)
    return _aten.bitwise_and.Tensor._call(not_nan, not_inf)


def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|self - other| <= atol + rtol * |other|, or exactly equal (infinities), as PyTorch."""
    if self._dtype is not other._dtype:
        raise RuntimeError(f"{self._dtype._short} did not match {other._dtype._short}")
    if self._dtype.is_complex and equal_nan:
        raise RuntimeError("isclose with equal_nan=True is not supported for complex inputs.")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    close = _aten.eq.Tensor._call(self, other)
    inexact = self._dtype._category >= D.FLOATING
    if equal_nan and inexact:
        both_nan = _aten.bitwise_and.Tensor._call(_aten.isnan.default._call(self),
                                                  _aten.isnan.default._call(other))
        close = _aten.bitwise_or.Tensor._call(close, both_nan)
    if (rtol == 0 and atol == 0) or not inexact:
        return close
    allowed = _aten.add.Scalar._call(
        _aten.abs.default._call(_aten.mul.Scalar._call(other, rtol)), atol, 1)
    actual = _aten.abs.default._call(_aten.sub.Tensor._call(self, other, 1))
    within = _aten.bitwise_and.Tensor._call(isfinite(actual),
                                            _aten.le.Tensor._call(actual, allowed))
    return _aten.bitwise_or.Tensor._call(close, within)


def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(_aten.all.default._call(isclose(self, other, rtol, atol, equal_nan)).item())


# ---- float_power: pow computed in double (complex double when an operand is complex) -----------

def _is_complex(x):
    return x._dtype.is_complex if hasattr(x, "_keyset") else isinstance(x, complex)


def _double(*operands):
    return D.complex128 if any(_is_complex(x) for x in operands) else D.float64


def _to(t, dtype):
    if t._dtype is dtype:
        return t
    return _aten._to_copy.default._call(t, dtype, None, None, None, False, None)


def _number(x, dtype):
    return complex(x) if dtype.is_complex else float(x)


def float_power_Tensor_Tensor(self, exponent):
    if not hasattr(exponent, "_keyset"):  # a wrapped number (torch.float_power(t, 2.5))
        return float_power_Tensor_Scalar(self, exponent)
    dt = _double(self, exponent)
    return _aten.pow.Tensor_Tensor._call(_to(self, dt), _to(exponent, dt))


def float_power_Tensor_Scalar(self, exponent):
    dt = _double(self, exponent)
    return _aten.pow.Tensor_Scalar._call(_to(self, dt), _number(exponent, dt))


def float_power_Scalar(self, exponent):
    dt = _double(self, exponent)
    return _aten.pow.Scalar._call(_number(self, dt), _to(exponent, dt))


def _check_float_power_(self, dt):
    if self._dtype is not dt:
        raise RuntimeError(f"the base given to float_power_ has dtype {self._dtype._short} but "
                           f"the operation's result requires dtype {dt._short}")


def float_power__Tensor(self, exponent):
    if not hasattr(exponent, "_keyset"):
        return float_power__Scalar(self, exponent)
    dt = _double(self, exponent)
    _check_float_power_(self, dt)
    return _aten.pow_.Tensor._call(self, _to(exponent, dt))


def float_power__Scalar(self, exponent):
    dt = _double(self, exponent)
    _check_float_power_(self, dt)
    return _aten.pow_.Scalar._call(self, _number(exponent, dt))


# ---- complex views -----------------------------------------------------------------------------

def view_as_real(self):
    if self._keyset & CONJUGATE:
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To "
                           "resolve the conjugate tensor so you can view it as real, use "
                           "self.resolve_conj(); however, be warned that the resulting tensor "
                           "will NOT alias the original.")
    if not self._dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    size = tuple(self._size) + (2,)
    stride = tuple(2 * s for s in self._stride) + (1,)
    return _alias(self, size, stride, 2 * self._offset, self._dtype.to_real())


_VIEW_AS_COMPLEX = {D.float16: D.complex32, D.float32: D.complex64, D.float64: D.complex128}


def view_as_complex(self):
    dt = self._dtype
    if dt not in _VIEW_AS_COMPLEX:
        raise RuntimeError(f"view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {dt._short}")
    if not self._size:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if self._size[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if self._stride[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in self._stride[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if self._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return _alias(self, tuple(self._size[:-1]), tuple(s // 2 for s in self._stride[:-1]),
                  self._offset // 2, _VIEW_AS_COMPLEX[dt])


def real(self):
    if not self._dtype.is_complex:
        return self
    if self._keyset & CONJUGATE:  # conjugation leaves the real parts alone
        self = _aten._conj.default._call(self)
    return _aten.select.int._call(_aten.view_as_real.default._call(self), -1, 0)


def imag(self):
    if not self._dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    if self._keyset & CONJUGATE:  # the memory holds the negated imaginary parts
        pairs = _aten._neg_view.default._call(
            _aten.view_as_real.default._call(_aten._conj.default._call(self)))
    else:
        pairs = _aten.view_as_real.default._call(self)
    return _aten.select.int._call(pairs, -1, 1)


# ---- conjugation ---------------------------------------------------------------------------------

def conj_physical(self):
    if not self._dtype.is_complex:
        return self
    return _aten._conj_physical.default._call(self)


def conj(self):
    if not self._dtype.is_complex:
        return self
    if self._keyset & (SPARSE_BITS | SPARSE_CSR_BITS):  # (no bit on a sparse tensor's parts)
        return _aten.conj_physical.default._call(self)
    return _aten._conj.default._call(self)


def conj_physical_(self):
    if not self._dtype.is_complex:
        return self
    _overlap.assert_no_internal_overlap(self)  # (TensorIterator's check on the written self)
    # (the backend copy: this op's own ADInplaceOrView kernel has bumped the version once)
    copy_into(self, _aten._conj_physical.default._call(self))
    return self


def resolve_conj(self):
    if not self._keyset & CONJUGATE:
        return self
    return _aten.clone.default._call(self, None)  # (clone writes the values: copy_ resolves)


def is_conj(self):
    return bool(self._keyset & CONJUGATE)
