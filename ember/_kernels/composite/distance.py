"""Distances (``cdist``, ``pdist``, ``cosine_similarity``, ``pairwise_distance``, ``kl_div``,
``dist``): aten composites written in ember ops, which ``nn.functional``'s distance functions
call, as in PyTorch."""
import math as _math

from ..._core import dtype as D
from ..._ops.overload import ops
from .predicates import broadcast_tensors

_aten = ops.aten


_CDIST_MODE_NAMES = {None: "use_mm_for_euclid_dist_if_necessary", 1: "use_mm_for_euclid_dist",
                     2: "donot_use_mm_for_euclid_dist"}


def p_norm(x, p, dim, keepdim=False):
    """The vector p-norm over ``dim`` (an int or ints), in ops whose gradients PyTorch's distance
    kernels give (p=2 as the square root of a sum of squares; p=0 a count, with its zero
    gradient)."""
    a = _aten
    dim = [dim] if isinstance(dim, int) else list(dim)
    if p == 2:
        return a.sqrt.default._call(a.sum.dim_IntList._call(a.mul.Tensor._call(x, x), dim,
                                                            keepdim, None))
    ab = a.abs.default._call(x)
    if p == _math.inf:
        return a.amax.default._call(ab, dim, keepdim)
    if p == 1:
        return a.sum.dim_IntList._call(ab, dim, keepdim, None)
    if p == 0:
        return a.linalg_vector_norm.default._call(x, 0, dim, keepdim, None)
    return a.pow.Tensor_Scalar._call(
        a.sum.dim_IntList._call(a.pow.Tensor_Scalar._call(ab, p), dim, keepdim, None), 1.0 / p)


def _cdist_checks(x1, x2):
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x1.size(-1) != x2.size(-1):
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.size(-1)} "
                           f"X2: {x2.size(-1)}")


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Distances between the rows of x1 and x2 (batched); p=2 through one matmul,
    ||a||^2 + ||b||^2 - 2 a.b, as PyTorch's mm path does."""
    if compute_mode not in _CDIST_MODE_NAMES:
        raise RuntimeError(f"{compute_mode} is not a valid value for compute_mode")
    _cdist_checks(x1, x2)
    a = _aten
    if p == 2 and compute_mode != 2:
        n1 = a.sum.dim_IntList._call(a.mul.Tensor._call(x1, x1), [-1], True, None)
        n2 = a.sum.dim_IntList._call(a.mul.Tensor._call(x2, x2), [-1], True, None)
        cross = a.matmul.default._call(x1, a.transpose.int._call(x2, -1, -2))
        d2 = a.add.Tensor._call(a.sub.Tensor._call(n1, cross, 2),
                                a.transpose.int._call(n2, -1, -2), 1)
        zero = a.zeros.default._call([], d2._dtype, None, d2._device, None)
        return a.sqrt.default._call(a.maximum.default._call(d2, zero))
    diff = a.sub.Tensor._call(a.unsqueeze.default._call(x1, -2),
                              a.unsqueeze.default._call(x2, -3), 1)
    return p_norm(diff, p, -1)


def pdist(self, p=2.0):
    if self.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {self.dim()}D")
    a = _aten
    n = self.size(0)
    ij = a.triu_indices.default._call(n, n, 1, D.int64, None, self._device, None)
    rows = a.index.Tensor._call(self, [a.select.int._call(ij, 0, 0)])
    cols = a.index.Tensor._call(self, [a.select.int._call(ij, 0, 1)])
    return p_norm(a.sub.Tensor._call(rows, cols, 1), p, -1)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    x1, x2 = broadcast_tensors([x1, x2])  # ATen broadcasts before reducing over dim
    a = _aten
    epst = a.full.default._call([], eps, x1._dtype, None, x1._device, None)

    def norm(x):
        return a.maximum.default._call(p_norm(x, 2, dim, True), epst)
    return a.sum.dim_IntList._call(
        a.mul.Tensor._call(a.div.Tensor._call(x1, norm(x1)), a.div.Tensor._call(x2, norm(x2))),
        [dim], False, None)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    a = _aten
    d = a.add.Scalar._call(a.sub.Tensor._call(x1, x2, 1), eps, 1)
    return p_norm(d, p, -1, keepdim) if d.dim() else a.abs.default._call(d)


def kl_div(self, target, reduction=1, log_target=False):
    """aten::kl_div (Loss.cpp): pointwise target * (log target - input), reduced by the
    integer ``reduction`` (0 none, 1 mean, 2 sum)."""
    a = _aten
    if log_target:
        loss = a.mul.Tensor._call(a.exp.default._call(target),
                                  a.sub.Tensor._call(target, self, 1))
    else:
        loss = a.sub.Tensor._call(a.xlogy.Tensor._call(target, target),
                                  a.mul.Tensor._call(target, self), 1)
    if reduction == 1:
        return a.mean.default._call(loss, None)
    return a.sum.default._call(loss, None) if reduction == 2 else loss


def dist(self, other, p=2):
    return _aten.norm.Scalar._call(_aten.sub.Tensor._call(self, other, 1), p)
