"""CPU random kernels: the in-place samplers (uniform_, normal_, random_ and its ranges) and the
tensor-parameter ``normal`` overloads. rand/randn/randint/normal(float, float, size) are
composites over these (``composite/factory.py``), as in PyTorch.

Each draws from ``generator`` (or the default generator) through ``ember.random.generator_of``;
argument checks are the meta rules, so both devices reject the same calls.
"""
import math

import numpy as np

from ..._core import dtype as _dt
from ..._core import strides as _st
from ...random import generator_of
from ..meta.factory import (check_normal, check_uniform, normal_tensor_dtype, random_bounds,
                            random_default_bounds)
from ._util import nd, wrap

__all__ = ["uniform_", "normal_", "random_", "random__from", "random__to", "normal_Tensor_float",
           "normal_float_Tensor", "normal_Tensor_Tensor"]


def _work_dtype(d):
    """NumPy float type samples are drawn in: double for double tensors, float otherwise."""
    return np.float64 if d.to_real() is _dt.float64 else np.float32


def _store(self, values):
    """Write real samples into self; complex tensors take pairs (real, imaginary)."""
    if self._dtype.is_complex:
        values = values[..., 0] + 1j * values[..., 1]
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
