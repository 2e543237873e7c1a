"""Building blocks the families share: parameter setup by broadcasting, the probs/logits pair,
and a rebuild-style ``expand`` for families defined as transformed distributions."""
import numbers

import ember

from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = []


def set_params(dist, **params):
    """Broadcast ``params`` together and store them on ``dist``; returns the batch shape."""
    values = broadcast_all(*params.values())
    for name, value in zip(params, values):
        setattr(dist, name, value)
    return values[0].shape


def uniform(shape, like, low=0.0, high=1.0):
    return ember.empty(shape, dtype=like.dtype).uniform_(low, high)


class ProbsOrLogits(Distribution):
    """Families parameterised by exactly one of ``probs`` and ``logits``; the other is derived
    lazily. ``_binary`` picks Bernoulli-style (sigmoid) or categorical (softmax) conversion;
    categorical parameters are normalised over their last dim."""
    _binary = True

    def _set_probs_or_logits(self, probs, logits, *others):
        """Store the given parameter broadcast with ``others`` (returned, in order)."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        if not self._binary:
            if value.dim() < 1:
                raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
            value = value / value.sum(-1, keepdim=True) if name == "probs" else \
                value - value.logsumexp(-1, keepdim=True)
        *others, value = broadcast_all(*others, value) if others or self._binary else (value,)
        setattr(self, name, value)
        self._param = value
        return (value, *others)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._binary)

    @property
    def param_shape(self):
        return self._param.size()

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._param = new.__dict__.get("probs", new.__dict__.get("logits"))
        return new


def is_number(x):
    return isinstance(x, numbers.Number)


class TransformedFamily(TransformedDistribution):
    """A named family built as a transformed distribution; ``expand`` rebuilds it from its
    expanded parameters (``_ctor`` names the constructor arguments)."""
    _ctor = ()

    def _ctor_args(self):
        return {n: getattr(self, n) for n in self._ctor}

    def expand(self, batch_shape, _instance=None):
        batch_shape = ember.Size(batch_shape)
        args = {n: v.expand(batch_shape) if isinstance(v, ember.Tensor) and v.dim() else v
                for n, v in self._ctor_args().items()}
        new = type(self)(**args, validate_args=False)
        new._validate_args = self._validate_args
        return new
