"""Shape and dtype rules of the FFT primitives ``_fft_r2c``, ``_fft_c2r`` and ``_fft_c2c`` (shared
with their CPU kernels in ``cpu/fft.py``), and their Meta kernels.

``dim`` lists the transformed dims; ``normalization`` is PyTorch's fft_norm_mode (0: none,
1: 1/sqrt(n), 2: 1/n, n being the product of the signal sizes).
"""
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules.fft import fft_c2c_rule, fft_c2r_rule, fft_r2c_rule


def meta__fft_r2c(self, dim, normalization, onesided):
    _, shape, dtype = fft_r2c_rule(self, dim, onesided)
    return empty_tensor(shape, dtype, META)


def meta__fft_c2r(self, dim, normalization, last_dim_size):
    _, shape, dtype = fft_c2r_rule(self, dim, last_dim_size)
    return empty_tensor(shape, dtype, META)


def meta__fft_c2c(self, dim, normalization, forward):
    _, shape, dtype = fft_c2c_rule(self, dim)
    return empty_tensor(shape, dtype, META)
