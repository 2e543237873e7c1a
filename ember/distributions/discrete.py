"""Discrete families (Bernoulli, Categorical, OneHotCategorical, Geometric, Poisson, Binomial,
NegativeBinomial, Multinomial) and the relaxed (Gumbel-softmax / concrete) Bernoulli and
one-hot categorical, which are continuous stand-ins with reparameterised samples."""
import math

import ember
import ember.nn.functional as F

from . import constraints
from ._family import ProbsOrLogits, is_number, set_params
from .continuous import Gamma
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["Bernoulli", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough",
           "Geometric", "Poisson", "Binomial",
           "NegativeBinomial", "Multinomial", "LogitRelaxedBernoulli", "RelaxedBernoulli",
           "ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


def _column(values, n_batch):
    """values laid out along a new leading dim, ready to broadcast against the batch."""
    return values.reshape((-1,) + (1,) * n_batch)


class Bernoulli(ProbsOrLogits, ExponentialFamily):
    """Bernoulli distribution on {0, 1}, parameterised by ``probs`` or ``logits``."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        number = is_number(probs if probs is not None else logits)
        (param,) = self._set_probs_or_logits(probs, logits)
        super().__init__(ember.Size() if number else param.shape, validate_args=validate_args)

    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))

    @property
    def mode(self):
        # a fair coin has no mode
        return ember.where(self.probs == 0.5, math.nan, (self.probs >= 0.5).to(self.probs.dtype))

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            return ember.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def _log_prob(self, value):
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        values = _column(ember.arange(2, dtype=self._param.dtype), len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

    _natural_params = property(lambda self: (ember.logit(self.probs),))

    def _log_normalizer(self, x):
        return ember.log1p(ember.exp(x))


class Categorical(ProbsOrLogits):
    """Categorical distribution over ``{0, ..., K-1}``, parameterised by ``probs`` or
    ``logits`` (the last dim indexes the categories)."""
    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True
    _binary = False

    def __init__(self, probs=None, logits=None, validate_args=None):
        (param,) = self._set_probs_or_logits(probs, logits)
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    mean = property(lambda self: ember.full(self._extended_shape(), math.nan,
                                            dtype=self.probs.dtype))
    variance = mean
    mode = property(lambda self: self.probs.argmax(-1))

    def sample(self, sample_shape=ember.Size()):
        sample_shape = ember.Size(sample_shape)
        rows = self.probs.reshape(-1, self._num_events)
        with ember.no_grad():
            draws = ember.multinomial(rows, sample_shape.numel(), True).T
        return draws.reshape(self._extended_shape(sample_shape))

    def _log_prob(self, value):
        value = value.long().unsqueeze(-1)
        value, log_pmf = ember.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        # a -inf logit (zero probability) contributes 0, not NaN
        logits = self.logits.clamp(min=ember.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = _column(ember.arange(self._num_events, dtype=ember.long),
                         len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class OneHotCategorical(Distribution):
    """Categorical distribution whose samples are one-hot vectors of length K."""
    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, ember.Size(batch_shape), self.event_shape,
                              validate_args=False)
        new._validate_args = self._validate_args
        return new

    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    param_shape = property(lambda self: self._categorical.param_shape)
    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @property
    def mode(self):
        return F.one_hot(self.probs.argmax(-1), self.event_shape[0]).to(self.probs.dtype)

    def sample(self, sample_shape=ember.Size()):
        idx = self._categorical.sample(sample_shape)
        return F.one_hot(idx, self.event_shape[0]).to(self.probs.dtype)

    def _log_prob(self, value):
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = ember.eye(n, dtype=self._categorical._param.dtype)
        values = values.reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values

    def __repr__(self):
        return "OneHotCategorical(" + repr(self._categorical)[len("Categorical("):]



class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` passes gradients straight through the one-hot draw
    (its value is the draw, its gradient that of the probabilities), as PyTorch."""
    has_rsample = True

    def rsample(self, sample_shape=ember.Size()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())

class Geometric(ProbsOrLogits):
    """Number of failures before the first success."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        number = is_number(probs if probs is not None else logits)
        (param,) = self._set_probs_or_logits(probs, logits)
        super().__init__(ember.Size() if number else param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            bad = ~(self.probs > 0)
            if bool(bad.any()):
                raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                                 f"{tuple(self.probs.shape)}) of distribution {self!r} to be "
                                 f"positive but found invalid values:\n{self.probs[bad]}")

    mean = property(lambda self: 1.0 / self.probs - 1.0)
    mode = property(lambda self: ember.zeros_like(self.probs))
    variance = property(lambda self: (1.0 / self.probs - 1.0) / self.probs)

    def sample(self, sample_shape=ember.Size()):
        tiny = ember.finfo(self.probs.dtype).tiny
        with ember.no_grad():
            u = ember.empty(self._extended_shape(sample_shape),
                            dtype=self.probs.dtype).uniform_(tiny, 1)
            return (u.log() / ember.log1p(-self.probs)).floor()

    def _log_prob(self, value):
        value, probs = broadcast_all(value, self.probs)
        # a sure success (p = 1) gives log(1 - p) = -inf; at k = 0 its weight is 0, not NaN
        q = ember.where((probs == 1) & (value == 0), 0.0, probs)
        return value * ember.log1p(-q) + self.probs.log()

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                  reduction="none") / self.probs


class Poisson(ExponentialFamily):
    """Poisson distribution with rate ``rate``."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        number = is_number(rate)
        shape = set_params(self, rate=rate)
        super().__init__(ember.Size() if number else shape, validate_args=validate_args)

    mean = property(lambda self: self.rate)
    mode = property(lambda self: self.rate.floor())
    variance = property(lambda self: self.rate)

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            return ember.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def _log_prob(self, value):
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    _natural_params = property(lambda self: (self.rate.log(),))

    def _log_normalizer(self, x):
        return ember.exp(x)


def _relu_half(x):
    # max(x, 0) written so its gradient at 0 is 1/2 (PyTorch's choice for Binomial)
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(ProbsOrLogits):
    """Binomial distribution: successes in ``total_count`` Bernoulli trials of ``probs``
    (or ``logits``)."""
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        param, total = self._set_probs_or_logits(probs, logits, total_count)
        self.total_count = total.type_as(param)
        super().__init__(param.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    mean = property(lambda self: self.total_count * self.probs)
    mode = property(lambda self: ((self.total_count + 1) * self.probs).floor().clamp(
        max=self.total_count))
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))

    def sample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def _log_prob(self, value):
        n, logits = self.total_count, self.logits
        log_binom = ember.lgamma(n + 1) - ember.lgamma(value + 1) - ember.lgamma(n - value + 1)
        # n * log(1 + e^logits), stable for large |logits|
        log_norm = n * _relu_half(logits) + n * ember.log1p(ember.exp(-logits.abs()))
        return value * logits + log_binom - log_norm

    def _homogeneous_count(self, what):
        n = int(self.total_count.max())
        if not bool(self.total_count.min() == n):
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return n

    def entropy(self):
        self._homogeneous_count("entropy")
        lp = self.log_prob(self.enumerate_support(False))
        return -(ember.exp(lp) * lp).sum(0)

    def enumerate_support(self, expand=True):
        n = self._homogeneous_count("enumerate_support")
        values = _column(ember.arange(1 + n, dtype=self._param.dtype), len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class NegativeBinomial(ProbsOrLogits):
    """Number of successes before ``total_count`` failures, each trial succeeding with
    probability ``probs``."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        param, total = self._set_probs_or_logits(probs, logits, total_count)
        self.total_count = total.type_as(param)
        super().__init__(param.shape, validate_args=validate_args)

    mean = property(lambda self: self.total_count * ember.exp(self.logits))
    mode = property(lambda self: ((self.total_count - 1) * self.logits.exp()).floor().clamp(
        min=0.0))
    variance = property(lambda self: self.mean / ember.sigmoid(-self.logits))

    def sample(self, sample_shape=ember.Size()):
        # a Poisson whose rate is Gamma(total_count, odds^-1)-distributed
        with ember.no_grad():
            rate = Gamma(self.total_count, ember.exp(-self.logits),
                         validate_args=False).sample(sample_shape)
            return ember.poisson(rate)

    def _log_prob(self, value):
        n = self.total_count
        unnorm = n * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_norm = -ember.lgamma(n + value) + ember.lgamma(1.0 + value) + ember.lgamma(n)
        return unnorm - log_norm.masked_fill(n + value == 0.0, 0.0)


class Multinomial(Distribution):
    """Multinomial distribution: counts of ``total_count`` draws from a categorical
    distribution given by ``probs`` or ``logits``."""
    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = ember.Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(self.total_count, probs=new._categorical.probs,
                                 validate_args=False)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    param_shape = property(lambda self: self._categorical.param_shape)
    mean = property(lambda self: self.probs * self.total_count)
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    def sample(self, sample_shape=ember.Size()):
        sample_shape = ember.Size(sample_shape)
        # total_count categorical draws per place, counted per category
        draws = self._categorical.sample(ember.Size((self.total_count,)) + sample_shape)
        draws = draws.permute(list(range(1, draws.dim())) + [0])
        counts = ember.zeros(self._extended_shape(sample_shape), dtype=self.probs.dtype)
        return counts.scatter_add_(-1, draws, ember.ones_like(draws, dtype=counts.dtype))

    def _log_prob(self, value):
        logits, value = broadcast_all(self.logits, value)
        log_coef = ember.lgamma(value.sum(-1) + 1) - ember.lgamma(value + 1).sum(-1)
        # a zero count of an impossible category contributes 0, not 0 * -inf
        logits = ember.where((value == 0) & (logits == -math.inf), 0.0, logits)
        return log_coef + (logits * value).sum(-1)

    def entropy(self):
        n = ember.tensor(float(self.total_count), dtype=self.probs.dtype)
        counts = self._binomial.enumerate_support(False)
        count_probs = self._binomial.log_prob(counts).exp()
        weights = ember.lgamma(counts + 1)
        return (n * self._categorical.entropy() - ember.lgamma(n + 1)
                + (count_probs * weights).sum([0, -1]))


# ---- relaxed (concrete) distributions ----------------------------------------------------

class LogitRelaxedBernoulli(ProbsOrLogits):
    """Logit of a relaxed Bernoulli draw: (logistic noise + logits) / temperature."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        number = is_number(probs if probs is not None else logits)
        (param,) = self._set_probs_or_logits(probs, logits)
        super().__init__(ember.Size() if number else param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        temperature = self.temperature
        new = super().expand(batch_shape, _instance)
        new.temperature = temperature
        return new

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(ember.rand(shape, dtype=probs.dtype))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    has_rsample = True

    def _log_prob(self, value):
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """Relaxed Bernoulli (binary Concrete) distribution at temperature
    ``temperature``: a reparameterisable relaxation of Bernoulli on (0, 1)."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return TransformedDistribution.expand(self, batch_shape,
                                              _instance or self.__new__(type(self)))

    temperature = property(lambda self: self.base_dist.temperature)
    probs = property(lambda self: self.base_dist.probs)
    logits = property(lambda self: self.base_dist.logits)


class ExpRelaxedCategorical(Distribution):
    """Log of a relaxed one-hot categorical draw: log-softmax((logits + Gumbel) / T)."""
    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, ember.Size(batch_shape), self.event_shape,
                              validate_args=False)
        new._validate_args = self._validate_args
        return new

    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    param_shape = property(lambda self: self._categorical.param_shape)

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(ember.rand(shape, dtype=self.logits.dtype))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def _log_prob(self, value):
        k = self._categorical._num_events
        t = self.temperature
        log_scale = ember.full_like(t, float(k)).lgamma() + t.log().mul(k - 1)
        score = self.logits - value.mul(t)
        score = (score - score.logsumexp(-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """Relaxed one-hot categorical (Concrete / Gumbel-softmax) distribution at
    temperature ``temperature``: a reparameterisable relaxation on the simplex."""
    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return TransformedDistribution.expand(self, batch_shape,
                                              _instance or self.__new__(type(self)))

    temperature = property(lambda self: self.base_dist.temperature)
    probs = property(lambda self: self.base_dist.probs)
    logits = property(lambda self: self.base_dist.logits)
