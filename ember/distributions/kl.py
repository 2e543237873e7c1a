"""KL divergence KL(p || q) between distributions: a registry of closed forms keyed by the
pair of classes, dispatched to the most specific registered pair (by method resolution order),
with a Bregman-divergence fallback for two members of the same exponential family."""
import math
import warnings

import ember
import ember.nn.functional as F

from .continuous import (Beta, Exponential, Gamma, Gumbel, HalfNormal, Laplace, Normal, Pareto,
                         Uniform, euler_constant)
from .discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from .exp_family import ExponentialFamily
from .independent import Independent
from .multivariate import Dirichlet, LowRankMultivariateNormal, MultivariateNormal, \
    _half_log_det, _mahalanobis
from .transformed_distribution import TransformedDistribution
from .utils import _sum_rightmost

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY = {}
_KL_MEMOIZE = {}


def register_kl(type_p, type_q):
    """Decorator: ``fn(p, q)`` computes KL(p || q) for p of ``type_p`` and q of ``type_q``."""
    if not (isinstance(type_p, type) and isinstance(type_q, type)):
        raise TypeError(f"Expected type_p and type_q to be Distribution subclasses but got "
                        f"{type_p} and {type_q}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn
    return decorator


def _dispatch_kl(type_p, type_q):
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return NotImplemented

    def rank(pair, first):
        dp, dq = type_p.__mro__.index(pair[0]), type_q.__mro__.index(pair[1])
        return (dp, dq) if first else (dq, dp)
    left = min(matches, key=lambda m: rank(m, True))
    right = min(matches, key=lambda m: rank(m, False))
    if _KL_REGISTRY[left] is not _KL_REGISTRY[right]:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please "
                      f"register_kl({left[0].__name__}, {right[1].__name__})", RuntimeWarning)
    return _KL_REGISTRY[left]


def kl_divergence(p, q):
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch_kl(*key)
    fn = _KL_MEMOIZE[key]
    if fn is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fn(p, q)


def _inf_where(value, mask):
    return ember.where(mask, math.inf, value)


def _zero_where(value, mask):
    return ember.where(mask, 0.0, value)


# ---- same family -------------------------------------------------------------------------

@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # each outcome's term, with 0 log 0 = 0 and p log(p / 0) = inf
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = _zero_where(_inf_where(t1, q.probs == 0), p.probs == 0)
    t0 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t0 = _zero_where(_inf_where(t0, q.probs == 1), p.probs == 1)
    return t1 + t0


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _inf_where(t, (q.probs == 0).expand_as(t))
    return _zero_where(t, (p.probs == 0).expand_as(t)).sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where(result, (q.low > p.low) | (q.high < p.high))


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    gap = (p.loc - q.loc).abs()
    return -scale_ratio.log() + gap / q.scale + scale_ratio * ember.exp(-gap / p.scale) - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    return (q.concentration * ember.log(p.rate / q.rate)
            + ember.lgamma(q.concentration) - ember.lgamma(p.concentration)
            + (p.concentration - q.concentration) * ember.digamma(p.concentration)
            + (q.rate - p.rate) * (p.concentration / p.rate))


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    s1, s2 = a1 + b1, a2 + b2
    return (a2.lgamma() + b2.lgamma() + s1.lgamma() - a1.lgamma() - b1.lgamma() - s2.lgamma()
            + (a1 - a2) * a1.digamma() + (b1 - b2) * b1.digamma()
            + (s2 - s1) * s1.digamma())


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    cp, cq = p.concentration, q.concentration
    sp, sq = cp.sum(-1), cq.sum(-1)
    return (sp.lgamma() - sq.lgamma() - (cp.lgamma() - cq.lgamma()).sum(-1)
            + ((cp - cq) * (cp.digamma() - sp.digamma().unsqueeze(-1))).sum(-1))


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - ember.log1p(-q.probs) / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count "
                                  "is not implemented")
    n = p.total_count
    kl = n * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return _inf_where(kl, p.total_count > q.total_count)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t3 = ember.exp(ct2 + (1 + ct1).lgamma() - ct3)
    return -ct1.log() - ct2 + ct3 + ct1 * euler_constant + t3 - (1 + euler_constant)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(result, p.scale < q.scale)


# ---- Gaussians ---------------------------------------------------------------------------

def _gaussian_kl(p, p_factor, p_log_det, q):
    """KL(p || q) for Gaussians, q a MultivariateNormal, p's covariance = A A^T (A given)."""
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {'Low Rank ' if isinstance(p, LowRankMultivariateNormal) else ''}Multivariate Normals with different event shapes cannot be computed")
    q_tril = q._unbroadcasted_scale_tril
    n = p.event_shape[0]
    batch = ember.broadcast_shapes(p_factor.shape[:-2], q_tril.shape[:-2])
    q_full = q_tril.expand(batch + q_tril.shape[-2:])
    trace = ember.linalg.solve(q_full, p_factor.expand(batch + p_factor.shape[-2:])).pow(2)
    trace = trace.sum((-2, -1))
    maha = _mahalanobis(q_tril, q.loc - p.loc)
    return 0.5 * (2 * _half_log_det(q_tril) - p_log_det + trace + maha - n)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    low = p._unbroadcasted_scale_tril
    return _gaussian_kl(p, low, 2 * _half_log_det(low), q)


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    a = ember.cat([p._unbroadcasted_cov_factor.expand(p.batch_shape + p.cov_factor.shape[-2:]),
                   ember.diag_embed(p.cov_diag.sqrt())], -1)
    return _gaussian_kl(p, a, p._log_det(), q)


# ---- across families ---------------------------------------------------------------------

@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    width = p.high - p.low
    t1 = (math.sqrt(2 * math.pi) * q.scale / width).log()
    t2 = width.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    return (-q.concentration * ratio.log() + ratio + q.concentration.lgamma()
            + q.concentration * euler_constant - (1 + euler_constant))


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    m = p.loc / q.scale
    v = (p.scale / q.scale).pow(2)
    c = q.loc / q.scale
    return -0.5 * v.log() + m - c + ember.exp(-m + 0.5 * v + c) - 0.5 * (1 + math.log(2 * math.pi))


# ---- wrappers ----------------------------------------------------------------------------

@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    extra = len(p.event_shape) - len(p.base_dist.event_shape)
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), extra)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """Bregman divergence of the log-normaliser F between the natural parameters:
    F(theta_q) - F(theta_p) - <theta_q - theta_p, grad F(theta_p)>."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    theta_p, lg_p, grads = p._natural_grad()
    result = q._log_normalizer(*q._natural_params) - lg_p
    for tp, tq, g in zip(theta_p, q._natural_params, grads):
        result = result - _sum_rightmost((tq - tp) * g, len(q.event_shape))
    return result
