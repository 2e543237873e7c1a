"""Meta kernels of the pooling ops: the CPU kernels' checks and shape rules, no data."""
from ..._core import dtype as D
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules import pool as _p


_ANY_INT = (D.uint8, D.int8, D.int16, D.int32, D.int64)


def _max_pool(name, k):
    def kernel(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
        shape = _p.check_pool(name, self, k, kernel_size, stride, padding, dilation,
                              ceil_mode)[0]
        _p._float_or_long(name, self._dtype, _ANY_INT)
        return empty_tensor(shape, self._dtype, META), empty_tensor(shape, D.int64, META)
    return kernel


def _max_pool_backward(name, k):
    def kernel(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
        shape = _p.check_pool(name, self, k, kernel_size, stride, padding, dilation,
                              ceil_mode, backward=True)[0]
        _p.check_pool_backward(name, grad_output, self, indices, shape)
        return empty_tensor(self._size, grad_output._dtype, META)
    return kernel


def _avg_pool(name, k):
    def kernel(self, kernel_size, stride=(), padding=(0,), ceil_mode=False,
               count_include_pad=True, divisor_override=None):
        shape = _p.check_avg_pool(name, self, k, kernel_size, stride, padding, ceil_mode,
                                  divisor_override)[0]
        return empty_tensor(shape, self._dtype, META)
    return kernel


def _avg_pool_backward(name, k):
    def kernel(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
               divisor_override):
        shape = _p.check_avg_pool(name, self, k, kernel_size, stride, padding, ceil_mode,
                                  divisor_override, backward=True)[0]
        _p.check_pool_backward(name, grad_output, self, None, shape)
        return empty_tensor(self._size, grad_output._dtype, META)
    return kernel


def _adaptive_avg(name, k):
    def kernel(self, output_size):
        return empty_tensor(_p.check_adaptive(name, self, k, output_size), self._dtype, META)
    return kernel


def _adaptive_max(name, k):
    def kernel(self, output_size):
        shape = _p.check_adaptive(name, self, k, output_size)
        return empty_tensor(shape, self._dtype, META), empty_tensor(shape, D.int64, META)
    return kernel


def _like_self(grad_output, self, *rest):
    return empty_tensor(self._size, grad_output._dtype, META)


meta_max_pool2d_with_indices = _max_pool("max_pool2d", 2)
meta_max_pool3d_with_indices = _max_pool("max_pool3d", 3)
meta_max_pool2d_with_indices_backward = _max_pool_backward("max_pool2d", 2)
meta_max_pool3d_with_indices_backward = _max_pool_backward("max_pool3d", 3)
meta_avg_pool2d = _avg_pool("avg_pool2d", 2)
meta_avg_pool3d = _avg_pool("avg_pool3d", 3)
meta_avg_pool2d_backward = _avg_pool_backward("avg_pool2d", 2)
meta_avg_pool3d_backward = _avg_pool_backward("avg_pool3d", 3)
meta_adaptive_avg_pool2d_ = _adaptive_avg("adaptive_avg_pool2d", 2)
meta_adaptive_avg_pool3d_ = _adaptive_avg("adaptive_avg_pool3d", 3)
meta_adaptive_avg_pool2d_backward_ = _like_self
meta_adaptive_avg_pool3d_backward_ = _like_self
meta_adaptive_max_pool2d = _adaptive_max("adaptive_max_pool2d", 2)
meta_adaptive_max_pool3d = _adaptive_max("adaptive_max_pool3d", 3)
meta_adaptive_max_pool2d_backward = _like_self
meta_adaptive_max_pool3d_backward = _like_self


def meta_max_unpool2d(self, indices, output_size):
    return empty_tensor(_p.check_max_unpool("max_unpool2d", self, indices, output_size, 2),
                        self._dtype, META)


def meta_max_unpool3d(self, indices, output_size, stride, padding):
    return empty_tensor(_p.check_max_unpool("max_unpool3d", self, indices, output_size, 3),
                        self._dtype, META)


def _fractional(k):
    def kernel(self, kernel_size, output_size, random_samples):
        shape = _p.check_fractional_max_pool(self, k, kernel_size, output_size, random_samples)
        return empty_tensor(shape, self._dtype, META), empty_tensor(shape, D.int64, META)
    return kernel


def _fractional_backward(k):
    def kernel(grad_output, self, kernel_size, output_size, indices):
        _p.check_fractional_max_pool_backward(grad_output, self, k, output_size, indices)
        return empty_tensor(self._size, grad_output._dtype, META)
    return kernel


meta_fractional_max_pool2d = _fractional(2)
meta_fractional_max_pool3d = _fractional(3)
meta_fractional_max_pool2d_backward = _fractional_backward(2)
meta_fractional_max_pool3d_backward = _fractional_backward(3)
