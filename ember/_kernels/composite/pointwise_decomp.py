"""Pointwise decompositions (``isreal``, ``deg2rad``, ``rad2deg`` and their in-place forms,
``ldexp``, ``renorm``):
CompositeImplicitAutograd kernels written in ember ops."""
import math as _math

from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.promotion import can_cast, result_type_of
from ..._ops.overload import ops

_aten = ops.aten
_BOOL = D.bool_


def isreal(self):
    if not self.dtype.is_complex:
        return _aten.ones_like.default._call(self, _BOOL, None, None, None, None)
    return _aten.eq.Scalar._call(_aten.imag.default._call(self), 0)


def _deg_rad(factor):
    def functional(self):
        if self.dtype.is_complex:
            raise RuntimeError(f"{'deg2rad' if factor < 1 else 'rad2deg'} is not supported for "
                               f"complex tensors.")
        if not self.dtype.is_floating_point:  # integers and bool give the default float dtype
            self = _aten._to_copy.default._call(self, D.get_default_dtype(), None, None, None,
                                                False, None)
        return _aten.mul.Tensor._call(self, factor)
    return functional


def _deg_rad_(factor):
    def inplace(self):
        if self.dtype.is_complex:
            raise RuntimeError(f"{'deg2rad' if factor < 1 else 'rad2deg'} is not supported for "
                               f"complex tensors.")
        return _aten.mul_.Tensor._call(self, factor)
    return inplace


deg2rad = _deg_rad(_math.pi / 180.0)
rad2deg = _deg_rad(180.0 / _math.pi)
deg2rad_ = _deg_rad_(_math.pi / 180.0)
rad2deg_ = _deg_rad_(180.0 / _math.pi)


def ldexp_Tensor(self, other):
    return _aten.mul.Tensor._call(self, _aten.exp2.default._call(other))


def ldexp_(self, other):
    """mul_ by 2 ** other, with ldexp_out's message for a result self cannot hold (ATen's
    ldexp_ is ldexp_out into self)."""
    scale = _aten.exp2.default._call(other)
    if not can_cast(result_type_of((self, scale)), self._dtype):
        raise RuntimeError(f"ldexp can't be cast to the desired output type {self._dtype._short}")
    return _aten.mul_.Tensor._call(self, scale)


def ldexp_out(self, other, out):
    """mul_out's checks, with ldexp's message for a result out cannot hold."""
    from .. import generic
    generic._check_overlap((out,), (self, other))
    result = ldexp_Tensor(self, other)
    generic.write_checked("ldexp", (self, other), (result,), (out,))
    return out


def renorm(self, p, dim, maxnorm):
    """Each slice along ``dim`` scaled down to norm ``maxnorm`` where its p-norm exceeds it
    (factor maxnorm / (norm + 1e-7), as ATen's renorm)."""
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    ndim = self.dim()
    if ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {ndim} dimensions")
    dim = _st.wrap_dim(dim, ndim)
    reduce = [d for d in range(ndim) if d != dim]
    a = _aten
    norm = a.linalg_vector_norm.default._call(self, p, reduce, True, None)
    scale = a.div.Tensor._call(maxnorm, a.add.Tensor._call(norm, 1e-7, 1))
    factor = a.where.ScalarOther._call(a.gt.Scalar._call(norm, maxnorm), scale, 1.0)
    return a.mul.Tensor._call(self, a._to_copy.default._call(factor, self.dtype, None, None,
                                                             None, False, None))
