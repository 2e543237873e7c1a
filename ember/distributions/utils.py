"""Small helpers shared by the distribution families: parameter broadcasting, probability/logit
conversion, standard-normal noise, cached properties and triangular-matrix packing.

The private names here (``_standard_normal``, ``_sum_rightmost``, ``euler_constant``,
``is_tensor_like``) are PyTorch's: libraries built on ``torch.distributions`` (pyro, gpytorch)
import them from ``torch.distributions.utils``, so they keep PyTorch's signatures."""
import numbers
from functools import update_wrapper

import ember
from ember.overrides import is_tensor_like

euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant

__all__ = ["broadcast_all", "logits_to_probs", "probs_to_logits", "clamp_probs", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def broadcast_all(*values):
    """Broadcast tensors and numbers together; numbers take the first tensor's dtype (or the
    default dtype when every value is a number)."""
    if not all(is_tensor_like(v) or isinstance(v, numbers.Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or "
                         "objects implementing __torch_function__.")
    like = next((v for v in values if isinstance(v, ember.Tensor)), None)
    dtype = like.dtype if like is not None else ember.get_default_dtype()
    tensors = [v if isinstance(v, ember.Tensor) else ember.tensor(v, dtype=dtype) for v in values]
    return ember.broadcast_tensors(*tensors)


def _standard_normal(shape, dtype, device):
    """Standard-normal noise of ``shape`` (``normal_``'s stream, as every family samples)."""
    return ember.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dims of ``value``."""
    return value.reshape(value.shape[:value.dim() - dim] + (-1,)).sum(-1) if dim > 0 else value


def clamp_probs(probs):
    """Keep probabilities strictly inside (0, 1) so their logs are finite."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    return ember.sigmoid(logits) if is_binary else ember.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary=False):
    p = clamp_probs(probs)
    return ember.log(p) - ember.log1p(-p) if is_binary else ember.log(p)


class lazy_property:
    """Computed on first access and then stored on the instance, so a parameter given in one
    form (probs) yields the other (logits) only when asked for."""

    def __init__(self, fn):
        self.wrapped = fn
        update_wrapper(self, fn)

    def __get__(self, instance, owner=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a class hands out for its lazy property: still a ``lazy_property`` (argument
    validation skips lazy parameters not yet computed) and also a ``property`` (documentation
    tools and libraries looking for properties on the class see one)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _tril_indices(n, diag):
    return [(i, j) for i in range(n) for j in range(n) if j - i <= diag]


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (up to ``diag``) of the last two dims, read row by row."""
    n = mat.shape[-1]
    if not (-n <= diag < n):
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    idx = _tril_indices(n, diag)
    if not idx:  # e.g. below diagonal -2 of a 2x2 matrix: nothing
        return mat.new_zeros(mat.shape[:-2] + (0,))
    rows, cols = zip(*idx)
    return mat[..., list(rows), list(cols)]


def vec_to_tril_matrix(vec, diag=0):
    """Inverse of :func:`tril_matrix_to_vec`: the matrix whose lower triangle holds ``vec``."""
    m = vec.shape[-1]
    n = 1
    while len(_tril_indices(n, diag)) < m:
        n += 1
    if len(_tril_indices(n, diag)) != m:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the "
                         "lower triangular part of a square D x D matrix.")
    rows, cols = zip(*_tril_indices(n, diag))
    out = vec.new_zeros(vec.shape[:-1] + (n, n))
    out[..., list(rows), list(cols)] = vec
    return out
