"""Distances (``cdist``, ``pdist``, ``cosine_similarity``, ``pairwise_distance``, ``kl_div``,
``dist``): aten composites written in ember ops, which ``nn.functional``'s distance functions
call, as in PyTorch. cdist and pdist dispatch, as ATen's do, to ops of their own
(``_cdist_forward``, ``_euclidean_dist``, ``_pdist_forward``; CompositeExplicitAutograd here)
whose backward ops give a zero distance the zero subgradient."""
import math as _math

from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.device import contiguous_format
from ..._ops.overload import ops
from ..rules.nn import check_cosine_similarity, check_kl_div
from .predicates import broadcast_tensors

_aten = ops.aten


def p_norm(x, p, dim, keepdim=False):
    """The vector p-norm over ``dim`` (an int or ints), in ops whose gradients PyTorch's distance
    kernels give (p=2 as the square root of a sum of squares; p=0 a count, with its zero
    gradient)."""
    a = _aten
    dim = [dim] if isinstance(dim, int) else list(dim)
    if x._dtype.is_complex:  # the norm of the moduli: a real result
        x = a.abs.default._call(x)
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
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.size(-1) != x2.size(-1):
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.size(-1)} "
                           f"X2: {x2.size(-1)}")


def _uses_mm(p, mode, r1, r2):
    """Whether p=2 distances go through one matrix product (``_euclidean_dist``): always in mode
    1, in the default mode 0 from 26 rows on (PyTorch's threshold)."""
    return p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25)))


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Distances between the rows of x1 and x2 (batched), as ATen's cdist: the matrix-product
    path composes ``_euclidean_dist`` (autograd records it and the view), every other case is
    ``_cdist_forward``, whose backward is ``_cdist_backward``."""
    _cdist_checks(x1, x2)
    if x1.numel() == 0 or x2.numel() == 0:
        return _aten._cdist_forward.default._call(x1, x2, p, compute_mode)
    mode = 0 if compute_mode is None else compute_mode
    if _uses_mm(p, mode, x1.size(-2), x2.size(-2)):
        return _cdist_impl(x1, x2, p, compute_mode, _aten.view.default)
    return _aten._cdist_forward.default._call(x1, x2, p, compute_mode)


def _cdist_impl(x1, x2, p, compute_mode, view):
    """The distances, shaped by ``view``: ``aten.view`` in cdist's own matrix-product path
    (ATen's result is a view there), ``_unsafe_view`` inside _cdist_forward (a fresh tensor)."""
    a = _aten
    for name, x in (("X1", x1), ("X2", x2)):
        if not x._dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{x._dtype._short}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    mode = 0 if compute_mode is None else compute_mode
    if not 0 <= mode <= 2:
        raise RuntimeError(f"possible modes: 0, 1, 2, but was: {mode}")
    (r1, c1), r2 = x1._size[-2:], x2._size[-2]
    batch = _st.broadcast_shapes(x1._size[:-2], x2._size[:-2])
    n = _st.numel(batch)
    out_shape = batch + (r1, r2)
    if r1 == 0 or r2 == 0 or n == 0:
        return a.empty.memory_format._call(out_shape, x1._dtype, None, x1._device, None, None)
    if c1 == 0:
        return a.zeros.default._call(out_shape, x1._dtype, None, x1._device, None)
    e1 = a.reshape.default._call(a.expand.default._call(x1, batch + (r1, c1), False),
                                 (n, r1, c1))
    e2 = a.reshape.default._call(a.expand.default._call(x2, batch + (r2, c1), False),
                                 (n, r2, c1))
    if _uses_mm(p, mode, r1, r2):
        d = (a._euclidean_dist.default._call(x1, x2) if n == 1
             else a._euclidean_dist.default._call(e1, e2))
        return view._call(d, out_shape)
    if x1._dtype not in (D.float32, D.float64):  # (ATen's distance loop: float, double)
        raise NotImplementedError(f"\"cdist\" not implemented for '{x1._dtype._short}'")
    if x2._dtype != x1._dtype:  # (ATen's distance loop reads both as x1's type)
        raise RuntimeError(f"expected scalar type {x1._dtype._short} but found "
                           f"{x2._dtype._short}")
    diff = a.sub.Tensor._call(a.unsqueeze.default._call(e1, -2),
                              a.unsqueeze.default._call(e2, -3), 1)
    return a._unsafe_view.default._call(p_norm(diff, p, -1), out_shape)


def _cdist_forward(x1, x2, p, compute_mode):
    _cdist_checks(x1, x2)
    return _cdist_impl(x1, x2, p, compute_mode, _aten._unsafe_view.default)


def _euclidean_dist(x1, x2):
    """p=2 distances through one product: [-2a, |a|^2, 1] . [b, 1, |b|^2], clamped at 1e-30
    before the square root (ATen's, so the gradient at a zero distance stays finite)."""
    a = _aten

    def sq_norm(x):
        return a.sum.dim_IntList._call(a.pow.Tensor_Scalar._call(x, 2), [-1], True, None)
    n1, n2 = sq_norm(x1), sq_norm(x2)
    ones1 = a.ones_like.default._call(n1, None, None, None, None, None)
    ones2 = a.ones_like.default._call(n2, None, None, None, None, None)
    m1 = a.cat.default._call([a.mul.Scalar._call(x1, -2), n1, ones1], -1)
    m2 = a.cat.default._call([x2, ones2, n2], -1)
    d2 = a.matmul.default._call(m1, a.transpose.int._call(m2, -1, -2))
    return a.sqrt.default._call(a.clamp_min.default._call(d2, 1e-30))


def _distance_backward(diff, grad, dist, p):
    """ATen's per-pair gradient of the p-norm ``dist`` of ``diff`` (its last dim), times
    ``grad``: zero where the distance is zero (and, for p < 1, where a difference is)."""
    a = _aten
    if p == 0:
        return a.zeros_like.default._call(diff, None, None, None, None, None)
    zero = a.zeros.default._call([], diff._dtype, None, diff._device, None)
    sign = a.sign.default._call(diff)
    if p == 1:
        return a.mul.Tensor._call(sign, grad)
    if p == _math.inf:
        at_max = a.eq.Tensor._call(a.abs.default._call(diff), dist)
        return a.mul.Tensor._call(a.mul.Tensor._call(sign, grad), at_max)
    if p == 2:
        g = a.div.Tensor._call(a.mul.Tensor._call(diff, grad), dist)
    elif p < 2:
        ad = a.abs.default._call(diff)
        if p < 1:  # a zero difference's entry is zero (its sign), not 0 * inf
            ad = a.where.self._call(a.eq.Scalar._call(diff, 0),
                                    a.ones_like.default._call(zero, None, None, None, None, None),
                                    ad)
        g = a.div.Tensor._call(
            a.mul.Tensor._call(a.mul.Tensor._call(sign, a.pow.Tensor_Scalar._call(ad, p - 1)),
                               grad),
            a.pow.Tensor_Scalar._call(dist, p - 1))
    else:
        g = a.div.Tensor._call(
            a.mul.Tensor._call(a.mul.Tensor._call(
                diff, a.pow.Tensor_Scalar._call(a.abs.default._call(diff), p - 2)), grad),
            a.pow.Tensor_Scalar._call(dist, p - 1))
    return a.where.self._call(a.eq.Scalar._call(dist, 0), zero, g)


def _cdist_backward(grad, x1, x2, p, cdist):
    """The gradient of ``_cdist_forward`` for x1 (x2's is this with the arguments swapped and
    transposed), over x1 expanded to the common batch: the engine sums it to x1's shape."""
    a = _aten
    (r1, c1), r2 = x1._size[-2:], x2._size[-2]
    batch = _st.broadcast_shapes(x1._size[:-2], x2._size[:-2])
    if r1 == 0 or r2 == 0 or c1 == 0 or _st.numel(batch) == 0:
        return a.zeros_like.default._call(x1, None, None, None, None, None)
    e1 = a.expand.default._call(x1, batch + (r1, c1), False)
    e2 = a.expand.default._call(x2, batch + (r2, c1), False)
    diff = a.sub.Tensor._call(a.unsqueeze.default._call(e1, -2),
                              a.unsqueeze.default._call(e2, -3), 1)
    g = _distance_backward(diff, a.unsqueeze.default._call(grad, -1),
                           a.unsqueeze.default._call(cdist, -1), p)
    return a.sum.dim_IntList._call(g, [-2], False, None)


def pdist(self, p=2.0):
    if self.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {self.dim()}D")
    if not self._dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return _aten._pdist_forward.default._call(
        _aten.contiguous.default._call(self, contiguous_format), p)


def _pdist_pairs(self):
    """The rows of each pair i < j (in pdist's order) and their difference."""
    a = _aten
    n = self.size(0)
    ij = a.triu_indices.default._call(n, n, 1, D.int64, None, self._device, None)
    return ij, a.sub.Tensor._call(a.index.Tensor._call(self, [a.select.int._call(ij, 0, 0)]),
                                  a.index.Tensor._call(self, [a.select.int._call(ij, 0, 1)]), 1)


def _pdist_forward(self, p=2.0):
    if not self.is_contiguous():
        raise RuntimeError("_pdist_forward requires contiguous input")
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f'"pdist" not implemented for \'{self._dtype._short}\'')
    n, m = self.size(0), self.size(1)  # (a 1-d input: IndexError, as ATen's)
    if n <= 1 or m == 0:
        return _aten.zeros.default._call([n * (n - 1) // 2], self._dtype, None, self._device,
                                         None)
    return p_norm(_pdist_pairs(self)[1], p, -1)


def _pdist_backward(grad, self, p, pdist):
    """Each pair's gradient added to its first row and taken from its second."""
    if not self.is_contiguous():
        raise RuntimeError("_pdist_backward requires self to be contiguous")
    if not pdist.is_contiguous():
        raise RuntimeError("_pdist_backward requires pdist to be contiguous")
    a = _aten
    result = a.zeros_like.default._call(self, None, None, None, None, None)
    if p == 0 or grad.numel() == 0 or self.numel() == 0:
        return result
    ij, diff = _pdist_pairs(self)
    g = _distance_backward(diff, a.unsqueeze.default._call(grad, -1),
                           a.unsqueeze.default._call(pdist, -1), p)
    result = a.index_add.default._call(result, 0, a.select.int._call(ij, 0, 0), g, 1)
    return a.index_add.default._call(result, 0, a.select.int._call(ij, 0, 1), g, -1)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    check_cosine_similarity(x1, x2)
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
    check_kl_div(self, target)
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
