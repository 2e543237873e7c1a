"""Rules of the random sampling ops, for every backend: argument checks and result shapes and
dtypes, with PyTorch's errors. The CPU kernels (``cpu/random.py``) and the Meta kernels
(``meta/random_ops.py``) call them; this module imports no backend."""
from ..._core import dtype as D
from ..._core import strides as _st
from .factory import C_TYPE_NAMES, _g, _not_implemented, check_fits
from .unsigned import BAREBONES


# randperm into a floating dtype: the largest n whose values [0, n) are all exact (bfloat16 is
# not checked by PyTorch).
_RANDPERM_FLOAT_MAX = {D.float16: ("2049", 2049), D.float32: ("2^24+1", 2 ** 24 + 1),
                       D.float64: ("2^53+1", 2 ** 53 + 1)}


# the C++ names cauchy_'s dtype message prints (typeid names, not ATen's)
_CAUCHY_TYPE_NAMES = {**C_TYPE_NAMES, D.int8: "signed char", D.uint8: "unsigned char",
                      D.int16: "short int", D.int64: "long int", D.uint16: "short unsigned int",
                      D.uint32: "unsigned int", D.uint64: "long unsigned int"}


def check_randperm(n, dtype):
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if dtype is D.bool_ or dtype.is_complex:
        _not_implemented("randperm", dtype)
    if dtype in _RANDPERM_FLOAT_MAX:
        text, top = _RANDPERM_FLOAT_MAX[dtype]
        if n > top:
            raise RuntimeError(f"n cannot be greater than {text} for {dtype._short} type.")
    elif not dtype.is_floating_point and n > 0:
        check_fits(n - 1, dtype)


def check_bernoulli_float(self, p):
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")
    if self._dtype.is_complex:
        _not_implemented("bernoulli_scalar_cpu_", self._dtype)


def check_bernoulli_tensor(self, p):
    """bernoulli_(p): p (floating) broadcasts to self's shape, as ``p.expand_as(self)``; self's
    dtype is dispatched first (no complex or barebones unsigned kernel)."""
    if self._dtype.is_complex or self._dtype in BAREBONES:
        _not_implemented("bernoulli_tensor_cpu_self_", self._dtype)
    if not p._dtype.is_floating_point:
        _not_implemented("bernoulli_tensor_cpu_p_", p._dtype)
    if len(p._size) > len(self._size):
        raise RuntimeError(
            f"expand(torch.{p._dtype._short}Tensor{{{_st._fmt_list(p._size)}}}, "
            f"size={_st._fmt_list(self._size)}): the number of sizes provided "
            f"({len(self._size)}) must be greater or equal to the number of dimensions in the "
            f"tensor ({len(p._size)})")
    _st.expand_geometry(p._size, p._stride, self._size)


def multinomial_shape(self, num_samples, replacement):
    """Result shape of multinomial, after PyTorch's checks on rank, dtype and sample count."""
    if not self._dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{self._dtype._short}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if len(self._size) not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not replacement and num_samples > self._size[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if self._size[-1] > 2 ** 24:  # ATen: the sampled indices pass through float32
        raise RuntimeError("number of categories cannot exceed 2^24")
    return self._size[:-1] + (num_samples,)


def check_poisson(self):
    if not self._dtype.is_floating_point:
        _not_implemented("poisson_cpu", self._dtype)


def _check_continuous(self, name, names):
    d = self._dtype
    if not d.is_floating_point:
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. dtype "
                           f"must be a floating point but you specified {names[d]}")


def check_exponential(self, lambd):
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    _check_continuous(self, "Exponential", {d: d._short for d in C_TYPE_NAMES})


def check_geometric(self, p):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_g(p)}")
    if self._dtype is D.bool_ or self._dtype.is_complex:
        _not_implemented("geometric_cpu", self._dtype)


def check_cauchy(self, sigma):
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_g(sigma)}")
    _check_continuous(self, "Cauchy", _CAUCHY_TYPE_NAMES)


def check_log_normal(self, std):
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_g(std)}")
    if not self._dtype.is_floating_point:
        _not_implemented("log_normal_cpu", self._dtype)


def check_standard_gamma(self, name):
    if not self._dtype.is_floating_point:
        _not_implemented(name, self._dtype)


def binomial_shape(count, prob):
    if not count._dtype.is_floating_point or count._dtype is not prob._dtype:
        _not_implemented("binomial_cpu", count._dtype)
    return _st.broadcast_shapes(count._size, prob._size)
