"""Meta kernels of cpu/pointwise_more.py: the same rows and checks, no data."""
from ..._core import dtype as D
from ..._core.device import META
from ..._tensor import empty_tensor
from ..cpu import pointwise_more as _pm
from .pointwise import _meta, _meta_into, _shape


def _make(op, inplace):
    if inplace:
        def k(self, other):
            return _meta_into(op, self, self, other)
    else:
        def k(self, other):
            return _meta(op, self, other)
    return k


def meta_frexp_Tensor(self):
    _pm.check_frexp(self)
    return (empty_tensor(self._size, self._dtype, META),
            empty_tensor(self._size, D.int32, META))


def meta_complex(real, imag):
    dt = _pm.check_complex(real, imag)
    return empty_tensor(_shape(real, imag), dt, META)


_GENERATED = {}
for _op in _pm.BINARY:
    _GENERATED["meta_" + _op] = _make(_op, False)
    _GENERATED[f"meta_{_op}_"] = _make(_op, True)
globals().update(_GENERATED)
__all__ = ["meta_frexp_Tensor", "meta_complex", *_GENERATED]
