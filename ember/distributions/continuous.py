"""Univariate continuous families. Normal, Laplace and Cauchy share one location-scale class
that only supplies the standardised density, CDF, quantile, noise and moments; the families
PyTorch defines as transforms of simpler ones (LogNormal, HalfNormal, Gumbel, Pareto, ...)
are ``TransformedDistribution`` subclasses here as well, with closed-form moments."""
import math

import ember
import ember.nn.functional as F

from . import constraints
from ._family import ProbsOrLogits, TransformedFamily, is_number, set_params, uniform
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .transforms import AbsTransform, AffineTransform, ExpTransform, PowerTransform
from .utils import _standard_normal, broadcast_all, clamp_probs, euler_constant, lazy_property, \
    logits_to_probs

__all__ = ["Normal", "Laplace", "Cauchy", "Uniform", "Exponential", "Gamma", "Chi2", "Beta",
           "StudentT", "FisherSnedecor", "VonMises", "ContinuousBernoulli", "LogNormal",
           "HalfNormal", "HalfCauchy", "Gumbel", "Pareto", "Weibull", "Kumaraswamy"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _full(dist, value):
    like = next(iter(v for v in dist.__dict__.values() if isinstance(v, ember.Tensor)))
    return ember.full(dist._extended_shape(), value, dtype=like.dtype)


# ---- location-scale families -------------------------------------------------------------

class _LocScale(Distribution):
    """X = loc + scale * Z for a fixed standard law of Z. Subclasses give Z's log-density,
    CDF, quantile function, a noise sampler, its entropy and variance."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _z_entropy = _z_variance = None

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(set_params(self, loc=loc, scale=scale), validate_args=validate_args)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._z_variance * self.scale.pow(2)

    @property
    def stddev(self):
        return math.sqrt(self._z_variance) * self.scale

    def rsample(self, sample_shape=ember.Size()):
        eps = self._z_noise(self._extended_shape(sample_shape))
        return self.loc + eps * self.scale

    def _log_prob(self, value):
        return self._z_log_prob(self._z(value)) - self.scale.log()

    def _cdf(self, value):
        return self._z_cdf(self._z(value))

    def _icdf(self, value):
        return self.loc + self.scale * self._z_icdf(value)

    def entropy(self):
        return self._z_entropy + self.scale.log()


class Normal(_LocScale, ExponentialFamily):
    """Normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``."""
    _z_entropy, _z_variance = 0.5 + _LOG_SQRT_2PI, 1.0
    _mean_carrier_measure = 0

    def _z_noise(self, shape):
        return _standard_normal(shape, self.loc.dtype, self.loc.device)

    def sample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.normal(self.loc.expand(shape), self.scale.expand(shape))

    def _z_log_prob(self, z):
        return -0.5 * z.pow(2) - _LOG_SQRT_2PI

    def _z_cdf(self, z):
        return 0.5 * (1 + ember.erf(z / math.sqrt(2)))

    def _z_icdf(self, p):
        return math.sqrt(2) * ember.erfinv(2 * p - 1)

    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * ember.log(-math.pi / y)


class Laplace(_LocScale):
    """Laplace (double exponential) distribution with location ``loc`` and scale ``scale``."""
    _z_entropy, _z_variance = 1 + math.log(2), 2.0

    def _z_noise(self, shape):
        # u uniform on (-1, 1) without -1: -sign(u) log(1 - |u|) is standard Laplace
        u = uniform(shape, self.loc, ember.finfo(self.loc.dtype).eps - 1, 1)
        return -u.sign() * ember.log1p(-u.abs())

    def _z_log_prob(self, z):
        return -z.abs() - math.log(2)

    def _z_cdf(self, z):
        return 0.5 - 0.5 * z.sign() * ember.expm1(-z.abs())

    def _z_icdf(self, p):
        t = p - 0.5
        return -t.sign() * ember.log1p(-2 * t.abs())


class Cauchy(_LocScale):
    """Cauchy (Lorentz) distribution with median ``loc`` and half width at half maximum
    ``scale``."""
    _z_entropy = math.log(4 * math.pi)

    def _z_noise(self, shape):
        return ember.empty(shape, dtype=self.loc.dtype).cauchy_()

    def _z_log_prob(self, z):
        return -math.log(math.pi) - ember.log1p(z.pow(2))

    def _z_cdf(self, z):
        return ember.atan(z) / math.pi + 0.5

    def _z_icdf(self, p):
        return ember.tan(math.pi * (p - 0.5))

    @property
    def mean(self):
        return _full(self, math.nan)

    @property
    def variance(self):
        return _full(self, math.inf)

    stddev = variance


# ---- other scalar families ---------------------------------------------------------------

class Uniform(Distribution):
    """Uniform distribution on the half-open interval ``[low, high)``."""
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        super().__init__(set_params(self, low=low, high=high), validate_args=validate_args)

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    mean = property(lambda self: (self.high + self.low) / 2)
    mode = property(lambda self: math.nan * self.high)
    stddev = property(lambda self: (self.high - self.low) / 12 ** 0.5)
    variance = property(lambda self: (self.high - self.low).pow(2) / 12)

    def rsample(self, sample_shape=ember.Size()):
        u = ember.rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def _log_prob(self, value):
        inside = (self.low <= value).type_as(self.low) * (value < self.high).type_as(self.low)
        return inside.log() - (self.high - self.low).log()

    def _cdf(self, value):
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def _icdf(self, value):
        return self.low + value * (self.high - self.low)

    def entropy(self):
        return (self.high - self.low).log()


class Exponential(ExponentialFamily):
    """Exponential distribution with rate ``rate`` (mean ``1 / rate``)."""
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args=None):
        super().__init__(set_params(self, rate=rate), validate_args=validate_args)

    mean = property(lambda self: self.rate.reciprocal())
    mode = property(lambda self: ember.zeros_like(self.rate))
    stddev = mean
    variance = property(lambda self: self.rate.pow(-2))

    def rsample(self, sample_shape=ember.Size()):
        e = ember.empty(self._extended_shape(sample_shape), dtype=self.rate.dtype).exponential_()
        return e / self.rate

    def _log_prob(self, value):
        return self.rate.log() - self.rate * value

    def _cdf(self, value):
        return 1 - ember.exp(-self.rate * value)

    def _icdf(self, value):
        return -ember.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()

    _natural_params = property(lambda self: (-self.rate,))

    def _log_normalizer(self, x):
        return -ember.log(-x)


class Gamma(ExponentialFamily):
    """Gamma distribution with shape ``concentration`` and rate ``rate``."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        shape = set_params(self, concentration=concentration, rate=rate)
        super().__init__(shape, validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    mode = property(lambda self: ((self.concentration - 1) / self.rate).clamp(min=0))
    variance = property(lambda self: self.concentration / self.rate.pow(2))

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        x = ember._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # keep the draw off zero (tiny concentrations underflow) without touching its gradient
        x.detach().clamp_(min=ember.finfo(x.dtype).tiny)
        return x

    def _log_prob(self, value):
        c, r = self.concentration, self.rate
        value = ember.as_tensor(value, dtype=r.dtype)
        return ember.xlogy(c, r) + ember.xlogy(c - 1, value) - r * value - ember.lgamma(c)

    def _cdf(self, value):
        # the regularised lower incomplete gamma function P(concentration, rate * x)
        return ember.special.gammainc(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + ember.lgamma(c) + (1.0 - c) * ember.digamma(c)

    _natural_params = property(lambda self: (self.concentration - 1, -self.rate))

    def _log_normalizer(self, x, y):
        return ember.lgamma(x + 1) + (x + 1) * ember.log(-y.reciprocal())


class Chi2(Gamma):
    """Chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``."""
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, ember.full_like(df, 0.5), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return Gamma.expand(self, batch_shape, _instance or self.__new__(Chi2))

    df = property(lambda self: self.concentration * 2)


class Beta(ExponentialFamily):
    """Beta distribution on (0, 1) with concentrations ``concentration1`` (alpha) and
    ``concentration0`` (beta)."""
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        from .multivariate import Dirichlet
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(ember.stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = ember.Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    concentration1 = property(lambda self: self._dirichlet.concentration[..., 0])
    concentration0 = property(lambda self: self._dirichlet.concentration[..., 1])
    mean = property(lambda self: self.concentration1 / (self.concentration1 + self.concentration0))
    mode = property(lambda self: self._dirichlet.mode[..., 0])

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        total = a + b
        return a * b / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=ember.Size()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def sample(self, sample_shape=ember.Size()):
        return self._dirichlet.sample(sample_shape).select(-1, 0)

    def _log_prob(self, value):
        return self._dirichlet.log_prob(ember.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    _natural_params = property(lambda self: (self.concentration1, self.concentration0))
    _mean_carrier_measure = 0

    def _log_normalizer(self, x, y):
        return ember.lgamma(x) + ember.lgamma(y) - ember.lgamma(x + y)


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale
    ``scale``."""
    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        shape = set_params(self, df=df, loc=loc, scale=scale)
        self._chi2 = Chi2(self.df)
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = Distribution.expand(self, batch_shape, _instance)
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        return ember.where(self.df > 1, self.loc, math.nan)

    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        return ember.where(df > 2, finite, ember.where(df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=ember.Size()):
        # T = Z / sqrt(V / df) with Z standard normal and V chi-squared(df)
        z = _standard_normal(self._extended_shape(sample_shape), self.df.dtype, self.df.device)
        v = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * z * ember.rsqrt(v / self.df)

    def _log_prob(self, value):
        df = self.df
        y = (value - self.loc) / self.scale
        norm = (self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi)
                + ember.lgamma(0.5 * df) - ember.lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * ember.log1p(y.pow(2) / df) - norm

    def entropy(self):
        df = self.df
        lbeta = ember.lgamma(0.5 * df) + math.lgamma(0.5) - ember.lgamma(0.5 * (df + 1))
        return (self.scale.log() + 0.5 * (df + 1) * (ember.digamma(0.5 * (df + 1))
                                                      - ember.digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)


class FisherSnedecor(Distribution):
    """Fisher-Snedecor (F) distribution with ``df1`` and ``df2`` degrees of freedom."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        shape = set_params(self, df1=df1, df2=df2)
        self._gamma1 = Gamma(0.5 * self.df1, 0.5 * self.df1)
        self._gamma2 = Gamma(0.5 * self.df2, 0.5 * self.df2)
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = Distribution.expand(self, batch_shape, _instance)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        d2 = self.df2
        return ember.where(d2 > 2, d2 / (d2 - 2), math.nan)

    @property
    def mode(self):
        d1, d2 = self.df1, self.df2
        return ember.where(d1 > 2, (d1 - 2) / d1, math.nan) * d2 / (d2 + 2)

    @property
    def variance(self):
        d1, d2 = self.df1, self.df2
        v = 2 * d2.pow(2) * (d1 + d2 - 2) / (d1 * (d2 - 2).pow(2) * (d2 - 4))
        return ember.where(d2 > 4, v, math.nan)

    def rsample(self, sample_shape=ember.Size()):
        tiny = ember.finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape)
        x2 = self._gamma2.rsample(sample_shape).clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def _log_prob(self, value):
        h1, h2 = 0.5 * self.df1, 0.5 * self.df2
        ratio = self.df1 / self.df2
        log_norm = ember.lgamma(h1 + h2) - ember.lgamma(h1) - ember.lgamma(h2)
        return (log_norm + h1 * ratio.log() + (h1 - 1) * ember.log(value)
                - (h1 + h2) * ember.log1p(ratio * value))


# ---- circular: von Mises -----------------------------------------------------------------

# Polynomial approximations of the modified Bessel functions I0, I1 (Abramowitz & Stegun
# 9.8.1-9.8.4): one polynomial in (x/3.75)^2 below 3.75, one in 3.75/x above.
_BESSEL = {
    0: ([1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813],
        [0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706,
         0.02635537, -0.01647633, 0.00392377]),
    1: ([0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411],
        [0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555, 0.02282967,
         -0.02895312, 0.01787654, -0.00420059]),
}


def _horner(y, coefs):
    out = coefs[-1]
    for c in reversed(coefs[:-1]):
        out = c + y * out
    return out


def _log_bessel(x, order):
    small_c, large_c = _BESSEL[order]
    small = _horner((x / 3.75).pow(2), small_c)
    if order == 1:
        small = x.abs() * small
    large = x - 0.5 * x.log() + _horner(3.75 / x, large_c).log()
    return ember.where(x < 3.75, small.log(), large)


class VonMises(Distribution):
    """von Mises distribution on the circle with mean direction ``loc`` (radians) and
    ``concentration``."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real

    def __init__(self, loc, concentration, validate_args=None):
        shape = set_params(self, loc=loc, concentration=concentration)
        super().__init__(shape, validate_args=validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        k = self.concentration
        return 1 - (_log_bessel(k, 1) - _log_bessel(k, 0)).exp()

    def _log_prob(self, value):
        k = self.concentration
        return k * ember.cos(value - self.loc) - math.log(2 * math.pi) - _log_bessel(k, 0)

    def sample(self, sample_shape=ember.Size()):
        """Best & Fisher's (1979) rejection sampler in double precision. Every round draws for
        every place and a place accepted again takes the newer draw, as PyTorch's sampler does:
        the same seed gives PyTorch's samples."""
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            loc = self.loc.double().expand(shape)
            k = self.concentration.double().expand(shape)
            tau = 1 + (1 + 4 * k.pow(2)).sqrt()
            rho = (tau - (2 * tau).sqrt()) / (2 * k)
            r = ember.where(k < 1e-5, 1 / k + k, (1 + rho.pow(2)) / (2 * rho))
            x = ember.zeros(shape, dtype=ember.float64)
            done = ember.zeros(shape, dtype=ember.bool)
            while not bool(done.all()):
                u1, u2, u3 = ember.rand((3,) + tuple(shape), dtype=ember.float64).unbind()
                z = ember.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = k * (r - f)
                accept = (c * (2 - c) - u2 > 0) | ((c / u2).log() + 1 - c >= 0)
                x = ember.where(accept, (u3 - 0.5).sign() * f.acos(), x)
                done = done | accept
            wrapped = (x + math.pi + loc) % (2 * math.pi) - math.pi
            return wrapped.to(self.loc.dtype)


# ---- continuous Bernoulli ----------------------------------------------------------------

class ContinuousBernoulli(ProbsOrLogits, ExponentialFamily):
    """Density proportional to p^x (1-p)^(1-x) on [0, 1]. Near p = 1/2 (inside ``lims``) the
    closed forms divide 0 by 0, so Taylor expansions around 1/2 are used there."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        number = is_number(probs if probs is not None else logits)
        (param,) = self._set_probs_or_logits(probs, logits)
        if probs is not None:
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(ember.Size() if number else param.shape, validate_args=validate_args)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _stable(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return ember.where(self._stable(), self.probs, self._lims[0])

    def _log_norm(self):
        p = self._cut_probs()
        # log C(p) = log|log(1-p) - log p| - log|1 - 2p|, the last split by side of 1/2
        low = ember.log1p(-2.0 * ember.where(p <= 0.5, p, 0.0))
        high = ember.log(2.0 * ember.where(p >= 0.5, p, 1.0) - 1.0)
        exact = ember.log(ember.abs(ember.log1p(-p) - ember.log(p))) - ember.where(p <= 0.5,
                                                                                 low, high)
        x = (self.probs - 0.5).pow(2)
        return ember.where(self._stable(), exact,
                           math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x)

    @property
    def mean(self):
        p = self._cut_probs()
        exact = p / (2.0 * p - 1.0) + 1.0 / (ember.log1p(-p) - ember.log(p))
        x = self.probs - 0.5
        return ember.where(self._stable(), exact, 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x)

    @property
    def variance(self):
        p = self._cut_probs()
        exact = p * (p - 1.0) / (1.0 - 2.0 * p).pow(2) + 1.0 / (ember.log1p(-p)
                                                                 - ember.log(p)).pow(2)
        x = (self.probs - 0.5).pow(2)
        return ember.where(self._stable(), exact,
                           1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x)

    def rsample(self, sample_shape=ember.Size()):
        return self.icdf(ember.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype))

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            return self.rsample(sample_shape)

    def _log_prob(self, value):
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") \
            + self._log_norm()

    def _cdf(self, value):
        p = self._cut_probs()
        exact = (p.pow(value) * (1.0 - p).pow(1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inner = ember.where(self._stable(), exact, value)
        return ember.where(value <= 0.0, ember.zeros_like(value),
                           ember.where(value >= 1.0, ember.ones_like(value), inner))

    def _icdf(self, value):
        p = self._cut_probs()
        exact = (ember.log1p(-p + value * (2.0 * p - 1.0)) - ember.log1p(-p)) / (
            ember.log(p) - ember.log1p(-p))
        return ember.where(self._stable(), exact, value)

    def entropy(self):
        log0, log1 = ember.log1p(-self.probs), ember.log(self.probs)
        return self.mean * (log0 - log1) - self._log_norm() - log0

    _natural_params = property(lambda self: (self.logits,))

    def _log_normalizer(self, x):
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        stable = (x <= lo) | (x > hi)
        cut = ember.where(stable, x, lo)
        exact = ember.log(ember.abs(ember.expm1(cut))) - ember.log(ember.abs(cut))
        return ember.where(stable, exact, 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._lims = self._lims
        return new


# ---- families built by transforming a simpler one ----------------------------------------

class LogNormal(TransformedFamily):
    """Log-normal distribution: ``exp(X)`` for ``X ~ Normal(loc, scale)``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True
    _ctor = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(),
                         validate_args=validate_args)

    loc = property(lambda self: self.base_dist.loc)
    scale = property(lambda self: self.base_dist.scale)
    mean = property(lambda self: (self.loc + self.scale.pow(2) / 2).exp())
    mode = property(lambda self: (self.loc - self.scale.pow(2)).exp())

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class _Folded(TransformedFamily):
    """|X| for X symmetric about zero: density and CDF doubled on the non-negative half."""
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _ctor = ("scale",)

    def __init__(self, scale, validate_args=None):
        base = self._base_family(0.0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    scale = property(lambda self: self.base_dist.scale)
    mode = property(lambda self: ember.zeros_like(self.scale))

    def _log_prob(self, value):
        value = ember.as_tensor(value, dtype=self.scale.dtype)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return ember.where(value >= 0, lp, -math.inf)

    def _cdf(self, value):
        return 2 * self.base_dist.cdf(value) - 1

    def _icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """Half-normal distribution: ``|X|`` for ``X ~ Normal(0, scale)``."""
    _base_family = Normal
    mean = property(lambda self: self.scale * math.sqrt(2 / math.pi))
    variance = property(lambda self: self.scale.pow(2) * (1 - 2 / math.pi))


class HalfCauchy(_Folded):
    """Half-Cauchy distribution: ``|X|`` for ``X ~ Cauchy(0, scale)``."""
    _base_family = Cauchy
    mean = property(lambda self: ember.full(self._extended_shape(), math.inf,
                                            dtype=self.scale.dtype))
    variance = mean


class Gumbel(TransformedFamily):
    """Gumbel (type-I extreme value) distribution with location ``loc`` and scale ``scale``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _ctor = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        info = ember.finfo(self.loc.dtype)
        base = Uniform(ember.full_like(self.loc, info.tiny), ember.full_like(self.loc,
                                                                             1 - info.eps),
                       validate_args=validate_args)
        # X = loc - scale * log(-log U)
        chain = [ExpTransform().inv, AffineTransform(loc=0, scale=-ember.ones_like(self.scale)),
                 ExpTransform().inv, AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base, chain, validate_args=validate_args)

    def _log_prob(self, value):
        z = (self.loc - value) / self.scale
        return (z - z.exp()) - self.scale.log()

    mean = property(lambda self: self.loc + self.scale * euler_constant)
    mode = property(lambda self: self.loc)
    stddev = property(lambda self: (math.pi / math.sqrt(6)) * self.scale)
    variance = property(lambda self: self.stddev.pow(2))

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)


class Pareto(TransformedFamily):
    """Pareto type-I distribution with minimum ``scale`` and tail index ``alpha``."""
    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    _ctor = ("scale", "alpha")

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha, validate_args=validate_args),
                         [ExpTransform(), AffineTransform(loc=0, scale=self.scale)],
                         validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    mode = property(lambda self: self.scale)

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Weibull(TransformedFamily):
    """Weibull distribution with scale ``scale`` and shape ``concentration``."""
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    _ctor = ("scale", "concentration")

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        super().__init__(Exponential(ember.ones_like(self.scale), validate_args=validate_args),
                         [PowerTransform(exponent=self.concentration_reciprocal),
                          AffineTransform(loc=0, scale=self.scale)],
                         validate_args=validate_args)

    mean = property(lambda self: self.scale * ember.lgamma(1 + self.concentration_reciprocal)
                    .exp())

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (ember.lgamma(1 + 2 * r).exp()
                                    - ember.lgamma(1 + r).mul(2).exp())

    def entropy(self):
        r = self.concentration_reciprocal
        return euler_constant * (1 - r) + ember.log(self.scale * r) + 1


class Kumaraswamy(TransformedFamily):
    """X = (1 - U^(1/b))^(1/a) for U uniform on (0, 1)."""
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True
    _ctor = ("concentration1", "concentration0")

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(ember.zeros_like(self.concentration0),
                       ember.ones_like(self.concentration0), validate_args=validate_args)
        chain = [PowerTransform(exponent=self.concentration0.reciprocal()),
                 AffineTransform(loc=1.0, scale=-1.0),
                 PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, chain, validate_args=validate_args)

    def _raw_moment(self, n):
        # E[X^n] = b * B(1 + n/a, b)
        a, b = self.concentration1, self.concentration0
        s = 1 + n / a
        return b * (ember.lgamma(s) + ember.lgamma(b) - ember.lgamma(s + b)).exp()

    mean = property(lambda self: self._raw_moment(1))
    variance = property(lambda self: self._raw_moment(2) - self.mean.pow(2))

    @property
    def mode(self):
        # the density's maximum, ((a - 1) / (ab - 1))^(1/a), exists when a >= 1 and b >= 1
        # (PyTorch 2.13's formula, (1 - b)^(1/b) / (1 - ab), returns NaN there instead)
        a, b = self.concentration1, self.concentration0
        m = ((a - 1) / (a * b - 1)).pow(a.reciprocal())
        return ember.where((b < 1) | (a < 1), math.nan, m)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic = ember.digamma(b + 1) + euler_constant
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - a.log() - b.log()
