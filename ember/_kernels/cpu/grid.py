"""CPU kernels that sample an input at computed positions: grid_sampler_2d / grid_sampler_3d with
their backwards (behind ``F.grid_sample``), and the antialiased upsampling ops
_upsample_{bilinear,bicubic,lanczos}2d_aa with their backwards (behind
``F.interpolate(..., antialias=True)``).

grid_sampler: each spatial axis of the grid gives, per output point, a few taps (input index,
validity, weight, d weight / d grid coordinate): one for nearest, two for bilinear, four for
bicubic. The product of the axes' taps are the corners; the forward gathers each corner for all
channels at once and sums weight * value; the backward scatters grad * weight into the input
(a ``bincount`` per corner; on device arrays a scatter-add) and sums grad * value * d weight
into the grid. The coordinate rules (unnormalize, border clipping, reflection, their gradients)
follow ATen's GridSamplerKernel.cpp.

Antialiased upsampling is separable: an ``(out, in)`` weight matrix per axis, built by ATen's
``_compute_indices_min_size_weights_aa`` (PIL's filters, normalized per output); the backward
multiplies by the transposes.
"""
import functools
import itertools
import math

import numpy as np

from ..registration import register
from ._util import array_module, contiguous, like, nd, wrap
from .resample import _apply, _scale
from ..rules.grid import (BICUBIC, BORDER, NEAREST, REFLECTION, _AA, _FILTERS, _shape_str,
                          check_grid_sampler, check_upsample_aa)


# ---------------------------------------------------------------------------------------------
# grid_sampler: checks


# ---------------------------------------------------------------------------------------------
# grid_sampler: source coordinates along one axis

def _unnormalize(coord, size, align_corners):
    """[-1, 1] -> pixel coordinate, and d pixel / d coord."""
    if align_corners:
        f = (size - 1) / 2
        return (coord + 1) * f, f
    f = size / 2
    return (coord + 1) * f - 0.5, f


def _clip(x, size, k):
    """Border padding; its gradient is 0 at and beyond the borders (ATen's convention). NaN
    clips to 0 in the 2-D kernel (vector max) and to size - 1 in the 3-D one (std::min/max)."""
    if k == 2:
        out = np.minimum(np.fmax(x, 0), size - 1)
    else:
        out = np.fmin(np.maximum(x, 0), size - 1)
    return out, ((x > 0) & (x < size - 1)).astype(x.dtype)


def _reflect(x, size, align_corners):
    """Reflection padding about the borders (corner pixel centers when aligned, else the image
    edges); gradient +-1 by the parity of the flips."""
    twice_span = 2 * (size - 1) if align_corners else 2 * size
    if twice_span == 0:
        return np.zeros_like(x), np.zeros_like(x)
    shifted = x if align_corners else x + 0.5
    a = np.abs(shifted)
    extra = a - np.trunc(a / twice_span) * twice_span
    reflected = twice_span - extra
    flip = extra > reflected
    out = np.where(flip, reflected, extra)
    if not align_corners:
        out = out - 0.5
    return out, np.where(flip ^ (shifted < 0), -1, 1).astype(x.dtype)


def _pad_coordinates(x, size, padding_mode, align_corners, k):
    """ATen's compute_coordinates: the padded source coordinate and its gradient factor. The 3-D
    kernel then sends non-finite or huge coordinates to -100, outside the image
    (safe_downgrade_to_int_range)."""
    grad = 1
    if padding_mode == BORDER:
        x, grad = _clip(x, size, k)
    elif padding_mode == REFLECTION:
        r, gr = _reflect(x, size, align_corners)
        x, gc = _clip(r, size, k)
        grad = gr * gc
    if k == 3:
        x = np.where(np.isfinite(x) & (x <= 2 ** 31 - 2) & (x >= -2 ** 31), x, -100)
    return x, grad


def _cubic(t, a=-0.75):
    """The four cubic-convolution coefficients of fractional offset t and their d/dt."""
    def near(x):    # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):     # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    def dnear(x):
        return (3 * (a + 2) * x - 2 * (a + 3)) * x

    def dfar(x):
        return (3 * a * x - 10 * a) * x + 8 * a
    return ([far(t + 1), near(t), near(1 - t), far(2 - t)],
            [dfar(t + 1), dnear(t), -dnear(1 - t), -dfar(2 - t)])


def _axis_taps(coord, size, mode, padding_mode, align_corners, k):
    """The taps of one spatial axis of a k-D sampler: a list of (index, valid, weight,
    d weight / d coord)."""
    src, scale = _unnormalize(coord, size, align_corners)
    if mode == BICUBIC:  # padding applies to each tap's integer position, not to src
        i0 = np.floor(src)
        t = src - i0
        coeffs, dcoeffs = _cubic(t)
        taps = []
        for j in range(4):
            pos = _pad_coordinates(i0 + (j - 1), size, padding_mode, align_corners, k)[0]
            taps.append((pos, coeffs[j], dcoeffs[j] * scale))
    else:
        src, gpad = _pad_coordinates(src, size, padding_mode, align_corners, k)
        if mode == NEAREST:
            taps = [(np.rint(src), np.ones_like(src), np.zeros_like(src))]
        else:
            i0 = np.floor(src)
            t = src - i0
            dt = gpad * scale
            if isinstance(dt, float):  # zeros padding (gpad 1): a float64 array on t's device
                dt = array_module(t).full(t.shape, dt)
            taps = [(i0, 1 - t, -dt), (i0 + 1, t, dt)]
    out = []
    for pos, w, dw in taps:
        valid = (pos > -1) & (pos < size)
        out.append((np.where(valid, pos, 0).astype(np.int64), valid, w, dw))
    return out


def _corners(input_spatial, grid, mode, padding_mode, align_corners):
    """Per corner: (flat input index, valid, weight, [d weight / d coord per axis]), all shaped
    (N, points); axes in input order (D, H, W), grid components reversed (x is W)."""
    k = len(input_spatial)
    axes = [_axis_taps(grid[:, :, k - 1 - j], n, mode, padding_mode, align_corners, k)
            for j, n in enumerate(input_spatial)]
    strides = [math.prod(input_spatial[j + 1:]) for j in range(k)]
    for combo in itertools.product(*axes):
        flat = sum(idx * s for (idx, _, _, _), s in zip(combo, strides))
        # pairwise: a ufunc's reduce over a list first makes the list one (host) array
        valid = functools.reduce(np.logical_and, [v for _, v, _, _ in combo])
        ws = [w for _, _, w, _ in combo]
        weight = math.prod(ws)
        dweights = [dw * math.prod(ws[:j] + ws[j + 1:]) for j, (_, _, _, dw) in enumerate(combo)]
        yield flat, valid, weight, dweights


def _gather(xf, flat, valid):
    """xf (N, C, P) at flat (N, Q) for every channel; 0 where the corner is outside."""
    g = np.take_along_axis(xf, flat[:, None, :], axis=2)
    return np.where(valid[:, None, :], g, 0)


def _flatten(input, grid):
    """(input array, input as (N, C, points), grid as (N, points, k)). Half types are computed in
    their own precision, rounding after each operation as ATen's vectorized kernel does."""
    x, g = nd(input), nd(grid)
    n, c = x.shape[:2]
    xf = x.reshape(n, c, math.prod(x.shape[2:]))
    gf = g.reshape(n, math.prod(g.shape[1:-1]), g.shape[-1])
    return x, xf, gf


def _grid_sampler(k):
    def kernel(input, grid, interpolation_mode, padding_mode, align_corners):
        shape = check_grid_sampler(k, input, grid, interpolation_mode, padding_mode)
        x, xf, gf = _flatten(input, grid)
        out = array_module(xf).zeros(xf.shape[:2] + gf.shape[1:2], xf.dtype)
        # non-finite grid values flow through as ATen's (NaN weights, out-of-range taps)
        with np.errstate(invalid="ignore", over="ignore"):
            for flat, valid, w, _ in _corners(x.shape[2:], gf, interpolation_mode, padding_mode,
                                              align_corners) if out.size else ():
                out += _gather(xf, flat, valid) * w[:, None, :]
        return wrap(out.reshape(shape).astype(x.dtype, copy=False))
    kernel.__name__ = f"grid_sampler_{k}d"
    return kernel


def _grid_sampler_backward(k):
    def kernel(grad_output, input, grid, interpolation_mode, padding_mode, align_corners,
               output_mask):
        shape = check_grid_sampler(k, input, grid, interpolation_mode, padding_mode)
        if tuple(grad_output._size) != shape:  # (ATen reads out of bounds here)
            raise RuntimeError(f"grid_sampler_{k}d_backward(): expected grad_output to have sizes "
                               f"{_shape_str(shape)}, but got {_shape_str(grad_output._size)}")
        if grad_output._dtype is not input._dtype:
            raise RuntimeError(f"expected scalar type {input._dtype._short} but found "
                               f"{grad_output._dtype._short}")
        x, xf, gf = _flatten(input, grid)
        if xf.dtype.itemsize == 2:  # half types: gradients accumulated in float32
            xf, gf = xf.astype(np.float32), gf.astype(np.float32)
        n, c, p = xf.shape
        go = nd(grad_output).reshape(n, c, gf.shape[1]).astype(xf.dtype, copy=False)
        xp = array_module(xf)
        g_input = xp.zeros(n * c * p, np.float64) if output_mask[0] else None
        g_grid = xp.zeros(gf.shape, xf.dtype)
        # input index of every (batch, channel) row, for one scatter per corner
        row = (xp.arange(n * c).reshape(n, c, 1) * p)
        with np.errstate(invalid="ignore", over="ignore"):
            for flat, valid, w, dws in _corners(x.shape[2:], gf, interpolation_mode,
                                                padding_mode, align_corners) if go.size else ():
                if g_input is not None:
                    contrib = np.where(valid[:, None, :], go * w[:, None, :], 0).ravel()
                    idx = (row + flat[:, None, :]).ravel()
                    if xp is np:
                        g_input += np.bincount(idx, contrib, minlength=n * c * p)
                    else:  # (CuPy's bincount reads the largest index back to size its result)
                        import cupyx  # CuPy's scatter-add: atomic adds, one kernel
                        cupyx.scatter_add(g_input, idx, contrib.astype(np.float64))
                if interpolation_mode != NEAREST:
                    v = np.einsum("ncq,ncq->nq", go, _gather(xf, flat, valid))
                    for j, dw in enumerate(dws):
                        g_grid[:, :, k - 1 - j] += v * dw
        gi = None if g_input is None else \
            wrap(g_input.reshape(input._size).astype(x.dtype, copy=False))
        return gi, wrap(g_grid.reshape(grid._size).astype(x.dtype, copy=False))
    kernel.__name__ = f"grid_sampler_{k}d_backward"
    return kernel


grid_sampler_2d = _grid_sampler(2)
grid_sampler_3d = _grid_sampler(3)
grid_sampler_2d_backward = _grid_sampler_backward(2)
grid_sampler_3d_backward = _grid_sampler_backward(3)


# ---------------------------------------------------------------------------------------------
# Antialiased upsampling


def _aa_matrix(name, n, m, align_corners, scale, dtype):
    """ATen's _compute_indices_min_size_weights_aa for every output position: an (m, n) matrix
    whose row i holds output i's normalized filter weights over inputs [xmin, xmin + xsize)."""
    filt, interp_size, _ = _FILTERS[name]
    s = dtype.type(_scale(n, m, align_corners, scale))
    support = (interp_size * 0.5) * s if s >= 1 else dtype.type(interp_size * 0.5)
    max_size = int(math.ceil(support)) * 2 + 1
    invscale = 1 / s if s >= 1 else dtype.type(1)
    center = s * (np.arange(m, dtype=dtype) + dtype.type(0.5))
    xmin = np.maximum((center - support + dtype.type(0.5)).astype(np.int64), 0)
    xsize = np.clip(np.minimum((center + support + dtype.type(0.5)).astype(np.int64), n) - xmin,
                    0, max_size)
    j = np.arange(max_size)
    inside = j < xsize[:, None]
    w = filt((j + xmin[:, None] - center[:, None] + dtype.type(0.5)) * invscale).astype(dtype)
    w = np.where(inside, w, 0)
    total = w.sum(1, keepdims=True)
    w = np.where(total != 0, w / np.where(total != 0, total, 1), w)
    mat = np.zeros((m, n), dtype)
    rows = np.broadcast_to(np.arange(m)[:, None], w.shape)
    mat[rows[inside], (xmin[:, None] + j)[inside]] = w[inside]
    return mat


def _aa_mats(name, input_size, output_size, align_corners, scales, dtype):
    scales = list(scales) + [None] * 2
    return [_aa_matrix(name, n, m, align_corners, s, dtype)
            for n, m, s in zip(input_size[2:], output_size, scales)]


def _fixed_point(w):
    """ATen's int16 weights of the uint8 kernels: the most precision bits that keep the largest
    weight below 2**15, and the weights scaled by them (rounded half away from zero)."""
    bits = 0
    while bits < 22 and int(0.5 + w.max() * (1 << (bits + 1))) < (1 << 15):
        bits += 1
    scaled = w * (1 << bits)
    return np.trunc(scaled + np.copysign(0.5, scaled)).astype(np.int64), bits


def _apply_uint8(x, mats):
    """uint8 images as ATen resamples them: width pass then height pass (an axis whose size does
    not change is skipped), each in fixed point, rounded and clamped to uint8."""
    a = x.astype(np.int64)
    for axis in (-1, -2):
        m = mats[axis]
        if m.shape[0] == m.shape[1]:
            continue
        w, bits = _fixed_point(m)
        a = np.moveaxis(np.moveaxis(a, axis, -1) @ like(a, w.T), -1, axis)
        a = np.clip((a + (1 << (bits - 1))) >> bits, 0, 255)
    return contiguous(a.astype(np.uint8))


def _upsample_aa(name):
    def kernel(self, output_size, align_corners, scales_h=None, scales_w=None):
        shape = check_upsample_aa(name, self._size, output_size, self._dtype)
        x = nd(self)
        if 0 in shape:
            return wrap(array_module(x).zeros(shape, x.dtype))
        ct = np.float64 if x.dtype == np.uint8 else x.dtype
        mats = _aa_mats(name, x.shape, output_size, align_corners, [scales_h, scales_w],
                        np.dtype(ct))
        if x.dtype == np.uint8:
            return wrap(_apply_uint8(x, mats))
        return wrap(_apply(x.astype(ct, copy=False), mats).astype(x.dtype, copy=False))
    kernel.__name__ = name
    return kernel


def _upsample_aa_backward(name):
    def kernel(grad_output, output_size, input_size, align_corners, scales_h=None,
               scales_w=None):
        shape = check_upsample_aa(name, input_size, output_size, grad_output._dtype, True)
        if tuple(grad_output._size) != shape:
            if len(grad_output._size) != len(shape):
                raise RuntimeError(f"Expected grad_output to be a tensor of dimension "
                                   f"{len(shape)} but got: dimension {len(grad_output._size)}")
            i = next(i for i, (a, b) in enumerate(zip(shape, grad_output._size)) if a != b)
            raise RuntimeError(f"Expected grad_output to have the same shape as output; "
                               f"output.size({i}) = {shape[i]} but got grad_output.size({i}) = "
                               f"{grad_output._size[i]}")
        g = nd(grad_output)
        if 0 in input_size or 0 in shape:
            return wrap(array_module(g).zeros(tuple(input_size), g.dtype))
        mats = _aa_mats(name, input_size, output_size, align_corners, [scales_h, scales_w],
                        g.dtype)
        return wrap(_apply(g, mats, transpose=True))
    kernel.__name__ = name + "_backward"
    return kernel


for _n in _AA:
    register(_n, "CPU", _upsample_aa(_n))
    register(_n + "_backward", "CPU", _upsample_aa_backward(_n))
