"""The distribution families and KL pairs added after the first cut, against
torch.distributions: LKJCholesky, Wishart, InverseGamma, LogisticNormal, GeneralizedPareto,
OneHotCategoricalStraightThrough, Gamma/Chi2 cdf, every KL pair PyTorch registers, and
PyTorch's per-family module paths (``ember.distributions.normal`` ...)."""
import importlib
import math
import pkgutil
import warnings

import numpy as np
import pytest

import ember
import ember.distributions as ED
from helpers import to_np

R = np.random.default_rng(23)


def _close(a, b, tol=1e-6):
    np.testing.assert_allclose(to_np(a).astype(np.float64), to_np(b).astype(np.float64),
                               rtol=tol, atol=tol, equal_nan=True)


def _conv(mod, v, dtype="float64"):
    if isinstance(v, np.ndarray):
        return mod.tensor(v.tolist(), dtype=getattr(mod, dtype))
    return v


def _pair(torch, name, dtype="float64", **params):
    """The same family with the same parameters in ember and in torch."""
    e = getattr(ED, name)(**{k: _conv(ember, v, dtype) for k, v in params.items()})
    t = getattr(torch.distributions, name)(**{k: _conv(torch, v, dtype)
                                              for k, v in params.items()})
    return e, t


def _spd(*batch, n=3):
    a = R.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _compare_methods(e, t, x, methods=("mean", "mode", "variance", "entropy", "log_prob",
                                       "cdf"), tol=1e-6):
    """Each method's value in ember and in torch; where torch raises NotImplementedError
    (Wishart's cdf, say), ember must raise it too."""
    xe = ember.tensor(x.numpy().tolist(), dtype=getattr(ember, str(x.dtype).split(".")[1]))

    def call(d, m, v):
        if m in ("log_prob", "cdf", "icdf"):
            return getattr(d, m)(v)
        return d.entropy() if m == "entropy" else getattr(d, m)

    for m in methods:
        try:
            expected = call(t, m, x)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                call(e, m, xe)
            continue
        _close(call(e, m, xe), expected, tol)


def test_gamma_and_chi2_cdf(torch):
    c, r = R.uniform(0.2, 5, 6), R.uniform(0.3, 3, 6)
    x = torch.tensor(R.uniform(0.01, 6, (2, 6)))
    for e, t in (_pair(torch, "Gamma", concentration=c, rate=r), _pair(torch, "Chi2", df=c)):
        _compare_methods(e, t, x, ("cdf",))
    # the cdf is differentiable in the value (igamma's derivative in `other`)
    xe = ember.tensor([0.5, 2.0], dtype=ember.float64, requires_grad=True)
    ED.Gamma(ember.tensor([2.0, 3.0], dtype=ember.float64), 1.5).cdf(xe).sum().backward()
    xt = torch.tensor([0.5, 2.0], dtype=torch.float64, requires_grad=True)
    torch.distributions.Gamma(torch.tensor([2.0, 3.0], dtype=torch.float64), 1.5).cdf(xt) \
        .sum().backward()
    _close(xe.grad, xt.grad)


def test_lkj_cholesky(torch):
    conc = np.array([0.5, 1.0, 2.5])
    e, t = _pair(torch, "LKJCholesky", dim=4, concentration=conc)
    torch.manual_seed(0)
    x = t.sample((5,))
    _compare_methods(e, t, x, ("log_prob",))
    assert tuple(e.event_shape) == (4, 4) and tuple(e.batch_shape) == (3,)
    s = e.sample((4000,))
    assert tuple(s.shape) == (4000, 3, 4, 4)
    assert bool(e.support.check(s).all())
    # the onion method makes r_10 of LKJ(d, eta) have mean 0 and variance 1 / (2 eta + d - 1)
    corr = s @ s.mT
    np.testing.assert_allclose(to_np(corr[..., 1, 0].pow(2).mean(0)), 1 / (2 * conc + 3),
                               rtol=0.1)
    assert np.all(np.abs(to_np(corr[..., 1, 0].mean(0))) < 0.05)
    # PyTorch's sampler (the same algorithm) gives the other entries their own spread: match it
    tc = (lambda u: u @ u.mT)(t.sample((4000,)))
    for i, j in ((2, 0), (3, 1), (3, 2)):
        np.testing.assert_allclose(to_np(corr[..., i, j].pow(2).mean(0)),
                                   tc[..., i, j].pow(2).mean(0).numpy(), rtol=0.12)
    ex = e.expand((2, 3))
    assert tuple(ex.sample().shape) == (2, 3, 4, 4)
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal "
                                         "to 2. Found dim=1."):
        ED.LKJCholesky(1, 1.0)


@pytest.mark.parametrize("form", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart(torch, form):
    m = _spd(2)
    param = np.linalg.cholesky(m) if form == "scale_tril" else m
    df = np.array([4.0, 6.5])
    e, t = _pair(torch, "Wishart", df=df, **{form: param})
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch 2.13 warns "Singular sample" every time
        x = t.sample((3,))
    _compare_methods(e, t, x)
    _close(e.covariance_matrix, t.covariance_matrix)
    _close(e.precision_matrix, t.precision_matrix)
    # Bregman divergence between two Wisharts (no closed form registered) as PyTorch's
    e2, t2 = _pair(torch, "Wishart", df=df + 1, covariance_matrix=_spd(2))
    _close(ED.kl_divergence(e, e2), torch.distributions.kl_divergence(t, t2), tol=1e-5)


def test_wishart_sampling_and_errors(torch):
    cov = ember.tensor(_spd(n=2).tolist(), dtype=ember.float64, requires_grad=True)
    w = ED.Wishart(ember.tensor(5.0, dtype=ember.float64), covariance_matrix=cov)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # valid samples are not reported as singular
        s = w.rsample((4000,))
    assert bool(w.support.check(s).all())
    # sd of an entry's sample mean is about 0.1 here
    np.testing.assert_allclose(to_np(s.mean(0).detach()), 5 * to_np(cov.detach()), rtol=0.05,
                               atol=0.5)
    # reparameterised: d E[sum of sample] / d cov = df * ones
    s.mean(0).sum().backward()
    np.testing.assert_allclose(to_np(cov.grad), 5 * np.ones((2, 2)), rtol=0.1)
    with pytest.raises(ValueError, match=r"expected to be greater than ndim - 1 = 1"):
        ED.Wishart(ember.tensor(0.5), covariance_matrix=ember.eye(2))
    with pytest.raises(AssertionError, match="Exactly one of covariance_matrix"):
        ED.Wishart(3.0)
    with pytest.warns(UserWarning, match="Low df values detected"):
        ED.Wishart(ember.tensor(1.5), covariance_matrix=ember.eye(2))


def test_inverse_gamma_logistic_normal_generalized_pareto(torch):
    c, r = R.uniform(0.5, 4, 5), R.uniform(0.5, 3, 5)
    e, t = _pair(torch, "InverseGamma", concentration=c, rate=r)
    torch.manual_seed(0)
    _compare_methods(e, t, t.sample((4,)))
    _compare_methods(e, t, torch.full((5,), 0.3, dtype=torch.float64), ("icdf",))

    e, t = _pair(torch, "LogisticNormal", loc=R.standard_normal((2, 3)),
                 scale=R.uniform(0.5, 2, (2, 3)))
    _compare_methods(e, t, t.sample((4,)), ("log_prob",))
    s = e.rsample((6,))
    assert tuple(s.shape) == (6, 2, 4) and bool(e.support.check(s).all())

    loc, scale = R.standard_normal(6), R.uniform(0.5, 2, 6)
    conc = np.array([0.0, 0.3, -0.2, 0.6, -0.5, 0.1])
    # float32: PyTorch compares the concentration with a float32 zero (isclose refuses float64)
    e, t = _pair(torch, "GeneralizedPareto", "float32", loc=loc, scale=scale,
                 concentration=conc)
    x = t.sample((4,))
    _compare_methods(e, t, x, tol=1e-5)
    xe = ember.tensor(x.numpy().tolist())
    _close(e.log_survival_function(xe), t.log_survival_function(x), 1e-5)
    u = torch.rand(3, 6)
    _close(e.icdf(ember.tensor(u.numpy().tolist())), t.icdf(u), 1e-5)
    assert bool(e.support.check(e.rsample((50,))).all())


def test_one_hot_straight_through_gradient(torch):
    p = ember.tensor([0.2, 0.3, 0.5], requires_grad=True)
    ember.manual_seed(0)
    y = ED.OneHotCategoricalStraightThrough(p).rsample((3,))
    assert bool((y.detach().sum(-1) == 1).all())
    (y * ember.arange(3.0)).sum().backward()
    pt = torch.tensor([0.2, 0.3, 0.5], requires_grad=True)
    yt = torch.distributions.OneHotCategoricalStraightThrough(pt).rsample((3,))
    (yt * torch.arange(3.0)).sum().backward()
    _close(p.grad, pt.grad)  # the straight-through gradient does not depend on the draw


# ---- KL: every pair PyTorch registers --------------------------------------------------

def _family_params(name, variant):
    """Parameters (a batch of 4) for the KL tests; ``variant`` shifts them so p != q. The
    scalar families' values straddle the support edges that make some pairs infinite."""
    v = variant
    pos = np.array([0.5, 1.3, 2.0, 3.7]) + 0.4 * v
    real = np.array([-1.0, 0.2, 0.7, 2.0]) - 0.5 * v
    unit = np.array([0.1, 0.3, 0.55, 0.9]) - 0.05 * v
    vec = R.uniform(0.2, 1.0, (4, 3))
    return {
        "Bernoulli": dict(probs=unit),
        "Beta": dict(concentration1=pos, concentration0=pos[::-1].copy()),
        "Binomial": dict(total_count=np.full(4, 10.0), probs=unit),
        "Categorical": dict(probs=vec / vec.sum(-1, keepdims=True)),
        "Cauchy": dict(loc=real, scale=pos),
        "ContinuousBernoulli": dict(probs=np.array([0.1, 0.4995, 0.7, 0.9]) - 0.05 * v),
        "Dirichlet": dict(concentration=vec * 3),
        "Exponential": dict(rate=pos),
        "Gamma": dict(concentration=pos, rate=pos[::-1].copy()),
        "Geometric": dict(probs=unit),
        "Gumbel": dict(loc=real, scale=pos),
        "HalfNormal": dict(scale=pos),
        "Laplace": dict(loc=real, scale=pos),
        "LowRankMultivariateNormal": dict(loc=R.standard_normal((4, 3)),
                                          cov_factor=R.standard_normal((4, 3, 2)),
                                          cov_diag=R.uniform(0.5, 2, (4, 3))),
        "MultivariateNormal": dict(loc=R.standard_normal((4, 3)),
                                   scale_tril=np.linalg.cholesky(_spd(4))),
        "Normal": dict(loc=real, scale=pos),
        "OneHotCategorical": dict(probs=vec / vec.sum(-1, keepdims=True)),
        "Pareto": dict(scale=pos, alpha=np.array([0.8, 1.5, 2.5, 4.0]) + v),
        "Poisson": dict(rate=pos),
        "Uniform": dict(low=np.array([-0.5, 0.1, 0.0, 1.0]) + 0.05 * v,
                        high=np.array([0.5, 0.9, 1.0, 3.0]) + 0.05 * v),
    }[name]


def _kl_pairs():
    torch = pytest.importorskip("torch")
    from torch.distributions.kl import _KL_REGISTRY
    return sorted((p.__name__, q.__name__) for p, q in _KL_REGISTRY)


# pairs checked elsewhere: the wrappers (test_distributions.py) and the Bregman fallback
# (test_wishart above and test_distributions.py)
_ELSEWHERE = {("Independent", "Independent"), ("TransformedDistribution",
                                               "TransformedDistribution"),
              ("ExponentialFamily", "ExponentialFamily")}


def test_kl_registry_matches_torch(torch):
    from torch.distributions.kl import _KL_REGISTRY as T
    from ember.distributions.kl import _KL_REGISTRY as E
    def names(registry, package):  # leaving out pairs other tests register
        return sorted((p.__name__, q.__name__) for p, q in registry
                      if p.__module__.startswith(package) and q.__module__.startswith(package))
    assert names(E, "ember.distributions") == names(T, "torch.distributions")
    assert len(names(T, "torch.distributions")) == 87


@pytest.mark.parametrize("p_name,q_name", [pq for pq in _kl_pairs() if pq not in _ELSEWHERE])
def test_kl_pair_matches_torch(torch, p_name, q_name):
    ep, tp = _pair(torch, p_name, **_family_params(p_name, 0))
    eq, tq = _pair(torch, q_name, **_family_params(q_name, 1))
    expected = torch.distributions.kl_divergence(tp, tq)
    got = ED.kl_divergence(ep, eq)
    assert tuple(got.shape) == tuple(expected.shape)
    _close(got, expected, tol=1e-6)


def test_kl_not_implemented_as_torch(torch):
    # q with more trials than p: PyTorch raises NotImplementedError
    ep, tp = _pair(torch, "Binomial", total_count=np.full(2, 5.0), probs=np.array([.2, .4]))
    eq, tq = _pair(torch, "Binomial", total_count=np.full(2, 8.0), probs=np.array([.3, .5]))
    with pytest.raises(NotImplementedError):
        torch.distributions.kl_divergence(tp, tq)
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        ED.kl_divergence(ep, eq)
    # Independent pairs reinterpreting different numbers of dims
    base = dict(loc=np.zeros((2, 3)), scale=np.ones((2, 3)))
    en, tn = _pair(torch, "Normal", **base)
    with pytest.raises(NotImplementedError):
        torch.distributions.kl_divergence(torch.distributions.Independent(tn, 1),
                                          torch.distributions.Independent(tn, 2))
    with pytest.raises(NotImplementedError):
        ED.kl_divergence(ED.Independent(en, 1), ED.Independent(en, 2))
    # no closed form across these families: neither registers one
    with pytest.raises(NotImplementedError, match="No KL"):
        ED.kl_divergence(ED.Beta(1.0, 2.0), ED.Laplace(0.0, 1.0))
    with pytest.raises(NotImplementedError):
        torch.distributions.kl_divergence(torch.distributions.Beta(1.0, 2.0),
                                          torch.distributions.Laplace(0.0, 1.0))


# ---- module paths ------------------------------------------------------------------------

def test_module_paths_match_torch(torch):
    import torch.distributions as TD
    names = [m.name for m in pkgutil.iter_modules(TD.__path__)]
    assert "normal" in names and "wishart" in names
    for name in names:
        tmod = importlib.import_module(f"torch.distributions.{name}")
        emod = importlib.import_module(f"ember.distributions.{name}")
        assert getattr(ED, name) is emod
        for attr in getattr(tmod, "__all__", ()):
            assert hasattr(emod, attr), f"ember.distributions.{name} lacks {attr}"
    from ember.distributions.normal import Normal
    from ember.distributions.one_hot_categorical import OneHotCategoricalStraightThrough
    assert Normal is ED.Normal and OneHotCategoricalStraightThrough.has_rsample
    assert sorted(set(TD.__all__) - set(ED.__all__)) == []
    assert math.isclose(float(Normal(0.0, 1.0).cdf(ember.tensor(0.0))), 0.5)


def test_gaussian_kl_event_shape_errors_as_torch(torch):
    def gaussians(mod, n):
        D = mod.distributions
        return (D.MultivariateNormal(mod.zeros(n), mod.eye(n)),
                D.LowRankMultivariateNormal(mod.zeros(n), mod.ones(n, 1), mod.ones(n)))
    for i in range(2):
        for j in range(2):
            with pytest.raises(ValueError) as t:
                torch.distributions.kl_divergence(gaussians(torch, 2)[i], gaussians(torch, 3)[j])
            with pytest.raises(ValueError) as e:
                ED.kl_divergence(gaussians(ember, 2)[i], gaussians(ember, 3)[j])
            assert str(e.value) == str(t.value)
