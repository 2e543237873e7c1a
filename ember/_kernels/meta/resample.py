"""Meta kernels of the resampling ops (upsample family, padding, pixel shuffle): the CPU
kernels' checks and shape rules, no data."""
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules import resample as _r
from ..registration import register


def _upsample(name):
    def kernel(self, output_size, *args):
        shape = _r.check_upsample(name, tuple(self._size), output_size, self._dtype,
                               self._stride)
        return empty_tensor(shape, self._dtype, META)
    return kernel


def _upsample_backward(name):
    def kernel(grad_output, output_size, input_size, *args):
        _r.check_upsample(name, tuple(input_size), output_size, grad_output._dtype)
        return empty_tensor(tuple(input_size), grad_output._dtype, META)
    return kernel


def _pad(mode, k):
    def kernel(self, padding):
        return empty_tensor(_r.check_pad(mode, k, self, padding), self._dtype, META)
    return kernel


def _pad_backward(mode, k):
    def kernel(grad_output, self, padding):
        _r.check_pad(mode, k, self, padding)
        return empty_tensor(self._size, grad_output._dtype, META)
    return kernel


def meta_constant_pad_nd(self, pad, value=0):
    return empty_tensor(_r.check_constant_pad(self, pad), self._dtype, META)


def meta_pixel_shuffle(self, upscale_factor):
    return empty_tensor(_r.check_pixel_shuffle("pixel_shuffle", self, upscale_factor, True),
                        self._dtype, META)


def meta_pixel_unshuffle(self, downscale_factor):
    return empty_tensor(_r.check_pixel_shuffle("pixel_unshuffle", self, downscale_factor, False),
                        self._dtype, META)


# one meta kernel per CPU kernel of the tables in cpu/resample.py
for _op, _n in _r.UPSAMPLE_OPS.items():
    register(_op, "Meta", _upsample(_n))
    register(_op + "_backward", "Meta", _upsample_backward(_n))
for _m in _r.PAD_MODES:
    for _k in (1, 2, 3):
        register(f"{_m}_pad{_k}d", "Meta", _pad(_m, _k))
        register(f"{_m}_pad{_k}d_backward", "Meta", _pad_backward(_m, _k))
