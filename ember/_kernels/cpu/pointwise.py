"""CPU pointwise kernels."""
import numpy as np

from ..._core.promotion import result_type_of
from ._util import nd, wrap

__all__ = ["add_Tensor", "add__Tensor"]


def binary_dtype(a, b):
    """PyTorch's result dtype for two operands, with the common same-dtype case first."""
    bd = getattr(b, "_dtype", None)
    if bd is a._dtype:
        return bd
    if bd is None and a._size and a._dtype.is_floating_point and b.__class__ in (int, float):
        return a._dtype
    return result_type_of((a, b))


def add_Tensor(self, other, alpha=1):
    dt = binary_dtype(self, other)
    b = nd(other)
    if alpha != 1:
        b = np.multiply(b, alpha, dtype=dt._np)
    return wrap(np.add(nd(self), b, dtype=dt._np))


def add__Tensor(self, other, alpha=1):
    a = nd(self)
    b = nd(other)
    if alpha != 1:
        b = np.multiply(b, alpha)
    np.add(a, b, out=a, casting="unsafe")
    return self
