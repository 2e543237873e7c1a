"""Distributions over vectors: MultivariateNormal (any one of covariance, precision or Cholesky
factor), LowRankMultivariateNormal (covariance W W^T + diag(D), handled through the Woodbury
identity and a small "capacitance" matrix), and Dirichlet."""
import math

import ember

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import lazy_property

__all__ = ["MultivariateNormal", "LowRankMultivariateNormal", "Dirichlet"]

_LOG_2PI = math.log(2 * math.pi)


def _mv(mat, vec):
    return (mat @ vec.unsqueeze(-1)).squeeze(-1)


def _mahalanobis(tril, diff):
    """|L^-1 diff|^2 for each batch element (L lower-triangular, broadcast over diff's
    leading dims)."""
    n = tril.shape[-1]
    batch = ember.broadcast_shapes(tril.shape[:-2], diff.shape[:-1])
    # only the lower triangle takes part (as a triangular solve would read it)
    tril = tril.tril().expand(batch + (n, n))
    sol = ember.linalg.solve(tril, diff.expand(batch + (n,)).unsqueeze(-1)).squeeze(-1)
    return sol.pow(2).sum(-1)


def _half_log_det(tril):
    return tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _check_matrix(name, m):
    if m.dim() < 2:
        raise ValueError(f"{name} must be at least two-dimensional, with optional leading "
                         "batch dimensions")


class MultivariateNormal(Distribution):
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
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(ember.linalg.inv(matrix))

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
        low = self._unbroadcasted_scale_tril
        return self._full_matrix(ember.linalg.inv(low @ low.mT))

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape
                                                                    + self._event_shape)

    def rsample(self, sample_shape=ember.Size()):
        eps = ember.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + _mv(self._unbroadcasted_scale_tril, eps)

    def _log_prob(self, value):
        m = _mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        n = self._event_shape[0]
        return -0.5 * (n * _LOG_2PI + m) - _half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + _LOG_2PI) + _half_log_det(self._unbroadcasted_scale_tril)
        return h.expand(self._batch_shape)


class LowRankMultivariateNormal(Distribution):
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
        self._capacitance_tril = self._capacitance(cov_factor, cov_diag)

    @staticmethod
    def _capacitance(w, d):
        """Cholesky factor of I + W^T D^-1 W (m x m)."""
        m = w.shape[-1]
        k = (w.mT / d.unsqueeze(-2)) @ w
        return ember.linalg.cholesky(k + ember.eye(m, dtype=w.dtype))

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
        return ember.linalg.cholesky(self.covariance_matrix)

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W C^-1 W^T D^-1 with C = I + W^T D^-1 W = L L^T
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        a = ember.linalg.solve(self._capacitance_tril, w.mT / d.unsqueeze(-2))
        return self._full_matrix(ember.diag_embed(d.reciprocal()) - a.mT @ a)

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        w = self._unbroadcasted_cov_factor
        eps_w = ember.randn(shape[:-1] + w.shape[-1:], dtype=self.loc.dtype)
        eps_d = ember.randn(shape, dtype=self.loc.dtype)
        return self.loc + _mv(w, eps_w) + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _log_det(self):
        return 2 * _half_log_det(self._capacitance_tril) + \
            self._unbroadcasted_cov_diag.log().sum(-1)

    def _log_prob(self, value):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        diff = value - self.loc
        # x^T (W W^T + D)^-1 x = x^T D^-1 x - |L^-1 W^T D^-1 x|^2  (Woodbury)
        m = (diff.pow(2) / d).sum(-1) - _mahalanobis(self._capacitance_tril,
                                                      _mv(w.mT / d.unsqueeze(-2), diff))
        n = self._event_shape[0]
        return -0.5 * (n * _LOG_2PI + self._log_det() + m)

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * (n * (1.0 + _LOG_2PI) + self._log_det())
        return h.expand(self._batch_shape)


class Dirichlet(ExponentialFamily):
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
