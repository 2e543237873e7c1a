"""Argument rules and Meta kernels of the distribution samplers: randperm, bernoulli, multinomial,
poisson, the in-place exponential_/geometric_/cauchy_/log_normal_, and the gamma, Dirichlet and
binomial samplers of ember.distributions.

The ``check_*`` rules raise PyTorch's exceptions (types and messages) and are shared with the CPU
kernels (``cpu/random.py``), so both devices reject the same calls. Checks that need the data
(probabilities in [0, 1], non-negative rates) live in the CPU kernels only.
"""
from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules.random import (binomial_shape, check_bernoulli_float, check_bernoulli_tensor,
                            check_cauchy, check_exponential, check_geometric, check_log_normal,
                            check_poisson, check_randperm, check_standard_gamma, multinomial_shape)


# ---------------------------------------------------------------------------------------------
# Meta kernels: the same checks, no data.

def meta_randperm_generator_out(n, generator, out):
    check_randperm(n, out._dtype)
    out._resize_metadata((n,))
    return out


def meta_bernoulli__Tensor(self, p, generator=None):
    check_bernoulli_tensor(self, p)
    return self


def meta_bernoulli__float(self, p=0.5, generator=None):
    check_bernoulli_float(self, p)
    return self


def meta_multinomial(self, num_samples, replacement=False, generator=None):
    return empty_tensor(multinomial_shape(self, num_samples, replacement), D.int64, META)


def meta_poisson(self, generator=None):
    check_poisson(self)
    return empty_tensor(self._size, self._dtype, META)


def meta_exponential_(self, lambd=1.0, generator=None):
    check_exponential(self, lambd)
    return self


def meta_geometric_(self, p, generator=None):
    check_geometric(self, p)
    return self


def meta_cauchy_(self, median=0.0, sigma=1.0, generator=None):
    check_cauchy(self, sigma)
    return self


def meta_log_normal_(self, mean=1.0, std=2.0, generator=None):
    check_log_normal(self, std)
    return self


def meta__standard_gamma(self, generator=None):
    check_standard_gamma(self, "_standard_gamma")
    return empty_tensor(self._size, self._dtype, META)


def meta__standard_gamma_grad(self, output):
    return empty_tensor(_st.broadcast_shapes(self._size, output._size), self._dtype, META)


def meta__sample_dirichlet(self, generator=None):
    check_standard_gamma(self, "_sample_dirichlet")
    return empty_tensor(self._size, self._dtype, META)


def meta_binomial(count, prob, generator=None):
    return empty_tensor(binomial_shape(count, prob), count._dtype, META)
