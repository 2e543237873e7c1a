"""CPU pooling kernels for 1-3 spatial dims (the leading dims are batch/channels): max pooling
with indices (+ backward), average pooling (+ backward), adaptive average / max pooling
(+ backward) and max_unpool.

Windows are taken without copying: fixed-size windows by one ``as_strided`` view of a padded
input, adaptive (variable-size) windows by separable per-axis structure: adaptive average
pooling is a product of per-axis averaging matrices, adaptive max pooling gathers each box
through per-axis index tables. Gradients are scattered with ``np.bincount`` (max) or one
strided add per kernel offset (average)."""
import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..._core import dtype as D
from ._util import nd, wrap


def _x(shape):
    return "x".join(map(str, shape))


def _float_or_long(name, dtype, ints=(D.int64,)):
    """Dtype support of the pooling kernels: floating types plus ``ints``."""
    if not (dtype.is_floating_point or dtype in ints):
        raise NotImplementedError(f"\"{name}\" not implemented for '{dtype._short}'")


# ---------------------------------------------------------------------------------------------
# Shared shape rules (also used by the Meta kernels)

_WORDS = {2: "two", 3: "three"}
_FORMS = {"kernel_size": "must either be a single int, or a tuple of",
          "stride": "must either be omitted, a single int, or a tuple of",
          "padding": "must either be a single int, or a tuple of",
          "dilation": "must be either a single int, or a tuple of"}


def _expand(name, v, k, what):
    """A one-element parameter list stands for every spatial dim (PyTorch's pooling rule)."""
    v = list(v)
    if len(v) == 1:
        return v * k
    if len(v) != k:
        raise RuntimeError(f"{name}: {what} {_FORMS[what]} {_WORDS[k]} ints")
    return v


def pooling_output_size(size, k, pad, stride, dilation, ceil_mode):
    """ATen's pooling_output_shape."""
    out = (size + 2 * pad - dilation * (k - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def check_pool(name, self, k, kernel_size, stride, padding, dilation, ceil_mode, dilated=True):
    """Parameter and shape checks of max/avg pooling; returns (output shape, expanded params)."""
    kernel_size = _expand(name, kernel_size, k, "kernel_size")
    if not stride:
        stride = kernel_size
    stride = _expand(name, stride, k, "stride")
    padding = _expand(name, padding, k, "padding")
    dilation = _expand(name, dilation, k, "dilation") if dilated else [1] * k
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(kk <= 0 for kk in kernel_size):
        raise RuntimeError(f"kernel size should be greater than zero, but got "
                           f"{' '.join(f'k{c}: {v}' for c, v in zip('TWH'[-k:], kernel_size))}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got "
                           f"{' '.join(f'dilation{c}: {v}' for c, v in zip('THW'[-k:], dilation))}")
    for p, kk, d in zip(padding, kernel_size, dilation):
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > (d * (kk - 1) + 1) // 2:
            if dilated:
                raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                                   f"pad={p}, kernel_size={kk} and dilation={d}")
            raise RuntimeError(f"pad should be at most half of kernel size, but got pad={p} and "
                               f"kernel_size={kk}")
    nd_ = len(self._size)
    if nd_ not in (k + 1, k + 2) or any(s == 0 for s in self._size[nd_ - k - 1 + (nd_ == k + 2):]):
        if k == 2:
            raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
        raise RuntimeError(f"non-empty {k + 1}D or {k + 2}D (batch mode) tensor expected for "
                           f"input")
    spatial = self._size[-k:]
    out = [pooling_output_size(s, kk, p, st, d, ceil_mode) for s, kk, p, st, d in
           zip(spatial, kernel_size, padding, stride, dilation)]
    if any(o < 1 for o in out):
        lead = self._size[-k - 1]
        raise RuntimeError(f"Given input size: ({_x((lead, *spatial))}). Calculated output size: "
                           f"({_x((lead, *out))}). Output size is too small")
    return (*self._size[:-k], *out), kernel_size, stride, padding, dilation


# ---------------------------------------------------------------------------------------------
# Max pooling

def _lowest(dtype):
    return -np.inf if dtype.kind in "fV" else np.iinfo(dtype).min


def _windows(x, k, kernel_size, stride, padding, dilation, out, fill):
    """View (B, *O, *K) of x (B, *S) padded with ``fill`` (enough on the right for ceil_mode)."""
    spatial = x.shape[-k:]
    hi = [max(0, (o - 1) * s + d * (kk - 1) + 1 - (n + p)) for o, s, d, kk, n, p in
          zip(out, stride, dilation, kernel_size, spatial, padding)]
    xp = np.full((x.shape[0], *[n + p + h for n, p, h in zip(spatial, padding, hi)]), fill,
                 x.dtype)
    xp[(slice(None), *[slice(p, p + n) for p, n in zip(padding, spatial)])] = x
    st = xp.strides
    return as_strided(xp, (x.shape[0], *out, *kernel_size),
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
    # integers widen to int64 so that the padding value is below every real value
    cd = np.float32 if x.dtype.name in ("float16", "bfloat16") else \
        np.int64 if x.dtype.kind in "iu" else x.dtype
    win = _windows(x.reshape(b, *spatial).astype(cd, copy=False), k, kernel_size, stride,
                   padding, dilation, out, _lowest(np.dtype(cd)))
    win = win.reshape(b, *out, -1)
    arg = np.argmax(win, axis=-1)
    vals = np.take_along_axis(win, arg[..., None], -1)[..., 0]
    # window offset -> flat index into the input's spatial dims
    koffs = np.unravel_index(arg, kernel_size)
    flat = np.zeros(arg.shape, np.int64)
    for i in range(k):
        o = np.arange(out[i]).reshape([-1 if j == i else 1 for j in range(k)])
        pos = o * stride[i] - padding[i] + koffs[i] * dilation[i]
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
    base = (np.arange(b, dtype=np.int64) * spatial).reshape(b, 1)
    flat = (idx.reshape(b, -1) + base).ravel()
    res = np.bincount(flat, weights=g.reshape(b, -1).ravel().astype(np.float64),
                      minlength=b * spatial)
    return wrap(res.astype(cd).astype(g.dtype, copy=False).reshape(in_shape))


def check_pool_backward(name, grad_output, self, indices, shape):
    if tuple(grad_output._size) != tuple(shape):
        raise RuntimeError(f"Expected grad_output of size {list(shape)}, but got "
                           f"{list(grad_output._size)}")


def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
                                     ceil_mode, indices):
    shape = check_pool("max_pool2d", self, 2, kernel_size, stride, padding, dilation,
                       ceil_mode)[0]
    check_pool_backward("max_pool2d", grad_output, self, indices, shape)
    return scatter_by_index(grad_output, indices, self._size, 2)


def max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
                                     ceil_mode, indices):
    shape = check_pool("max_pool3d", self, 3, kernel_size, stride, padding, dilation,
                       ceil_mode)[0]
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


def check_avg_pool(name, self, k, kernel_size, stride, padding, ceil_mode, divisor_override):
    nd_ = len(self._size)
    if k == 2 and nd_ < 3:  # ATen reads input.size(-3) before any check
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd_, 1)}, "
                         f"{max(nd_, 1) - 1}], but got -3)")
    res = check_pool(name, self, k, kernel_size, stride, padding, (1,), ceil_mode, dilated=False)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if k == 3 and self._dtype in (D.float16, D.bfloat16):
        raise NotImplementedError(f"\"avg_pool3d_out_frame\" not implemented for "
                                  f"'{self._dtype._short}'")
    _float_or_long(name, self._dtype)
    return res


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
    res = np.sign(s) * (np.abs(s) // div) if x.dtype.kind in "iu" else s / div
    return wrap(np.asarray(res).astype(x.dtype, copy=False).reshape(shape))


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
        name, self, k, kernel_size, stride, padding, ceil_mode, divisor_override)
    check_pool_backward(name, grad_output, self, None, shape)
    g = nd(grad_output)
    spatial, out = self._size[-k:], shape[-k:]
    b = math.prod(self._size[:-k])
    cd = g.dtype if g.dtype == np.float64 else np.float32
    if b == 0:
        return wrap(np.zeros(self._size, g.dtype))
    div = _avg_divisor(spatial, out, kernel_size, stride, padding, count_include_pad,
                       divisor_override)
    gd = g.reshape(b, *out).astype(cd) / div
    hi = [max(0, (o - 1) * s + kk - (n + p)) for o, s, kk, n, p in
          zip(out, stride, kernel_size, spatial, padding)]
    gp = np.zeros((b, *[n + p + h for n, p, h in zip(spatial, padding, hi)]), cd)
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


def check_adaptive(name, self, k, output_size, ints=()):
    if len(output_size) != k:
        if name.startswith("adaptive_max"):
            raise RuntimeError(f"{name}(): internal error: output_size.size() must be {k}")
        raise RuntimeError(f"{name}: output_size must be {k}")
    nd_ = len(self._size)
    if nd_ not in (k + 1, k + 2):
        sep = ": " if name.startswith("adaptive_max") else ""
        raise RuntimeError(f"{name}(): Expected {k + 1}D or {k + 2}D tensor, but got{sep}"
                           f"{'' if sep else ' '}[{', '.join(map(str, self._size))}]")
    # adaptive_avg_pool2d only needs non-empty spatial dims; the others every non-batch dim
    first = nd_ - k if name == "adaptive_avg_pool2d" else 1
    for i in range(first, nd_):
        if self._size[i] == 0:
            sizes = ", ".join(map(str, self._size))
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes [{sizes}] with dimension {i} "
                               f"being empty")
    if any(o < 0 for o in output_size):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{', '.join(map(str, output_size))}}}")
    if name != "adaptive_avg_pool2d" or 0 not in self._size:  # 2d avg: only in its loop
        _float_or_long(name, self._dtype, ints)
    return (*self._size[:-k], *output_size)


def _avg_matrix(n, m, dtype):
    """(m, n) matrix averaging each adaptive window of an axis."""
    start, end = _adaptive_bounds(n, m)
    j = np.arange(n)
    inside = (j >= start[:, None]) & (j < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


def _apply_axes(a, mats, k, transpose=False):
    for i, m in enumerate(mats):
        ax = a.ndim - k + i
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
    return wrap(np.ascontiguousarray(res).astype(x.dtype, copy=False))


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
    return wrap(np.ascontiguousarray(res).astype(g.dtype, copy=False))


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
    idx = np.ix_(*[t.ravel() for t in tables])
    win = a[(slice(None), *idx)].reshape(b, *[d for t in tables for d in t.shape])
    win = win.transpose(0, *range(1, 2 * k, 2), *range(2, 2 * k + 1, 2)).reshape(b, *output_size,
                                                                                -1)
    arg = np.argmax(win, axis=-1)
    vals = np.take_along_axis(win, arg[..., None], -1)[..., 0]
    koffs = np.unravel_index(arg, [t.shape[1] for t in tables])
    flat = np.zeros(arg.shape, np.int64)
    for i, t in enumerate(tables):
        o = np.arange(output_size[i]).reshape([-1 if j == i else 1 for j in range(k)])
        flat = flat * spatial[i] + t[o, koffs[i]]
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

def check_max_unpool(name, self, indices, output_size, k):
    if indices._dtype is not D.int64:
        raise RuntimeError("elements in indices should be type int64 but got: "
                           f"{indices._dtype._short}")
    if len(output_size) != k:
        raise RuntimeError(f"There should be exactly {k} elements (height, width) in "
                           f"output_size, but got {len(output_size)} elements."
                           if k == 2 else f"There should be exactly three elements (depth, "
                           f"height, width) in output_size, but got: {len(output_size)}")
    if len(self._size) not in (k + 1, k + 2):
        raise RuntimeError(f"Input to {name} should be a {k + 1}d or {k + 2}d Tensor, but got a "
                           f"tensor with {len(self._size)} dimensions.")
    if tuple(self._size) != tuple(indices._size):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(self._size)}) but got indices tensor with shape: "
                           f"{list(indices._size)}")
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}\" not implemented for '{self._dtype._short}'")
    return (*self._size[:-k], *output_size)


def _max_unpool(name, k, self, indices, output_size):
    shape = check_max_unpool(name, self, indices, output_size, k)
    x, idx = nd(self), nd(indices)
    b = math.prod(shape[:-k])
    n = math.prod(output_size)
    res = np.zeros((b, n), x.dtype)
    if x.size:
        flat = idx.reshape(b, -1)
        if flat.size and (flat.min() < 0 or flat.max() >= n):
            bad = flat[(flat < 0) | (flat >= n)][0]
            raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                               f"{_x(output_size)}")
        np.put_along_axis(res, flat, x.reshape(b, -1), axis=1)
    return wrap(res.reshape(shape))


def max_unpool2d(self, indices, output_size):
    return _max_unpool("max_unpool2d", 2, self, indices, output_size)


def max_unpool3d(self, indices, output_size, stride, padding):
    return _max_unpool("max_unpool3d", 3, self, indices, output_size)
