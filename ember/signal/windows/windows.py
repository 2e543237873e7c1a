"""The window functions. Each samples its definition at M points: a symmetric window
(``sym=True``, for filter design) spans its whole length, a periodic one (``sym=False``, for
spectral analysis) is the first M points of the symmetric window of length M + 1. Points are
laid out with ``linspace`` as PyTorch does, so values agree to the last bit where the math does.
"""
import math
from collections.abc import Iterable

import ember


def _checks(name, M, dtype, layout):
    """PyTorch's _window_function_checks, in its order."""
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not ember.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (ember.float32, ember.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _dtype(dtype):
    return ember.get_default_dtype() if dtype is None else dtype


def _trivial(M, dtype, layout, device, requires_grad):
    """The empty window (M == 0) and the one-point window (M == 1, for windows whose spacing
    divides by M - 1), or None."""
    if M == 0:
        return ember.empty((0,), dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)
    if M == 1:
        return ember.ones((1,), dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
    return None


def _points(start, step, M, dtype, layout, device, requires_grad):
    return ember.linspace(start, start + (M - 1) * step, M, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def _length(M, sym):
    """The spacing's denominator: M - 1 for a symmetric window, M for a periodic one."""
    return M - 1 if sym else M


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=ember.strided,
                device=None, requires_grad=False):
    dtype = _dtype(dtype)
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return ember.empty((0,), dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _points(-center / tau, 1.0 / tau, M, dtype, layout, device, requires_grad)
    return ember.exp(-ember.abs(k))


def cosine(M, *, sym=True, dtype=None, layout=ember.strided, device=None, requires_grad=False):
    dtype = _dtype(dtype)
    _checks("cosine", M, dtype, layout)
    if M == 0:
        return ember.empty((0,), dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _points(0.5 * step, step, M, dtype, layout, device, requires_grad)
    return ember.sin(k)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=ember.strided, device=None,
             requires_grad=False):
    dtype = _dtype(dtype)
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return ember.empty((0,), dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    scale = 1 / (std * math.sqrt(2))
    k = _points(start * scale, scale, M, dtype, layout, device, requires_grad)
    return ember.exp(-k ** 2)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=ember.strided, device=None,
           requires_grad=False):
    dtype = _dtype(dtype)
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, layout, device, requires_grad)
    if trivial is not None:
        return trivial
    # I0(beta sqrt(1 - (2n/(M-1) - 1)^2)) / I0(beta), with the points scaled by beta; the last
    # one is clamped to beta so rounding never puts a negative number under the square root
    beta_t = ember.tensor(beta, dtype=dtype, device=device)
    step = 2.0 * beta / _length(M, sym)
    end = ember.minimum(beta_t, -beta_t + (M - 1) * step)
    k = ember.linspace(-beta_t, end, M, dtype=dtype, layout=layout, device=device,
                       requires_grad=requires_grad)
    return ember.i0(ember.sqrt(beta_t * beta_t - k.pow(2))) / ember.i0(beta_t)


def hamming(M, *, sym=True, dtype=None, layout=ember.strided, device=None,
            requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=ember.strided, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=ember.strided, device=None,
             requires_grad=False):
    dtype = _dtype(dtype)
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=ember.strided, device=None,
             requires_grad=False):
    dtype = _dtype(dtype)
    _checks("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, layout, device, requires_grad)
    if trivial is not None:
        return trivial
    k = _points(-1, 2 / _length(M, sym), M, dtype, layout, device, requires_grad)
    return 1 - ember.abs(k)


def general_cosine(M, *, a, sym=True, dtype=None, layout=ember.strided, device=None,
                   requires_grad=False):
    dtype = _dtype(dtype)
    _checks("general_cosine", M, dtype, layout)
    if a is None or not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    trivial = _trivial(M, dtype, layout, device, requires_grad)
    if trivial is not None:
        return trivial
    # sum_i (-1)^i a_i cos(2 pi i n / (M - 1))
    k = _points(0, 2 * math.pi / _length(M, sym), M, dtype, layout, device, requires_grad)
    coefficients = ember.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype,
                                device=device, requires_grad=requires_grad)
    i = ember.arange(coefficients.shape[0], dtype=coefficients.dtype, device=device)
    return (coefficients.unsqueeze(-1) * ember.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=ember.strided, device=None,
                    requires_grad=False):
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=ember.strided, device=None, requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)
