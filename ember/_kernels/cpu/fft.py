"""CPU kernels of the FFT primitives ``_fft_r2c``, ``_fft_c2r`` and ``_fft_c2c`` on ``numpy.fft``
(pocketfft; float32 stays single precision). The public ``ember.fft`` functions are composites
over these three (``composite/fft.py``), as in PyTorch.

NumPy's transforms are run unnormalised (forward: norm="backward", inverse: norm="forward") and
PyTorch's ``normalization`` mode is applied afterwards, so every mode works in both directions.
"""
import math

import numpy as np

from ..rules.fft import fft_c2c_rule, fft_c2r_rule, fft_r2c_rule
from ._util import nd, wrap


def _normalize(a, normalization, signal_numel):
    """Scale a fresh result by fft_norm_mode: 1 -> 1/sqrt(n), 2 -> 1/n, otherwise unscaled."""
    if normalization == 1:
        a *= a.real.dtype.type(1 / math.sqrt(signal_numel))
    elif normalization == 2:
        a *= a.real.dtype.type(1 / signal_numel)
    return a


def _fft_r2c(self, dim, normalization, onesided):
    dims, shape, dtype = fft_r2c_rule(self, dim, onesided)
    a = nd(self)
    if not dims:
        return wrap(a.astype(dtype._np))
    out = np.fft.rfftn(a, axes=dims) if onesided else np.fft.fftn(a, axes=dims)
    n = math.prod(self._size[d] for d in dims)
    return wrap(_normalize(out.astype(dtype._np, copy=False), normalization, n))


def _fft_c2r(self, dim, normalization, last_dim_size):
    dims, shape, dtype = fft_c2r_rule(self, dim, last_dim_size)
    a = nd(self)
    if not dims:
        return wrap(a.real.astype(dtype._np))
    sizes = [shape[d] for d in dims]
    out = np.fft.irfftn(a, s=sizes, axes=dims, norm="forward")
    return wrap(_normalize(out.astype(dtype._np, copy=False), normalization, math.prod(sizes)))


def _fft_c2c(self, dim, normalization, forward):
    dims, shape, dtype = fft_c2c_rule(self, dim)
    a = nd(self)
    if not dims:
        return wrap(a.astype(dtype._np))
    out = np.fft.fftn(a, axes=dims) if forward else np.fft.ifftn(a, axes=dims, norm="forward")
    n = math.prod(self._size[d] for d in dims)
    return wrap(_normalize(out.astype(dtype._np, copy=False), normalization, n))
