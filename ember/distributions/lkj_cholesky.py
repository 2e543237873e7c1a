"""``LKJCholesky``: the LKJ law over lower Cholesky factors of correlation matrices (density of
L L^T proportional to det(L L^T)^(eta - 1)), sampled with the onion method as PyTorch does."""
import math

import ember

from . import constraints
from .continuous import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ distribution over Cholesky factors of ``dim`` x ``dim`` correlation matrices
    with shape ``concentration``."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        # onion method: row i's squared off-diagonal norm is Beta(i/2, eta + (dim - 2 - i)/2)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = ember.arange(self.dim - 1, dtype=self.concentration.dtype)
        offset = ember.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, ember.Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = ember.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=ember.Size()):
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        u_normal = ember.randn(self._extended_shape(sample_shape), dtype=y.dtype).tril(-1)
        u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
        # the first row has no off-diagonal entries (0/0 above)
        u_hypersphere[..., 0, :].fill_(0.0)
        w = ember.sqrt(y) * u_hypersphere
        eps = ember.finfo(w.dtype).tiny  # keeps the diagonal positive
        diag_elems = ember.clamp(1 - ember.sum(w ** 2, dim=-1), min=eps).sqrt()
        return w + ember.diag_embed(diag_elems)

    def _log_prob(self, value):
        # log p(L) = sum_i (dim - i + 2 (eta - 1)) log L_ii - log normaliser (i = 2..dim)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ember.arange(2, self.dim + 1)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = ember.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = ember.lgamma(alpha) * dm1
        numerator = ember.mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
