"""CPU random kernels: the in-place samplers (uniform_, normal_, random_ and its ranges,
bernoulli_, exponential_, geometric_, cauchy_, log_normal_), the tensor-parameter ``normal``
overloads, multinomial, poisson, randperm, and the samplers behind ember.distributions
(``_standard_gamma`` with its reparameterisation gradient ``_standard_gamma_grad``,
``_sample_dirichlet``, ``binomial``). rand/randn/randint/normal(float, float, size),
randint_like, bernoulli and randperm's functional forms are composites over these
(``composite/factory.py``, ``composite/random.py``), as in PyTorch.

Each draws from ``generator`` (or the default generator) through ``ember.random.generator_of``;
argument checks are the meta rules, so both devices reject the same calls.
"""
import math

import numpy as np

from ..._core import complex32 as _complex32
from ..._core import dtype as D
from ..._core import strides as _st
from ...random import generator_of
from ..rules import check_failed
from ..rules.factory import (check_normal, check_uniform, normal_tensor_dtype, random_bounds,
                            random_default_bounds)
from ..rules.random import (binomial_shape, check_bernoulli_float, check_bernoulli_tensor,
                            check_cauchy, check_exponential, check_geometric, check_log_normal,
                            check_poisson, check_randperm, check_standard_gamma,
                            multinomial_shape)
from ._util import nd, wrap


def _work_dtype(d):
    """NumPy float type samples are drawn in: double for double tensors, float otherwise."""
    return np.float64 if d.to_real() is D.float64 else np.float32


def _store(self, values):
    """Write real samples into self; complex tensors take pairs (real, imaginary)."""
    if self._dtype.is_complex:
        values = values[..., 0] + 1j * values[..., 1]
    if self._dtype is D.complex32:  # (NumPy cannot cast into the float16 pair)
        values = _complex32.from_any(values)
    np.copyto(nd(self), values, casting="unsafe")
    return self


def _sample_shape(self):
    return self._size + ((2,) if self._dtype.is_complex else ())


def uniform_(self, from_=0.0, to=1.0, generator=None):
    check_uniform(self, from_, to)
    work = _work_dtype(self._dtype)
    u = generator_of(generator).random(_sample_shape(self), dtype=work)
    if from_ != 0.0 or to != 1.0:
        u *= work(to - from_)
        u += work(from_)
    return _store(self, u)


def normal_(self, mean=0.0, std=1.0, generator=None):
    check_normal(self._dtype, std)
    if self._dtype.is_complex:  # each part gets half the variance, as PyTorch does
        std = std / math.sqrt(2)
    work = _work_dtype(self._dtype)
    z = generator_of(generator).standard_normal(_sample_shape(self), dtype=work)
    if std != 1.0:
        z *= work(std)
    if mean != 0.0:
        z += work(mean)
    return _store(self, z)


def _random(self, low, high, generator):
    """Integers drawn uniformly from [low, high], both ends included."""
    v = generator_of(generator).integers(low, high, self._size, dtype=np.int64, endpoint=True)
    np.copyto(nd(self), v, casting="unsafe")
    return self


def random_(self, generator=None):
    low, high = random_default_bounds(self)
    return _random(self, low, high, generator)


def random__from(self, from_, to, generator=None):
    low, high = random_bounds(self, from_, to)
    return _random(self, low, high, generator)


def random__to(self, to, generator=None):
    low, high = random_bounds(self, 0, to)
    return _random(self, low, high, generator)


def _normal(mean, std, shape, dtype, generator):
    work = _work_dtype(dtype)
    z = generator_of(generator).standard_normal(shape, dtype=work)
    return wrap((z * np.asarray(std, work) + np.asarray(mean, work)).astype(dtype._np, copy=False))


def _check_std_tensor(std):
    if (nd(std) < 0).any():
        raise RuntimeError("normal expects all elements of std >= 0.0")


def normal_Tensor_float(mean, std=1.0, generator=None):
    check_normal(mean._dtype, std)
    return _normal(nd(mean), std, mean._size, mean._dtype, generator)


def normal_float_Tensor(mean, std, generator=None):
    check_normal(std._dtype, 0.0)
    _check_std_tensor(std)
    return _normal(mean, nd(std), std._size, std._dtype, generator)


def normal_Tensor_Tensor(mean, std, generator=None):
    dtype = normal_tensor_dtype(mean, std)
    check_normal(dtype, 0.0)
    shape = _st.broadcast_shapes(mean._size, std._size)
    _check_std_tensor(std)
    return _normal(nd(mean), nd(std), shape, dtype, generator)


# ---------------------------------------------------------------------------------------------
# Permutations and discrete distributions

def randperm_generator_out(n, generator, out):
    check_randperm(n, out._dtype)
    out._resize_metadata((n,))  # PyTorch resizes randperm's out silently
    np.copyto(nd(out), generator_of(generator).permutation(n), casting="unsafe")
    return out


def _work_dtype_of_p(p):
    return np.float64 if p._dtype is D.float64 else np.float32


def bernoulli__Tensor(self, p, generator=None):
    """Each element of self becomes 1 with the probability at the same (broadcast) place of p."""
    check_bernoulli_tensor(self, p)
    probs = nd(p)
    if not ((probs >= 0) & (probs <= 1)).all():  # NaN fails too, as in PyTorch
        raise RuntimeError(check_failed("p_in >= 0 && p_in <= 1"))
    u = generator_of(generator).random(self._size, dtype=_work_dtype_of_p(p))
    np.copyto(nd(self), u < probs, casting="unsafe")
    return self


def bernoulli__float(self, p=0.5, generator=None):
    check_bernoulli_float(self, p)
    u = generator_of(generator).random(self._size, dtype=np.float64)
    np.copyto(nd(self), u < p, casting="unsafe")
    return self


def multinomial(self, num_samples, replacement=False, generator=None):
    """Category indices drawn from each row of (unnormalised) probabilities."""
    shape = multinomial_shape(self, num_samples, replacement)
    rows = self._size[0] if len(self._size) == 2 else 1
    probs = nd(self).astype(np.float64).reshape(rows, self._size[-1])
    if not (np.isfinite(probs) & (probs >= 0)).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    total = probs.sum(axis=1, keepdims=True)
    if (total <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = generator_of(generator)
    k = probs.shape[1]
    if replacement:
        # inverse CDF, all rows at once: row r's CDF is shifted by r so one sorted array holds them
        cdf = np.cumsum(probs / total, axis=1)
        cdf /= cdf[:, -1:]
        offset = np.arange(rows, dtype=np.float64)[:, None]
        u = rng.random((rows, num_samples)) + offset
        idx = np.searchsorted((cdf + offset).ravel(), u.ravel(), side="right").reshape(u.shape)
        idx = np.minimum(idx - offset.astype(np.int64) * k, k - 1)
    else:
        # exponential race: the k largest p / Exp(1) are a weighted sample without replacement
        keys = probs / rng.standard_exponential(probs.shape)
        idx = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    return wrap(np.ascontiguousarray(idx, dtype=np.int64).reshape(shape))


# Rates beyond this have no sampler in NumPy; there a Poisson draw is its rate to ~1e-9.
_POISSON_MAX_RATE = 1e18


def poisson(self, generator=None):
    check_poisson(self)
    rate = nd(self).astype(np.float64)
    if not (rate >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    huge = rate > _POISSON_MAX_RATE
    draws = generator_of(generator).poisson(np.where(huge, 0.0, rate)).astype(np.float64)
    return wrap(np.where(huge, rate, draws).astype(self._dtype._np))


# ---------------------------------------------------------------------------------------------
# In-place continuous and geometric samplers

def exponential_(self, lambd=1.0, generator=None):
    check_exponential(self, lambd)
    work = _work_dtype(self._dtype)
    e = generator_of(generator).standard_exponential(self._size, dtype=work)
    return _store(self, e / work(lambd))


def geometric_(self, p, generator=None):
    """Number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    check_geometric(self, p)
    return _store(self, generator_of(generator).geometric(p, self._size))


def cauchy_(self, median=0.0, sigma=1.0, generator=None):
    check_cauchy(self, sigma)
    c = generator_of(generator).standard_cauchy(self._size)
    return _store(self, median + sigma * c)


def log_normal_(self, mean=1.0, std=2.0, generator=None):
    check_log_normal(self, std)
    return _store(self, generator_of(generator).lognormal(mean, std, self._size))


# ---------------------------------------------------------------------------------------------
# Gamma, Dirichlet and binomial draws (ember.distributions)

def _standard_gamma(self, generator=None):
    """Gamma(concentration=self, rate=1) draws, one per element."""
    check_standard_gamma(self, "_standard_gamma")
    alpha = nd(self).astype(np.float64)
    draws = generator_of(generator).standard_gamma(np.where(alpha > 0, alpha, 1.0))
    # ATen's sampler returns 0 for a zero concentration, and a non-positive or NaN one never
    # enters its loop either: all become the smallest normal number below, as in PyTorch
    draws = np.where(alpha > 0, draws, 0.0)
    # PyTorch keeps draws off exact zero (tiny concentrations underflow), so log(x) stays finite
    tiny = np.finfo(self._dtype._np).tiny
    return wrap(np.maximum(draws, tiny).astype(self._dtype._np))


def _standard_gamma_grad(self, output):
    """d x / d alpha of a standard gamma draw x, by implicit differentiation of its CDF:
    dx/da = -(dP(a, x)/da) / p(x; a), with P the regularised lower incomplete gamma function.
    dP/da has no closed form in SciPy; a Richardson-extrapolated central difference gives it to
    about 1e-10 relative in double precision."""
    from scipy import special
    a = nd(self).astype(np.float64)
    x = nd(output).astype(np.float64)

    def central(h):
        return (special.gammainc(a + h, x) - special.gammainc(a - h, x)) / (2 * h)

    h = np.minimum(1e-3 * a, 0.5 * a)
    dp_da = (4 * central(h / 2) - central(h)) / 3
    log_density = (a - 1) * np.log(x) - x - special.gammaln(a)
    grad = -dp_da / np.exp(log_density)
    return wrap(grad.astype(self._dtype._np))


def _sample_dirichlet(self, generator=None):
    """Dirichlet draws along the last dimension: independent gammas, normalised."""
    check_standard_gamma(self, "_sample_dirichlet")
    alpha = nd(self).astype(np.float64)
    g = generator_of(generator).standard_gamma(alpha)
    total = g.sum(-1, keepdims=True)
    tiny = np.finfo(self._dtype._np).tiny
    return wrap(np.maximum(g / total, tiny).astype(self._dtype._np))


def binomial(count, prob, generator=None):
    """Number of successes in ``count`` Bernoulli(``prob``) trials, element by element."""
    shape = binomial_shape(count, prob)
    n = np.broadcast_to(nd(count).astype(np.float64), shape)
    p = np.broadcast_to(nd(prob).astype(np.float64), shape)
    if not ((p >= 0) & (p <= 1)).all() or (n < 0).any():
        raise RuntimeError("binomial: invalid count or probability")
    draws = generator_of(generator).binomial(n.astype(np.int64), p)
    return wrap(draws.astype(count._dtype._np))
