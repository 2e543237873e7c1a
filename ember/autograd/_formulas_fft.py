"""derivatives.yaml helpers of the FFT primitives (PyTorch's FunctionsManual names), in ember ops
so that backward passes stay differentiable. Imported into ``_formulas`` by its last lines."""
import ember

from .._ops.overload import ops

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load

__all__ = ["fft_r2c_backward", "fft_c2r_backward"]


def fft_r2c_backward(grad, dim, normalization, onesided, self_sizes):
    """The adjoint of a real-to-complex FFT: an inverse (unnormalised-direction) C2C FFT of the
    gradient, zero-filled back to the full spectrum when the forward pass kept one side."""
    aten = _aten
    if not onesided:
        return aten.real.default(aten._fft_c2c.default(grad, dim, normalization, False))
    last = dim[-1] % len(self_sizes)
    full = self_sizes[last]
    half = grad.shape[last]
    if full > half:
        pad = [0] * (2 * grad.dim())
        pad[len(pad) - 2 * last - 1] = full - half
        grad = aten.constant_pad_nd.default(grad, pad, 0)
    return aten.real.default(aten._fft_c2c.default(grad, dim, normalization, False))


def fft_c2r_backward(grad, dim, normalization):
    """The adjoint of a one-sided complex-to-real FFT: an R2C FFT of the gradient, with the bins
    whose mirror image the one-sided input left out (1 .. n - onesided_length) counted twice."""
    g = _aten._fft_r2c.default(grad, dim, normalization, True)
    last = dim[-1] % grad.dim()
    double = grad.shape[last] - g.shape[last]
    if double > 0:
        n = g.shape[last]
        weight = [1.0] + [2.0] * double + [1.0] * (n - 1 - double)
        shape = [1] * g.dim()
        shape[last] = n
        g = g * ember.tensor(weight, dtype=grad.dtype).reshape(shape)
    return g
