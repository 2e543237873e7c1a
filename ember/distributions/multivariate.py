"""Distributions over vectors: MultivariateNormal (any one of covariance, precision or Cholesky
factor), LowRankMultivariateNormal (covariance W W^T + diag(D), handled through the Woodbury
identity and a small "capacitance" matrix), and Dirichlet."""
import math

import ember

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal", "LowRankMultivariateNormal", "Dirichlet"]

_LOG_2PI = math.log(2 * math.pi)

# The batched linear algebra below carries PyTorch's private names and semantics
# (torch.distributions.multivariate_normal._batch_mv, ...): pyro and gpytorch import them.


def _batch_mv(bmat, bvec):
    """Matrix-vector products over broadcastable batch dims: ``bmat @ bvec``."""
    return ember.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """x^T (L L^T)^-1 x = |L^-1 x|^2 for lower-triangular ``bL`` (only its lower triangle is
    read) and vectors ``bx`` whose batch dims ``bL``'s broadcast to; the result has their
    common batch shape.

    One triangular solve per distinct matrix: the vectors sharing a matrix become the columns
    of one right-hand side, so a matrix is never copied per sample."""
    n = bx.size(-1)
    bx = bx.expand(ember.broadcast_shapes(bL.shape[:-2], bx.shape[:-1]) + (n,))
    batch_shape = bx.shape[:-1]
    l_dims = bL.dim() - 2
    outer = bx.dim() - 1 - l_dims
    # split each of x's dims that lines up with one of L's into (repeats, L's size), then move
    # the repeats in front: x becomes (outer..., repeats..., L's batch..., n)
    split = tuple(batch_shape[:outer])
    for s_l, s_x in zip(bL.shape[:-2], batch_shape[outer:]):
        split += (s_x // s_l, s_l)
    bx = bx.reshape(split + (n,))
    order = (list(range(outer)) + list(range(outer, outer + 2 * l_dims, 2))
             + list(range(outer + 1, outer + 2 * l_dims, 2)) + [outer + 2 * l_dims])
    bx = bx.permute(order)
    flat_l = bL.reshape(-1, n, n)  # b x n x n
    columns = bx.reshape(-1, flat_l.size(0), n).permute(1, 2, 0)  # b x n x c
    m = ember.linalg.solve_triangular(flat_l, columns, upper=False).pow(2).sum(-2).t()  # c x b
    # undo the permutation: back to x's batch order
    m = m.reshape(bx.shape[:-1])
    inverse = list(range(outer))
    for i in range(l_dims):
        inverse += [outer + i, outer + l_dims + i]
    return m.permute(inverse).reshape(batch_shape)


def _precision_to_scale_tril(P):
    """The lower Cholesky factor L of P^-1 (L L^T = P^-1) without inverting P. The Cholesky
    factor of P with rows and columns reversed, flipped back, is an upper-triangular U with
    P = U U^T; then L = U^-T: one triangular solve."""
    lf = ember.linalg.cholesky(ember.flip(P, (-2, -1)))
    l_inv = ember.transpose(ember.flip(lf, (-2, -1)), -2, -1)
    eye = ember.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return ember.linalg.solve_triangular(l_inv, eye, upper=False)


def _half_log_det(tril):
    return tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _batch_capacitance_tril(W, D):
    """Cholesky factor of the capacitance matrix I + W^T D^-1 W (m x m) of the covariance
    W W^T + diag(D)."""
    m = W.size(-1)
    k = ember.matmul(W.mT / D.unsqueeze(-2), W)
    return ember.linalg.cholesky(k + ember.eye(m, dtype=W.dtype, device=W.device))


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """log det(W W^T + diag(D)) = log det C + log det D (matrix determinant lemma)."""
    return 2 * _half_log_det(capacitance_tril) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + diag(D))^-1 x through Woodbury:
    x^T D^-1 x - |C^-1 W^T D^-1 x|^2 with C the capacitance factor."""
    wt_dinv_x = _batch_mv(W.mT / D.unsqueeze(-2), x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, wt_dinv_x)


def _check_matrix(name, m):
    if m.dim() < 2:
        raise ValueError(f"{name} must be at least two-dimensional, with optional leading "
                         "batch dimensions")


class MultivariateNormal(Distribution):
    """Multivariate normal distribution with mean ``loc`` and a covariance given by
    exactly one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (its lower
    Cholesky factor)."""
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = {"covariance_matrix": covariance_matrix, "precision_matrix": precision_matrix,
                 "scale_tril": scale_tril}
        given = {k: v for k, v in given.items() if v is not None}
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        ((name, matrix),) = given.items()
        _check_matrix("scale_tril matrix" if name == "scale_tril" else name, matrix)
        batch = ember.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        setattr(self, name, matrix.expand(batch + (-1, -1)))
        self.loc = loc.expand(batch + (-1,))
        super().__init__(batch, loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = ember.Size(batch_shape)
        n = self.event_shape
        new.loc = self.loc.expand(batch_shape + n)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name].expand(batch_shape + n + n)
        Distribution.__init__(new, batch_shape, n, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _full_matrix(self, m):
        return m.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._full_matrix(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        low = self._unbroadcasted_scale_tril
        return self._full_matrix(low @ low.mT)

    @lazy_property
    def precision_matrix(self):
        return self._full_matrix(ember.cholesky_inverse(self._unbroadcasted_scale_tril))

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape
                                                                    + self._event_shape)

    def rsample(self, sample_shape=ember.Size()):
        eps = _standard_normal(self._extended_shape(sample_shape), self.loc.dtype,
                               self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _log_prob(self, value):
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        n = self._event_shape[0]
        return -0.5 * (n * _LOG_2PI + m) - _half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + _LOG_2PI) + _half_log_det(self._unbroadcasted_scale_tril)
        return h.expand(self._batch_shape)


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal distribution with covariance
    ``cov_factor @ cov_factor.T + diag(cov_diag)``."""
    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, factor, diag_ = ember.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                          cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.loc, self.cov_factor, self.cov_diag = loc_[..., 0], factor, diag_[..., 0]
        super().__init__(loc_.shape[:-2], event_shape, validate_args=validate_args)
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = ember.Size(batch_shape)
        n = self.event_shape
        new.loc = self.loc.expand(batch_shape + n)
        new.cov_diag = self.cov_diag.expand(batch_shape + n)
        new.cov_factor = self.cov_factor.expand(batch_shape + self.cov_factor.shape[-2:])
        for name in ("_unbroadcasted_cov_factor", "_unbroadcasted_cov_diag",
                     "_capacitance_tril"):
            new.__dict__[name] = self.__dict__[name]
        Distribution.__init__(new, batch_shape, n, validate_args=False)
        new._validate_args = self._validate_args
        return new

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @lazy_property
    def variance(self):
        v = self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        return v.expand(self._batch_shape + self._event_shape)

    def _full_matrix(self, m):
        return m.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return self._full_matrix(w @ w.mT + ember.diag_embed(d))

    @lazy_property
    def scale_tril(self):
        # W W^T + D = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2, and the middle matrix has every
        # eigenvalue >= 1: its Cholesky factor is well conditioned where W W^T + D's may not be
        n = self._event_shape[0]
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled_w = self._unbroadcasted_cov_factor / d_sqrt
        k = scaled_w @ scaled_w.mT + ember.eye(n, dtype=d_sqrt.dtype, device=d_sqrt.device)
        return self._full_matrix(d_sqrt * ember.linalg.cholesky(k))

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W C^-1 W^T D^-1 with C = I + W^T D^-1 W = L L^T
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        a = ember.linalg.solve_triangular(self._capacitance_tril, w.mT / d.unsqueeze(-2),
                                          upper=False)
        return self._full_matrix(ember.diag_embed(d.reciprocal()) - a.mT @ a)

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        w = self._unbroadcasted_cov_factor
        eps_w = _standard_normal(shape[:-1] + w.shape[-1:], self.loc.dtype, self.loc.device)
        eps_d = _standard_normal(shape, self.loc.dtype, self.loc.device)
        return self.loc + _batch_mv(w, eps_w) + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _log_det(self):
        return _batch_lowrank_logdet(self._unbroadcasted_cov_factor,
                                     self._unbroadcasted_cov_diag, self._capacitance_tril)

    def _log_prob(self, value):
        m = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                       self._unbroadcasted_cov_diag, value - self.loc,
                                       self._capacitance_tril)
        n = self._event_shape[0]
        return -0.5 * (n * _LOG_2PI + self._log_det() + m)

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * (n * (1.0 + _LOG_2PI) + self._log_det())
        return h.expand(self._batch_shape)


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution on the simplex with ``concentration`` (last dim)."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:],
                         validate_args=validate_args)

    def rsample(self, sample_shape=ember.Size()):
        # normalised independent gammas; their reparameterised gradient flows through
        # _standard_gamma's implicit derivative
        shape = self._extended_shape(sample_shape)
        g = ember._standard_gamma(self.concentration.expand(shape))
        x = g / g.sum(-1, keepdim=True)
        x.detach().clamp_(min=ember.finfo(x.dtype).tiny)
        return x

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            return ember._sample_dirichlet(
                self.concentration.expand(self._extended_shape(sample_shape)))

    def _log_prob(self, value):
        c = self.concentration
        return (ember.xlogy(c - 1.0, value).sum(-1) + ember.lgamma(c.sum(-1))
                - ember.lgamma(c).sum(-1))

    mean = property(lambda self: self.concentration / self.concentration.sum(-1, True))

    @property
    def mode(self):
        c = self.concentration
        shifted = (c - 1).clamp(min=0.0)
        mode = shifted / shifted.sum(-1, True)
        # all concentrations below one: the density peaks at the corners; take the largest
        corner = ember.nn.functional.one_hot(mode.argmax(-1), c.shape[-1]).to(mode.dtype)
        return ember.where((c < 1).all(-1, keepdim=True), corner, mode)

    @property
    def variance(self):
        c = self.concentration
        total = c.sum(-1, True)
        return c * (total - c) / (total.pow(2) * (total + 1))

    def entropy(self):
        c = self.concentration
        k, total = c.size(-1), c.sum(-1)
        return (ember.lgamma(c).sum(-1) - ember.lgamma(total) - (k - total) * ember.digamma(total)
                - ((c - 1.0) * ember.digamma(c)).sum(-1))

    _natural_params = property(lambda self: (self.concentration,))

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - ember.lgamma(x.sum(-1))
