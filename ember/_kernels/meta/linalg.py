"""Meta kernels of the matrix products: the CPU kernels' checks, then shape and dtype."""
from ..._core.device import META
from ..._tensor import empty_tensor
from ..cpu import linalg as _la


def meta_mm(self, mat2):
    return empty_tensor(_la.check_mm(self, mat2), self._dtype, META)


def meta_bmm(self, mat2):
    return empty_tensor(_la.check_bmm(self, mat2), self._dtype, META)


def meta_mv(self, vec):
    return empty_tensor(_la.check_mv(self, vec), self._dtype, META)


def meta_dot(self, tensor):
    return empty_tensor(_la.check_dot(self, tensor), self._dtype, META)


def meta_addmm(self, mat1, mat2, beta=1, alpha=1):
    return empty_tensor(_la.check_addmm(self, mat1, mat2), mat1._dtype, META)


__all__ = ["meta_mm", "meta_bmm", "meta_mv", "meta_dot", "meta_addmm"]
