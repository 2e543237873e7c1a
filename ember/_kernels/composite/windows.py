"""The window functions of ``torch.stft`` users: ``hann_window``, ``hamming_window``,
``blackman_window``, ``bartlett_window``, ``kaiser_window`` — CompositeExplicitAutograd factories
built from ``arange`` and in-place arithmetic in the requested dtype, step by step as ATen's
``TensorFactories.cpp`` builds them (so the values round as PyTorch's do). ``periodic`` windows
are the first ``n`` points of the symmetric window of ``n + 1`` (the form a DFT wants).
"""
import math

from ..._core import dtype as D
from ..._core.dtype import get_default_dtype
from ..._ops.overload import ops

A = ops.aten


def _options_str(dtype, device, layout):
    # c10's TensorOptions printout, as PyTorch's message quotes it
    return (f"TensorOptions(dtype={D.C10_NAMES.get(dtype, dtype.name)}, "
            f"device={device or 'cpu'}, layout=Strided (default), requires_grad=false (default), "
            f"pinned_memory=false, memory_format=(nullopt))")


def _begin(name, window_length, periodic, dtype, layout, device, pin_memory):
    """ATen's window_function_checks, then ``(dtype, points to compute, window)``: the window
    itself when it has no point or one (1), else None; a periodic window computes one point
    more."""
    dtype = dtype or get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{name} expects floating point dtypes, got: "
                           f"{_options_str(dtype, device, layout)}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    window = None
    if window_length == 0:
        window = A.empty.memory_format._call([0], dtype, layout, device, pin_memory, None)
    elif window_length == 1:
        window = A.full.default._call([1], 1, dtype, layout, device, pin_memory)
    return dtype, window_length + 1 if periodic else window_length, window


def _finish(window, n, periodic):
    return A.narrow.default._call(window, 0, 0, n - 1) if periodic else window


def _hamming(name, window_length, periodic, alpha, beta, dtype, layout, device, pin_memory):
    dtype, n, window = _begin(name, window_length, periodic, dtype, layout, device,
                              pin_memory)
    if window is not None:
        return window
    w = A.arange.default._call(n, dtype, layout, device, pin_memory)
    w = A.mul_.Scalar._call(w, math.pi * 2.0 / float(n - 1))
    w = A.add_.Scalar._call(A.mul_.Scalar._call(A.cos_.default._call(w), -beta), alpha, 1)
    return _finish(w, n, periodic)


def hamming_window_periodic_alpha_beta(window_length, periodic, alpha, beta, dtype=None,
                                       layout=None, device=None, pin_memory=None):
    return _hamming("hamming_window", window_length, periodic, alpha, beta, dtype, layout,
                    device, pin_memory)


def hamming_window(window_length, dtype=None, layout=None, device=None, pin_memory=None):
    return hamming_window_periodic_alpha_beta(window_length, True, 0.54, 0.46, dtype, layout,
                                              device, pin_memory)


def hamming_window_periodic(window_length, periodic, dtype=None, layout=None, device=None,
                            pin_memory=None):
    return hamming_window_periodic_alpha_beta(window_length, periodic, 0.54, 0.46, dtype,
                                              layout, device, pin_memory)


def hamming_window_periodic_alpha(window_length, periodic, alpha, dtype=None, layout=None,
                                  device=None, pin_memory=None):
    return hamming_window_periodic_alpha_beta(window_length, periodic, alpha, 0.46, dtype,
                                              layout, device, pin_memory)


def hann_window_periodic(window_length, periodic, dtype=None, layout=None, device=None,
                         pin_memory=None):
    return _hamming("hann_window", window_length, periodic, 0.5, 0.5, dtype, layout, device,
                    pin_memory)


def hann_window(window_length, dtype=None, layout=None, device=None, pin_memory=None):
    return hann_window_periodic(window_length, True, dtype, layout, device, pin_memory)


def blackman_window_periodic(window_length, periodic, dtype=None, layout=None, device=None,
                             pin_memory=None):
    dtype, n, window = _begin("blackman_window", window_length, periodic, dtype, layout, device,
                              pin_memory)
    if window is not None:
        return window
    w = A.mul_.Scalar._call(A.arange.default._call(n, dtype, layout, device, pin_memory),
                            math.pi / float(n - 1))
    # 0.42 - 0.5 cos(2x) + 0.08 cos(4x), in ATen's order of operations
    four = A.mul_.Scalar._call(A.cos_.default._call(A.mul.Scalar._call(w, 4)), 0.08)
    two = A.mul_.Scalar._call(A.cos_.default._call(A.mul.Scalar._call(w, 2)), 0.5)
    w = A.add.Scalar._call(A.sub.Tensor._call(four, two, 1), 0.42, 1)
    return _finish(w, n, periodic)


def blackman_window(window_length, dtype=None, layout=None, device=None, pin_memory=None):
    return blackman_window_periodic(window_length, True, dtype, layout, device, pin_memory)


def bartlett_window_periodic(window_length, periodic, dtype=None, layout=None, device=None,
                             pin_memory=None):
    dtype, n, window = _begin("bartlett_window", window_length, periodic, dtype, layout, device,
                              pin_memory)
    if window is not None:
        return window
    w = A.mul_.Scalar._call(A.arange.default._call(n, dtype, layout, device, pin_memory),
                            2.0 / float(n - 1))
    first_half = ((n - 1) >> 1) + 1  # the rising half, then 2 - x down to 0
    second = A.narrow.default._call(w, 0, first_half, n - first_half)
    A.add_.Scalar._call(A.mul_.Scalar._call(second, -1), 2, 1)
    return _finish(w, n, periodic)


def bartlett_window(window_length, dtype=None, layout=None, device=None, pin_memory=None):
    return bartlett_window_periodic(window_length, True, dtype, layout, device, pin_memory)


def kaiser_window_beta(window_length, periodic, beta, dtype=None, layout=None, device=None,
                       pin_memory=None):
    """I0(beta * sqrt(|1 - ((i - a) / a)^2|)) / I0(beta), a = (n - 1) / 2, computed in float32
    for the half dtypes (ATen's kernel computes in opmath_type)."""
    dtype, n, window = _begin("kaiser_window", window_length, periodic, dtype, layout, device,
                              pin_memory)
    if window is not None:
        return window
    compute = D.float32 if dtype in (D.float16, D.bfloat16) else dtype
    i = A.arange.default._call(n, compute, layout, device, pin_memory)
    a = (n - 1) / 2.0
    r = A.div.Scalar._call(A.sub.Scalar._call(i, a, 1), a)
    inner = A.abs.default._call(A.rsub.Scalar._call(A.pow.Tensor_Scalar._call(r, 2.0), 1, 1))
    w = A.i0.default._call(A.mul.Scalar._call(A.sqrt.default._call(inner), beta))
    scale = A.i0.default._call(A.full.default._call([], beta, compute, layout, device, pin_memory))
    w = A.div.Tensor._call(w, scale)
    if compute is not dtype:
        w = A._to_copy.default._call(w, dtype, None, None, None, False, None)
    return _finish(w, n, periodic)


def kaiser_window(window_length, dtype=None, layout=None, device=None, pin_memory=None):
    return kaiser_window_beta(window_length, True, 12.0, dtype, layout, device, pin_memory)


def kaiser_window_periodic(window_length, periodic, dtype=None, layout=None, device=None,
                           pin_memory=None):
    return kaiser_window_beta(window_length, periodic, 12.0, dtype, layout, device, pin_memory)
