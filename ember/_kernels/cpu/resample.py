"""CPU resampling kernels: the upsample family behind ``F.interpolate`` (nearest, nearest-exact,
linear, bilinear, bicubic, trilinear) with their backwards, the padding ops behind ``F.pad``
(constant_pad_nd, reflection_pad*d, replication_pad*d with backwards), pixel_shuffle /
pixel_unshuffle, and grid_sampler_2d (+ backward).

Every resampling here is separable: along each spatial axis, output position ``o`` reads a few
input positions with fixed weights. An axis is therefore described by an index table
(nearest/padding: forward is a gather, exact) or by an ``(out, in)`` weight matrix
(linear/cubic: forward multiplies by it); a backward is the transposed operator along each axis.
The tables follow ATen's UpSample.h formulas (source-index rules, float32 arithmetic for float
inputs)."""

import numpy as np

from ..registration import register
from ._util import array_module, contiguous, like, nd, wrap
from ..rules.resample import (PAD_MODES, UPSAMPLE_OPS, _FLOAT_ONLY, _MODES, check_constant_pad,
                              check_pad, check_pixel_shuffle, check_upsample)

_UPSAMPLE = list(UPSAMPLE_OPS.values())


def _half_to_float(a):
    return a.astype(np.float32) if a.dtype.name in ("float16", "bfloat16") else a


def _apply(a, mats, transpose=False):
    """Multiply the last len(mats) axes of a by (out, in) matrices (their transposes if asked)."""
    k = len(mats)
    for i, m in enumerate(mats):
        ax = a.ndim - k + i
        m = like(a, m)
        a = np.moveaxis(np.moveaxis(a, ax, -1) @ (m if transpose else m.T), -1, ax)
    return contiguous(a)


def _one_hot(idx, n, dtype):
    m = np.zeros((len(idx), n), dtype)
    m[np.arange(len(idx)), idx] = 1
    return m


# ---------------------------------------------------------------------------------------------
# Upsampling: one table per axis

def _scale(in_size, out_size, align_corners, scale):
    """ATen's area_pixel_compute_scale (align_corners None: the nearest modes)."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _nearest_index(n, m, scale, exact):
    s = np.float32(_scale(n, m, None, scale))
    dst = np.arange(m, dtype=np.float32) + (np.float32(0.5) if exact else 0)
    return np.minimum(np.floor(dst * s).astype(np.int64), n - 1)


def _linear_matrix(n, m, align_corners, scale, dtype):
    s = np.asarray(_scale(n, m, align_corners, scale), dtype)
    dst = np.arange(m, dtype=dtype)
    src = s * dst if align_corners else np.maximum(s * (dst + 0.5) - 0.5, 0)
    i0 = src.astype(np.int64)
    i1 = i0 + (i0 < n - 1)
    l1 = src - i0
    w = np.zeros((m, n), dtype)
    np.add.at(w, (np.arange(m), i0), 1 - l1)
    np.add.at(w, (np.arange(m), i1), l1)
    return w


def _cubic_matrix(n, m, align_corners, scale, dtype):
    s = np.asarray(_scale(n, m, align_corners, scale), dtype)
    dst = np.arange(m, dtype=dtype)
    src = s * dst if align_corners else s * (dst + 0.5) - 0.5
    i = np.floor(src).astype(np.int64)
    t = src - i
    a = -0.75

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    coeffs = [far(t + 1), near(t), near(1 - t), far(2 - t)]
    w = np.zeros((m, n), dtype)
    for j, c in enumerate(coeffs):
        np.add.at(w, (np.arange(m), np.clip(i - 1 + j, 0, n - 1)), c)
    return w


def _uint8_axis(n, m, align_corners, scale, cubic):
    """ATen's uint8 bilinear/bicubic table for one axis (UpSampleKernel.cpp,
    _compute_index_ranges_int16_weights): weights computed in double as PIL computes them (the
    out-of-range taps folded onto the edge ones; bicubic with a = -0.75), scaled to int16 with
    the largest precision that keeps them below 2**15. Returns the (m, n) integer weight matrix
    and that precision."""
    s = _scale(n, m, align_corners, scale)
    interp = 4 if cubic else 2
    support = interp // 2
    a = -0.75

    def filt(x):
        x = abs(x)
        if cubic:
            if x < 1.0:
                return ((a + 2) * x - (a + 3)) * x * x + 1
            if x < 2.0:
                return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
            return 0.0
        return 1.0 - x if x < 1.0 else 0.0

    rows = []
    wt_max = 0.0
    for i in range(m):
        real = s * i if align_corners else s * (i + 0.5) - 0.5
        if not align_corners and not cubic and real < 0:
            real = 0.0
        index = min(int(np.floor(np.float32(real))), n - 1)  # floorf, as guard_index_and_lambda
        lam = min(max(real - index, 0.0), 1.0)
        lo, hi = index - support + 1, index + support + 1
        xmin = max(lo, 0)
        xsize = min(max(min(hi, n) - xmin, 0), interp)
        w = [0.0] * interp
        k = 0
        for j in range(interp):
            v = filt(float(j + 1 - support) - lam)
            if lo + j <= 0:
                k = 0
            elif lo + j >= n - 1:
                k = xsize - 1
            w[k] += v
            wt_max = max(wt_max, w[k])
            k += 1
        rows.append((xmin, xsize, w))
    precision = 0
    while precision < 22 and int(0.5 + wt_max * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    mat = np.zeros((m, n), np.int64)
    for i, (xmin, xsize, w) in enumerate(rows):
        for j in range(xsize):
            v = w[j] * (1 << precision)
            mat[i, xmin + j] = int(v - 0.5) if v < 0 else int(v + 0.5)
    return mat, precision


def _upsample_uint8(x, output_size, align_corners, scales, cubic):
    """uint8 bilinear/bicubic as ATen computes it: separable integer passes, the last axis
    first, each rounding ((sum + 2**(p-1)) >> p) and clamping to [0, 255] before the next;
    an axis whose size does not change is not resampled. (PyTorch's non-AVX path, taken for more
    than 4 channels, gives every output row the first row's value when the output width is 1,
    a bug this does not reproduce; its AVX path, for up to 4 channels, agrees with this.)"""
    if tuple(x.shape[2:]) == tuple(output_size):
        return x.copy()
    a = x.astype(np.int64)
    for ax in (3, 2):
        n, m = a.shape[ax], output_size[ax - 2]
        if n == m:
            continue
        mat, p = _uint8_axis(n, m, align_corners, scales[ax - 2], cubic)
        r = np.moveaxis(np.moveaxis(a, ax, -1) @ mat.T, -1, ax)
        a = np.clip((r + (1 << (p - 1))) >> p, 0, 255)
    return np.ascontiguousarray(a.astype(np.uint8))


def _split_args(name, args):
    """(align_corners, scales) from the arguments after output_size."""
    if _MODES[name][1] in _FLOAT_ONLY:
        return args[0], list(args[1:])
    return None, list(args)


def _tables(name, input_size, output_size, align_corners, scales, dtype):
    k, mode = _MODES[name]
    out = []
    for n, m, s in zip(input_size[2:], output_size, scales + [None] * k):
        if mode == "linear":
            out.append(_linear_matrix(n, m, align_corners, s, dtype))
        elif mode == "cubic":
            out.append(_cubic_matrix(n, m, align_corners, s, dtype))
        else:
            out.append(_nearest_index(n, m, s, mode == "exact"))
    return out


def _upsample(name):
    def kernel(self, output_size, *args):
        shape = check_upsample(name, tuple(self._size), output_size, self._dtype,
                               self._stride)
        align_corners, scales = _split_args(name, args)
        x = nd(self)
        if 0 in shape:
            return wrap(np.zeros(shape, x.dtype))
        if _MODES[name][1] in ("nearest", "exact"):
            idx = _tables(name, x.shape, output_size, None, scales, None)
            return wrap(contiguous(x[(Ellipsis, *np.ix_(*[like(x, i) for i in idx]))]))
        if x.dtype == np.uint8:  # bilinear2d/bicubic2d, the only linear modes taking Byte
            return wrap(_upsample_uint8(x, output_size, align_corners, scales + [None] * 2,
                                        _MODES[name][1] == "cubic"))
        a = _half_to_float(x)
        mats = _tables(name, x.shape, output_size, align_corners, scales, a.dtype)
        return wrap(_apply(a, mats).astype(x.dtype, copy=False))
    kernel.__name__ = name
    return kernel


def _upsample_backward(name):
    def kernel(grad_output, output_size, input_size, *args):
        shape = check_upsample(name, tuple(input_size), output_size, grad_output._dtype)
        if tuple(grad_output._size) != shape:
            for i, (a, b) in enumerate(zip(shape, grad_output._size)):
                if a != b:
                    raise RuntimeError(f"Expected grad_output to have the same shape as output; "
                                       f"output.size({i}) = {a} but got grad_output.size({i}) = "
                                       f"{b}")
            raise RuntimeError(f"Expected grad_output to be a tensor of dimension {len(shape)} "
                               f"but got: dimension {len(grad_output._size)}")
        align_corners, scales = _split_args(name, args)
        g = nd(grad_output)
        if 0 in input_size or 0 in shape:
            return wrap(np.zeros(tuple(input_size), g.dtype))
        a = g.astype(np.float64) if g.dtype != np.float32 else g
        tables = _tables(name, input_size, output_size, align_corners, scales, a.dtype)
        mats = [t if t.ndim == 2 else _one_hot(t, n, a.dtype)
                for t, n in zip(tables, input_size[2:])]
        return wrap(_apply(a, mats, transpose=True).astype(g.dtype, copy=False))
    kernel.__name__ = name + "_backward"
    return kernel


for _op, _n in UPSAMPLE_OPS.items():
    register(_op, "CPU", _upsample(_n))
    register(_op + "_backward", "CPU", _upsample_backward(_n))


# ---------------------------------------------------------------------------------------------
# Padding


def constant_pad_nd(self, pad, value=0):
    shape = check_constant_pad(self, pad)
    x = nd(self)
    full = array_module(x).full  # (the result where the input lies)
    res = full(shape, value).astype(x.dtype) if x.dtype != np.bool_ else full(shape, bool(value))
    src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = x.shape[d]
        src[d] = slice(max(-lo, 0), n - max(-hi, 0))
        dst[d] = slice(max(lo, 0), max(lo, 0) + max(0, n - max(-lo, 0) - max(-hi, 0)))
    res[tuple(dst)] = x[tuple(src)]
    return wrap(res)


def _pad_index(n, lo, hi, mode):
    """Source index of each output position of an axis of size n padded by (lo, hi)."""
    i = np.arange(-lo, n + hi)
    if mode == "reflection":
        i = np.abs(i)
        return np.where(i >= n, 2 * (n - 1) - i, i)
    return np.clip(i, 0, n - 1)


def _pad_tables(mode, k, size, padding):
    return [_pad_index(size[-k + j], padding[2 * (k - 1 - j)], padding[2 * (k - 1 - j) + 1], mode)
            for j in range(k)]


def _pad(mode, k):
    def kernel(self, padding):
        shape = check_pad(mode, k, self, padding)
        x = nd(self)
        if 0 in shape:
            return wrap(np.zeros(shape, x.dtype))
        idx = _pad_tables(mode, k, x.shape, padding)
        return wrap(contiguous(x[(Ellipsis, *np.ix_(*[like(x, i) for i in idx]))]))
    kernel.__name__ = f"{mode}_pad{k}d"
    return kernel


def _pad_backward(mode, k):
    def kernel(grad_output, self, padding):
        shape = check_pad(mode, k, self, padding)
        if tuple(grad_output._size) != shape:
            raise RuntimeError(f"gradOutput width unexpected. Expected: {shape[-1]}, Got: "
                               f"{grad_output._size[-1]}")
        g = nd(grad_output)
        if 0 in shape:
            return wrap(np.zeros(self._size, g.dtype))
        a = g.astype(np.float64) if g.dtype != np.float32 else g
        idx = _pad_tables(mode, k, self._size, padding)
        mats = [_one_hot(t, n, a.dtype) for t, n in zip(idx, self._size[-k:])]
        return wrap(_apply(a, mats, transpose=True).astype(g.dtype, copy=False))
    kernel.__name__ = f"{mode}_pad{k}d_backward"
    return kernel


for _m in PAD_MODES:
    for _k in (1, 2, 3):
        register(f"{_m}_pad{_k}d", "CPU", _pad(_m, _k))
        register(f"{_m}_pad{_k}d_backward", "CPU", _pad_backward(_m, _k))


# ---------------------------------------------------------------------------------------------
# pixel_shuffle / pixel_unshuffle: reshape + transpose, always into a new array (a factor of 1
# would leave NumPy's transpose contiguous: ATen's result never aliases the input)


def pixel_shuffle(self, upscale_factor):
    shape = check_pixel_shuffle("pixel_shuffle", self, upscale_factor, True)
    x = nd(self)
    *lead, c, h, w = x.shape
    r = upscale_factor
    n = len(lead)
    a = x.reshape(*lead, c // (r * r), r, r, h, w)
    a = a.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return wrap(a.copy(order="C").reshape(shape))


def pixel_unshuffle(self, downscale_factor):
    shape = check_pixel_shuffle("pixel_unshuffle", self, downscale_factor, False)
    x = nd(self)
    *lead, c, h, w = x.shape
    r = downscale_factor
    n = len(lead)
    a = x.reshape(*lead, c, h // r, r, w // r, r)
    a = a.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return wrap(a.copy(order="C").reshape(shape))
