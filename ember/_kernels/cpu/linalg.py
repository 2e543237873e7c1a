"""CPU matrix products (mm, bmm, addmm, mv, dot) on ``numpy.matmul``. The argument checks, with
PyTorch's messages, are shared with the Meta kernels; ``matmul`` is a composite of these ops
(``composite/math.py``)."""
import numpy as np

from ..._core import dtype as D
from ._util import nd, wrap

# C++ type names PyTorch prints in mm's dtype-mismatch message
_C_NAMES = {"Bool": "bool", "Byte": "unsigned char", "Char": "signed char", "Short": "short int",
            "Int": "int", "Long": "long int", "Half": "c10::Half", "BFloat16": "c10::BFloat16",
            "Float": "float", "Double": "double", "ComplexFloat": "c10::complex<float>",
            "ComplexDouble": "c10::complex<double>"}


def _x(shape):
    return "x".join(map(str, shape))


def _no_bool(dt):
    if dt is D.bool_:
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")


def check_mm(self, mat2, first="self"):
    """mm's checks; returns the result shape."""
    if len(self._size) != 2:
        raise RuntimeError(f"{first} must be a matrix")
    if len(mat2._size) != 2:
        raise RuntimeError("mat2 must be a matrix")
    if self._size[1] != mat2._size[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_x(self._size)} and "
                           f"{_x(mat2._size)})")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_C_NAMES[self._dtype._short]} != {_C_NAMES[mat2._dtype._short]}")
    _no_bool(self._dtype)
    return (self._size[0], mat2._size[1])


def check_bmm(self, mat2):
    if len(self._size) != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if len(mat2._size) != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, n, m = self._size
    if (mat2._size[0], mat2._size[1]) != (b, m):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b}, {m}] but got: [{mat2._size[0]}, {mat2._size[1]}].")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"expected scalar type {self._dtype._short} but found "
                           f"{mat2._dtype._short}")
    _no_bool(self._dtype)
    return (b, n, mat2._size[2])


def check_addmm(self, mat1, mat2):
    shape = check_mm(mat1, mat2, "mat1")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {self._dtype._short} "
                           f"and {mat2._dtype._short}")
    _check_expandable(self._size, shape)
    return shape


def _check_expandable(size, target):
    """``self`` of addmm broadcasts to the product's shape (PyTorch's expand error)."""
    if len(size) > len(target):
        raise RuntimeError(f"The expanded size of the tensor ({target[-1]}) must match the "
                           f"existing size ({size[-1]}) at non-singleton dimension 1.")
    off = len(target) - len(size)
    for i, s in enumerate(size):
        if s != 1 and s != target[off + i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[off + i]}) must match "
                               f"the existing size ({s}) at non-singleton dimension {off + i}.  "
                               f"Target sizes: [{', '.join(map(str, target))}].  Tensor sizes: "
                               f"[{', '.join(map(str, size))}]")


def check_mv(self, vec):
    if len(self._size) != 2 or len(vec._size) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {len(self._size)}, "
                           f"{len(vec._size)}")
    if self._size[1] != vec._size[0]:
        raise RuntimeError(f"size mismatch, got input ({self._size[0]}), mat ({_x(self._size)}), "
                           f"vec ({vec._size[0]})")
    if self._dtype is not vec._dtype:
        v, m = vec._dtype._short, self._dtype._short
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {v}, {m}, "
                           f"and {v}")
    _no_bool(self._dtype)
    return (self._size[0],)


def check_dot(self, tensor):
    if len(self._size) != 1 or len(tensor._size) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(self._size)}D and "
                           f"{len(tensor._size)}D tensors")
    n, m = self._size[0], tensor._size[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have "
                           f"the same number of elements, but got {n} and {m} elements "
                           f"respectively")
    if self._dtype is not tensor._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{self._dtype._short} and {tensor._dtype._short}")
    _no_bool(self._dtype)
    return ()


def _product(a, b, dt):
    # NumPy returns float32 for bfloat16 products; PyTorch keeps the operand dtype
    return wrap(np.asarray(np.matmul(a, b)).astype(dt._np, copy=False))


def mm(self, mat2):
    check_mm(self, mat2)
    return _product(nd(self), nd(mat2), self._dtype)


def bmm(self, mat2):
    check_bmm(self, mat2)
    return _product(nd(self), nd(mat2), self._dtype)


def mv(self, vec):
    check_mv(self, vec)
    return _product(nd(self), nd(vec), self._dtype)


def dot(self, tensor):
    check_dot(self, tensor)
    return _product(nd(self), nd(tensor), self._dtype)


def addmm(self, mat1, mat2, beta=1, alpha=1):
    shape = check_addmm(self, mat1, mat2)
    dt = mat1._dtype
    r = np.matmul(nd(mat1), nd(mat2))
    if alpha != 1:
        r = r * alpha
    if beta != 0:  # beta == 0 ignores self entirely (NaN/inf in self do not propagate)
        r = r + (nd(self) if beta == 1 else nd(self) * beta)
    r = np.broadcast_to(np.asarray(r), shape).astype(dt._np)
    return wrap(r)


__all__ = ["mm", "bmm", "mv", "dot", "addmm"]
