"""CPU pooling kernels for 1-3 spatial dims (the leading dims are batch/channels): max pooling
with indices (+ backward), average pooling (+ backward), adaptive average / max pooling
(+ backward), fractional max pooling (+ backward) and max_unpool.

Windows are taken without copying: fixed-size windows by one ``as_strided`` view of a padded
input, adaptive (variable-size) windows by separable per-axis structure: adaptive average
pooling is a product of per-axis averaging matrices, adaptive max pooling gathers each box
through per-axis index tables. Gradients are scattered with ``np.bincount`` (max) or one
strided add per kernel offset (average). Max pooling of float32/float64 and the scatter of its
gradient are C loops where built (``max_pool.py``, PyTorch's order and bits)."""
import itertools
import math

import numpy as np

from ..._core import dtype as D
from . import max_pool
from ._util import (array_module, array_of, check_index_range, contiguous, like, nd, strided_view,
                    wrap)
from ..rules.pool import (_float_or_long, _x, check_adaptive, check_avg_pool,
                          check_fractional_max_pool, check_fractional_max_pool_backward,
                          check_max_unpool, check_pool, check_pool_backward)


# ---------------------------------------------------------------------------------------------
# Shared shape rules (also used by the Meta kernels)


# ---------------------------------------------------------------------------------------------
# Max pooling

def _lowest(dtype):
    return -np.inf if dtype.kind in "fV" else np.iinfo(dtype).min


def _windows(x, k, kernel_size, stride, padding, dilation, out, fill):
    """View (B, *O, *K) of x (B, *S) padded with ``fill`` (enough on the right for ceil_mode)."""
    spatial = x.shape[-k:]
    hi = [max(0, (o - 1) * s + d * (kk - 1) + 1 - (n + p)) for o, s, d, kk, n, p in
          zip(out, stride, dilation, kernel_size, spatial, padding)]
    padded = array_module(x).full(
        (x.shape[0], *[n + p + h for n, p, h in zip(spatial, padding, hi)]), fill, x.dtype)
    padded[(slice(None), *[slice(p, p + n) for p, n in zip(padding, spatial)])] = x
    st = padded.strides
    return strided_view(padded, (x.shape[0], *out, *kernel_size),
                      (st[0], *[st[1 + i] * stride[i] for i in range(k)],
                       *[st[1 + i] * dilation[i] for i in range(k)]))


def _max_pool(name, k, self, kernel_size, stride, padding, dilation, ceil_mode):
    shape, kernel_size, stride, padding, dilation = check_pool(
        name, self, k, kernel_size, stride, padding, dilation, ceil_mode)
    _float_or_long(name, self._dtype, (D.uint8, D.int8, D.int16, D.int32, D.int64))
    x = nd(self)
    spatial = x.shape[-k:]
    b = math.prod(x.shape[:-k])
    out = shape[-k:]
    if b == 0:
        return wrap(np.zeros(shape, x.dtype)), wrap(np.zeros(shape, np.int64))
    res = max_pool.forward(x.reshape(b, *spatial), kernel_size, stride, padding, dilation, out)
    if res is not None:
        return wrap(res[0].reshape(shape)), wrap(res[1].reshape(shape))
    # integers widen to int64 so that the padding value is below every real value
    cd = np.float32 if x.dtype.name in ("float16", "bfloat16") else \
        np.int64 if x.dtype.kind in "iu" else x.dtype
    win = _windows(x.reshape(b, *spatial).astype(cd, copy=False), k, kernel_size, stride,
                   padding, dilation, out, _lowest(np.dtype(cd)))
    win = win.reshape(b, *out, -1)
    arg = np.argmax(win, axis=-1)
    # ATen keeps a value when it is greater or NaN: the first maximum, or the last NaN
    if win.dtype.kind == "f":
        nan = np.isnan(win)
        last_nan = win.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
        arg = np.where(nan.any(axis=-1), last_nan, arg)
    vals = np.take_along_axis(win, arg[..., None], -1)[..., 0]
    # window offset -> flat index into the input's spatial dims; a window of nothing above the
    # dtype's lowest value keeps ATen's first value and index: that value, and the window's
    # first position inside the input (not argmax's, which may be padding)
    lowest = _lowest(x.dtype if x.dtype.kind in "iu" else np.dtype(cd))
    low = vals <= lowest
    vals = np.where(low, lowest, vals)
    koffs = np.unravel_index(arg, kernel_size)
    flat = 0
    for i in range(k):
        o = like(x, np.arange(out[i]).reshape([-1 if j == i else 1 for j in range(k)]))
        start = o * stride[i] - padding[i]
        first = np.where(start < 0, start + -(start // dilation[i]) * dilation[i], start)
        pos = np.where(low, first, start + koffs[i] * dilation[i])
        flat = flat * spatial[i] + pos
    return (wrap(vals.astype(x.dtype, copy=False).reshape(shape)), wrap(flat.reshape(shape)))


def max_pool2d_with_indices(self, kernel_size, stride=(), padding=(0,), dilation=(1,),
                            ceil_mode=False):
    return _max_pool("max_pool2d", 2, self, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d_with_indices(self, kernel_size, stride=(), padding=(0,), dilation=(1,),
                            ceil_mode=False):
    return _max_pool("max_pool3d", 3, self, kernel_size, stride, padding, dilation, ceil_mode)


def scatter_by_index(grad, indices, in_shape, k):
    """grad_input (in_shape) where each grad element is added at its flat spatial index."""
    g = nd(grad)
    idx = nd(indices)
    spatial = math.prod(in_shape[-k:])
    b = math.prod(in_shape[:-k])
    cd = np.float32 if g.dtype.name in ("float16", "bfloat16") else g.dtype
    if g.size == 0 or b == 0:
        return wrap(np.zeros(in_shape, g.dtype))
    res = max_pool.backward(g, idx, b, spatial)
    if res is not None:
        return wrap(res.reshape(in_shape))
    base = like(g, (np.arange(b, dtype=np.int64) * spatial).reshape(b, 1))
    idx = idx.reshape(b, -1)
    # an index outside its plane (ATen's -1, or the first position of a max pooling window with
    # none inside the input) adds nothing, where ATen writes wherever it points
    inside = (idx >= 0) & (idx < spatial)
    flat = (np.where(inside, idx, 0) + base).ravel()
    weights = np.where(inside, g.reshape(b, -1), 0).ravel().astype(np.float64)
    xp = array_module(g)
    if xp is np:
        res = np.bincount(flat, weights=weights, minlength=b * spatial)
    else:  # (CuPy's bincount reads the largest index back to size its result)
        import cupyx  # CuPy's scatter-add: atomic adds, one kernel
        res = xp.zeros(b * spatial, np.float64)
        cupyx.scatter_add(res, flat, weights)
    return wrap(res.astype(cd).astype(g.dtype, copy=False).reshape(in_shape))


def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
                                     ceil_mode, indices):
    shape = check_pool("max_pool2d", self, 2, kernel_size, stride, padding, dilation,
                       ceil_mode)[0]
    check_pool_backward("max_pool2d", grad_output, self, indices, shape)
    _float_or_long("max_pool2d_backward", grad_output._dtype, ())  # (floating types only)
    return scatter_by_index(grad_output, indices, self._size, 2)


def max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
                                     ceil_mode, indices):
    shape = check_pool("max_pool3d", self, 3, kernel_size, stride, padding, dilation,
                       ceil_mode, backward=True)[0]
    check_pool_backward("max_pool3d", grad_output, self, indices, shape)
    return scatter_by_index(grad_output, indices, self._size, 3)


# ---------------------------------------------------------------------------------------------
# Average pooling

def _avg_divisor(spatial, out, kernel_size, stride, padding, count_include_pad,
                 divisor_override):
    """Per-output-position divisor (broadcastable over *O), ATen's rule per dim, multiplied."""
    if divisor_override is not None:
        return divisor_override
    div = 1
    k = len(out)
    for i in range(k):
        start = np.arange(out[i]) * stride[i] - padding[i]
        end = np.minimum(start + kernel_size[i], spatial[i] + padding[i])
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, spatial[i])
        div = div * (end - start).reshape([-1 if j == i else 1 for j in range(k)])
    return div


def _avg_pool(name, k, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    shape, kernel_size, stride, padding, _ = check_avg_pool(
        name, self, k, kernel_size, stride, padding, ceil_mode, divisor_override)
    x = nd(self)
    spatial, out = x.shape[-k:], shape[-k:]
    b = math.prod(x.shape[:-k])
    if b == 0:
        return wrap(np.zeros(shape, x.dtype))
    cd = x.dtype if x.dtype in (np.float64, np.int64) else np.float32
    win = _windows(x.reshape(b, *spatial).astype(cd, copy=False), k, kernel_size, stride,
                   padding, [1] * k, out, 0)
    s = win.sum(axis=tuple(range(-k, 0)))
    div = _avg_divisor(spatial, out, kernel_size, stride, padding, count_include_pad,
                       divisor_override)
    # integers divide truncating toward zero, as C++ does
    div = like(s, div)
    res = np.sign(s) * (np.abs(s) // div) if x.dtype.kind in "iu" else s / div
    return wrap(array_of(res).astype(x.dtype, copy=False).reshape(shape))


def avg_pool2d(self, kernel_size, stride=(), padding=(0,), ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool("avg_pool2d", 2, self, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(self, kernel_size, stride=(), padding=(0,), ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool("avg_pool3d", 3, self, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _avg_pool_backward(name, k, grad_output, self, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override):
    shape, kernel_size, stride, padding, _ = check_avg_pool(
        name, self, k, kernel_size, stride, padding, ceil_mode, divisor_override, backward=True)
    check_pool_backward(name, grad_output, self, None, shape)
    g = nd(grad_output)
    spatial, out = self._size[-k:], shape[-k:]
    b = math.prod(self._size[:-k])
    cd = g.dtype if g.dtype == np.float64 else np.float32
    if b == 0:
        return wrap(np.zeros(self._size, g.dtype))
    div = _avg_divisor(spatial, out, kernel_size, stride, padding, count_include_pad,
                       divisor_override)
    gd = g.reshape(b, *out).astype(cd) / like(g, div)
    hi = [max(0, (o - 1) * s + kk - (n + p)) for o, s, kk, n, p in
          zip(out, stride, kernel_size, spatial, padding)]
    gp = array_module(g).zeros((b, *[n + p + h for n, p, h in zip(spatial, padding, hi)]), cd)
    for offs in itertools.product(*[range(kk) for kk in kernel_size]):
        gp[(slice(None), *[slice(f, f + s * (o - 1) + 1, s) for f, s, o in
                           zip(offs, stride, out)])] += gd
    gp = gp[(slice(None), *[slice(p, p + n) for p, n in zip(padding, spatial)])]
    return wrap(gp.astype(g.dtype).reshape(self._size))


def avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
    return _avg_pool_backward("avg_pool2d", 2, grad_output, self, kernel_size, stride, padding,
                              ceil_mode, count_include_pad, divisor_override)


def avg_pool3d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
    return _avg_pool_backward("avg_pool3d", 3, grad_output, self, kernel_size, stride, padding,
                              ceil_mode, count_include_pad, divisor_override)


# ---------------------------------------------------------------------------------------------
# Adaptive pooling: window i of an axis of size n pooled to m is [floor(i*n/m), ceil((i+1)*n/m))

def _adaptive_bounds(n, m):
    i = np.arange(m)
    return (i * n) // m, -((-(i + 1) * n) // m)


def _avg_matrix(n, m, dtype):
    """(m, n) matrix averaging each adaptive window of an axis."""
    start, end = _adaptive_bounds(n, m)
    j = np.arange(n)
    inside = (j >= start[:, None]) & (j < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


def _apply_axes(a, mats, k, transpose=False):
    for i, m in enumerate(mats):
        ax = a.ndim - k + i
        m = like(a, m)
        a = np.moveaxis(np.moveaxis(a, ax, -1) @ (m if transpose else m.T), -1, ax)
    return a


def _adaptive_avg(name, k, self, output_size):
    shape = check_adaptive(name, self, k, output_size)
    x = nd(self)
    if 0 in shape:
        return wrap(np.zeros(shape, x.dtype))
    cd = x.dtype if x.dtype == np.float64 else np.float32
    mats = [_avg_matrix(n, m, cd) for n, m in zip(x.shape[-k:], output_size)]
    res = _apply_axes(x.astype(cd, copy=False), mats, k)
    return wrap(contiguous(res).astype(x.dtype, copy=False))


def adaptive_avg_pool2d_(self, output_size):
    return _adaptive_avg("adaptive_avg_pool2d", 2, self, output_size)


def adaptive_avg_pool3d_(self, output_size):
    return _adaptive_avg("adaptive_avg_pool3d", 3, self, output_size)


def _adaptive_avg_backward(name, k, grad_output, self):
    g = nd(grad_output)
    if len(g.shape) != len(self._size):
        raise RuntimeError(f"{name}_backward(): Expected grad_output and input to have the same "
                           f"number of dimensions")
    if 0 in self._size:
        return wrap(np.zeros(self._size, g.dtype))
    cd = g.dtype if g.dtype == np.float64 else np.float32
    mats = [_avg_matrix(n, m, cd) for n, m in zip(self._size[-k:], g.shape[-k:])]
    res = _apply_axes(g.astype(cd, copy=False), mats, k, transpose=True)
    return wrap(contiguous(res).astype(g.dtype, copy=False))


def adaptive_avg_pool2d_backward_(grad_output, self):
    return _adaptive_avg_backward("adaptive_avg_pool2d", 2, grad_output, self)


def adaptive_avg_pool3d_backward_(grad_output, self):
    return _adaptive_avg_backward("adaptive_avg_pool3d", 3, grad_output, self)


def _adaptive_max(name, k, self, output_size):
    shape = check_adaptive(name, self, k, output_size)
    x = nd(self)
    if 0 in shape:
        return wrap(np.zeros(shape, x.dtype)), wrap(np.zeros(shape, np.int64))
    spatial = x.shape[-k:]
    b = math.prod(x.shape[:-k])
    cd = np.float32 if x.dtype.name in ("float16", "bfloat16") else x.dtype
    a = x.reshape(b, *spatial).astype(cd, copy=False)
    tables = []
    for n, m in zip(spatial, output_size):
        start, end = _adaptive_bounds(n, m)
        kmax = int((end - start).max())
        # positions past a window's end repeat its last element: max and first argmax unchanged
        tables.append(np.minimum(start[:, None] + np.arange(kmax), (end - 1)[:, None]))
    # gather (B, O1, K1, O2, K2, ...) with open-mesh index tables, then move K's last
    idx = np.ix_(*[like(a, t.ravel()) for t in tables])
    win = a[(slice(None), *idx)].reshape(b, *[d for t in tables for d in t.shape])
    win = win.transpose(0, *range(1, 2 * k, 2), *range(2, 2 * k + 1, 2)).reshape(b, *output_size,
                                                                                -1)
    arg = np.argmax(win, axis=-1)
    vals = np.take_along_axis(win, arg[..., None], -1)[..., 0]
    koffs = np.unravel_index(arg, [t.shape[1] for t in tables])
    flat = 0
    for i, t in enumerate(tables):
        o = like(a, np.arange(output_size[i]).reshape([-1 if j == i else 1 for j in range(k)]))
        flat = flat * spatial[i] + like(a, t)[o, koffs[i]]
    return (wrap(vals.astype(x.dtype, copy=False).reshape(shape)), wrap(flat.reshape(shape)))


def adaptive_max_pool2d(self, output_size):
    return _adaptive_max("adaptive_max_pool2d", 2, self, output_size)


def adaptive_max_pool3d(self, output_size):
    return _adaptive_max("adaptive_max_pool3d", 3, self, output_size)


def adaptive_max_pool2d_backward(grad_output, self, indices):
    return scatter_by_index(grad_output, indices, self._size, 2)


def adaptive_max_pool3d_backward(grad_output, self, indices):
    return scatter_by_index(grad_output, indices, self._size, 3)


# ---------------------------------------------------------------------------------------------
# max_unpool: scatter values to their flat spatial indices in a zero output


def _max_unpool(name, k, self, indices, output_size):
    shape = check_max_unpool(name, self, indices, output_size, k)
    x, idx = nd(self), nd(indices)
    b = math.prod(shape[:-k])
    n = math.prod(output_size)
    res = array_module(x).zeros((b, n), x.dtype)
    if x.size:
        flat = idx.reshape(b, -1)
        if array_module(flat) is not np:  # a device-side check, as ATen's CUDA kernel asserts
            check_index_range(flat, 0, n, RuntimeError, "max_unpool: found an invalid max index")
        elif flat.size and (flat.min() < 0 or flat.max() >= n):
            bad = flat[(flat < 0) | (flat >= n)][0]
            raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                               f"{_x(output_size)}")
        np.put_along_axis(res, flat, x.reshape(b, -1), axis=1)
    return wrap(res.reshape(shape))


def max_unpool2d(self, indices, output_size):
    return _max_unpool("max_unpool2d", 2, self, indices, output_size)


def max_unpool3d(self, indices, output_size, stride, padding):
    return _max_unpool("max_unpool3d", 3, self, indices, output_size)


# ---------------------------------------------------------------------------------------------
# Fractional max pooling: one window start per output position, drawn from a random sample per
# (batch, plane, dim) by ATen's generate_intervals


def _frac_starts(samples, n, out, kk):
    """ATen's generate_intervals for every (batch, plane) at once: ``samples`` (B, C) in the
    input's dtype; the arithmetic stays in that dtype (ATen computes in scalar_t, and the
    truncation points depend on its rounding)."""
    starts = np.empty((*samples.shape, out), np.int64)
    if out > 1:
        dt = samples.dtype.type
        alpha = dt(n - kk) / dt(out - 1)
        i = np.arange(out - 1).astype(samples.dtype)
        s = samples[..., None]
        starts[..., :-1] = (np.trunc(((i + s) * alpha).astype(np.float64)).astype(np.int64) -
                            np.trunc((s * alpha).astype(np.float64)).astype(np.int64))
    if out > 0:
        starts[..., -1] = n - kk
    return starts


def _fractional_max_pool(k, self, kernel_size, output_size, random_samples):
    shape = check_fractional_max_pool(self, k, kernel_size, output_size, random_samples)
    x = nd(self)
    batched = x.ndim == k + 2
    xb = x if batched else x[None]
    b, c, spatial = xb.shape[0], xb.shape[1], xb.shape[2:]
    if b == 0 or math.prod(output_size) == 0:
        return wrap(np.zeros(shape, x.dtype)), wrap(np.zeros(shape, np.int64))
    rs = nd(random_samples)[:b]
    # flat spatial index of every (output position, kernel offset): (B, C, *O, *K)
    flat = np.zeros((b, c) + (1,) * (2 * k), np.int64)
    for i in range(k):
        # sample 0 drives the last dim in 2d (W, then H) and the first in 3d (T, H, W)
        j = (k - 1 - i) if k == 2 else i
        st = _frac_starts(rs[:, :, j], spatial[i], output_size[i], kernel_size[i])
        pos = st[..., :, None] + np.arange(kernel_size[i])  # (B, C, O_i, K_i)
        view = [b, c] + [1] * (2 * k)
        view[2 + i], view[2 + k + i] = output_size[i], kernel_size[i]
        flat = flat * spatial[i] + pos.reshape(view)
    flat = np.broadcast_to(flat, (b, c, *output_size, *kernel_size)).reshape(
        b, c, *output_size, -1)
    kn = flat.shape[-1]
    if kn == 0:  # an empty window: ATen's initial max (-inf) at the window's start
        idx = np.zeros((b, c, *output_size), np.int64)
        for i in range(k):
            j = (k - 1 - i) if k == 2 else i
            st = _frac_starts(rs[:, :, j], spatial[i], output_size[i], kernel_size[i])
            view = [b, c] + [1] * k
            view[2 + i] = output_size[i]
            idx = idx * spatial[i] + st.reshape(view)
        vals = np.full(idx.shape, -np.inf, x.dtype)
        return wrap(vals.reshape(shape)), wrap(idx.reshape(shape))
    cd = np.float32 if x.dtype.name in ("float16", "bfloat16") else x.dtype
    xf = xb.reshape(b, c, -1).astype(cd, copy=False)
    win = np.take_along_axis(xf, flat.reshape(b, c, -1), axis=2).reshape(flat.shape)
    arg = np.argmax(win, axis=-1)
    # ATen takes a value when it is greater or NaN: the first maximum, or the last NaN
    nan = np.isnan(win)
    if nan.any():
        last_nan = kn - 1 - np.argmax(nan[..., ::-1], axis=-1)
        arg = np.where(nan.any(axis=-1), last_nan, arg)
    vals = np.take_along_axis(win, arg[..., None], -1)[..., 0]
    idx = np.take_along_axis(flat, arg[..., None], -1)[..., 0]
    return (wrap(vals.astype(x.dtype, copy=False).reshape(shape)), wrap(idx.reshape(shape)))


def fractional_max_pool2d(self, kernel_size, output_size, random_samples):
    return _fractional_max_pool(2, self, kernel_size, output_size, random_samples)


def fractional_max_pool3d(self, kernel_size, output_size, random_samples):
    return _fractional_max_pool(3, self, kernel_size, output_size, random_samples)


def fractional_max_pool2d_backward(grad_output, self, kernel_size, output_size, indices):
    check_fractional_max_pool_backward(grad_output, self, 2, output_size, indices)
    return scatter_by_index(grad_output, indices, self._size, 2)


def fractional_max_pool3d_backward(grad_output, self, kernel_size, output_size, indices):
    check_fractional_max_pool_backward(grad_output, self, 3, output_size, indices)
    return scatter_by_index(grad_output, indices, self._size, 3)
