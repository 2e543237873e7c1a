"""``TransformedDistribution``: the law of f(X) for X from a base distribution and f a chain of
transforms; log_prob uses the change-of-variables formula, cdf/icdf push through monotone
transforms."""
import ember

from . import constraints
from .distribution import Distribution
from .independent import Independent
from .transforms import ComposeTransform, Transform
from .utils import _sum_rightmost

__all__ = ["TransformedDistribution"]


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` (applied in order);
    densities by the change-of-variables formula."""
    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif not (isinstance(transforms, list) and all(isinstance(t, Transform)
                                                         for t in transforms)):
            raise ValueError("transforms must be a Transform or a list of Transforms")
        self.transforms = transforms
        chain = ComposeTransform(transforms)
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        if len(base_shape) < chain.domain.event_dim:
            raise ValueError("base_distribution needs to have shape with size at least "
                             f"{chain.domain.event_dim}, but got {base_shape}.")
        out_shape = chain.forward_shape(base_shape)
        wanted_base = chain.inverse_shape(out_shape)
        if base_shape != wanted_base:  # parameters of the transforms widen the batch
            base_distribution = base_distribution.expand(
                wanted_base[:len(wanted_base) - base_event_dim])
        extra = chain.domain.event_dim - base_event_dim
        self.base_dist = Independent(base_distribution, extra) if extra > 0 \
            else base_distribution
        event_dim = max(chain.codomain.event_dim,
                        base_event_dim + chain.codomain.event_dim - chain.domain.event_dim)
        cut = len(out_shape) - event_dim
        super().__init__(out_shape[:cut], out_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = ember.Size(batch_shape)
        shape = batch_shape + self.event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        n_base_event = len(self.base_dist.event_shape)
        new.base_dist = self.base_dist.expand(shape[:len(shape) - n_base_event])
        new.transforms = self.transforms
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        s = self.transforms[-1].codomain
        extra = len(self.event_shape) - s.event_dim
        return constraints.independent(s, extra) if extra > 0 else s

    has_rsample = property(lambda self: self.base_dist.has_rsample)

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape=ember.Size()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def _log_prob(self, value):
        # walk back from y to x, collecting -log|det J| of each step at its own event size
        event_dim = len(self.event_shape)
        total, y = 0.0, value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            total = total - _sum_rightmost(t.log_abs_det_jacobian(x, y),
                                           event_dim - t.domain.event_dim)
            y = x
        return total + _sum_rightmost(self.base_dist.log_prob(y),
                                      event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        """A decreasing chain turns the base CDF into a survival function: flip it."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def _cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def _icdf(self, value):
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for t in self.transforms:
            value = t(value)
        return value
