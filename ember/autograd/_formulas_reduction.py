"""Backward helpers for the reductions, scans and sorting ops (PyTorch's FunctionsManual names),
written in ember ops so that they are differentiable again. Loaded into the formula namespace by
``_formulas.py``."""
import ember

# Loaded by _formulas' last lines (its star-imports), once its own helpers are defined.
from . import _formulas
from ._formulas_shape import linalg_vector_norm_backward

__all__ = ["nansum_backward", "aminmax_backward", "std_mean_backward", "var_mean_backward",
           "norm_backward", "logsumexp_backward", "cumsum_backward", "cumprod_backward",
           "cummaxmin_backward", "logcumsumexp_backward", "value_selecting_reduction_backward_k",
           "foreach_norm_backward"]


def nansum_backward(grad, self, dim, keepdim):
    """sum's gradient, zero where the input was NaN."""
    g = _formulas.sum_backward(grad, tuple(self._size), dim, keepdim)
    return g * (self == self)


def aminmax_backward(self, dim, keepdim, grad_min, grad_max, min, max):  # noqa: A002
    dims = None if dim is None else [dim]
    return (_formulas.amax_amin_backward(grad_min, self, min, dims, keepdim) +
            _formulas.amax_amin_backward(grad_max, self, max, dims, keepdim))


def _sum_defined(*terms):
    terms = [t for t in terms if t is not None]
    return None if not terms else terms[0] if len(terms) == 1 else terms[0] + terms[1]


@_formulas.takes_undefined_grads
def std_mean_backward(grad_std, grad_mean, self, std, dim, correction, keepdim):
    return _sum_defined(
        None if grad_std is None else
        _formulas.std_backward(std, grad_std, self, dim, correction, keepdim),
        None if grad_mean is None else
        _formulas.mean_backward(grad_mean, tuple(self._size), dim, self.numel(), keepdim))


@_formulas.takes_undefined_grads
def var_mean_backward(grad_var, grad_mean, self, dim, correction, keepdim):
    return _sum_defined(
        None if grad_var is None else
        _formulas.var_backward(grad_var, self, dim, correction, keepdim),
        None if grad_mean is None else
        _formulas.mean_backward(grad_mean, tuple(self._size), dim, self.numel(), keepdim))


def norm_backward(grad, self, p, norm, dim=None, keepdim=False):
    if dim is not None and len(dim) == 0:
        dim = None  # norm over [] reduces every dim
    return linalg_vector_norm_backward(grad, self, 2 if p is None else p, norm, dim, keepdim)


def logsumexp_backward(grad, self, result, dim, keepdim):
    if not keepdim and self.dim():
        dims = _formulas._reduced_dims(dim, self.dim())
        grad = _formulas.unsqueeze_multiple(grad, dims, self.dim())
        result = _formulas.unsqueeze_multiple(result, dims, self.dim())
    return grad * (self - result).exp()


def _reverse_cumsum(t, dim):
    return t.flip([dim]).cumsum(dim).flip([dim])


def cumsum_backward(grad, dim):
    if grad.dim() == 0:
        return grad
    return _reverse_cumsum(grad, dim % grad.dim())


def cumprod_backward(grad, self, dim, result):
    """d out_j / d x_i = prod_{k <= j, k != i} x_k for j >= i. Before a slice's first zero this is
    out_j / x_i; at the first zero it is the cumprod with that zero replaced by 1; after it, 0."""
    if self.dim() == 0:
        return grad
    dim = dim % self.dim()
    is_zero = self == 0
    zeros_so_far = is_zero.cumsum(dim)
    before = zeros_so_far == 0
    first_zero = ember.logical_and(is_zero, zeros_so_far == 1)
    one = ember.ones((), dtype=self.dtype)
    g_before = _reverse_cumsum(grad * result, dim) / ember.where(before, self, one)
    g_first_zero = _reverse_cumsum(grad * ember.where(first_zero, one, self).cumprod(dim), dim)
    zero = ember.zeros((), dtype=grad.dtype)
    return ember.where(before, g_before, ember.where(first_zero, g_first_zero, zero))


def cummaxmin_backward(grad, self, indices, dim):
    """Each output's gradient flows to the input position its running extremum came from."""
    if self.dim() == 0:
        return grad
    return ember.zeros_like(self).scatter_add(dim, indices, grad)


def logcumsumexp_backward(grad, self, result, dim):
    """grad_i = sum_{j >= i} g_j exp(x_i - r_j), summed in log space separately for the positive
    and negative parts of g (PyTorch's formula)."""
    if self.dim() == 0:
        return grad
    dim = dim % self.dim()
    lowest = -ember.finfo(grad.dtype).max
    log_abs = grad.abs().log()
    lowest_t = ember.full((), lowest, dtype=grad.dtype)
    pos = ember.where(grad > 0, log_abs, lowest_t)
    neg = ember.where(grad < 0, log_abs, lowest_t)

    def reverse_logcumsumexp(t):
        return t.flip([dim]).logcumsumexp(dim).flip([dim])

    return (reverse_logcumsumexp(pos - result) + self).exp() - \
        (reverse_logcumsumexp(neg - result) + self).exp()


def value_selecting_reduction_backward_k(grad, dim, indices, sizes, keepdim):
    """Gradient of ops picking k values along ``dim`` (sort, topk): scattered to their indices."""
    ndim = len(sizes)
    if ndim == 0:
        return grad
    if not keepdim:
        grad, indices = grad.unsqueeze(dim), indices.unsqueeze(dim)
    return ember.zeros(sizes, dtype=grad.dtype).scatter(dim, indices, grad)


def foreach_norm_backward(grads, self, ord, result):
    """``_foreach_norm``: each tensor's vector-norm gradient (none where its norm got none)."""
    return [None if g is None else linalg_vector_norm_backward(g, t, ord, r, None, False)
            for g, t, r in zip(grads, self, result)]
