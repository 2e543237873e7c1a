"""CPU convolutions: ``aten::convolution`` (regular and transposed, 1-3 spatial dims, stride,
padding, dilation, groups) and its fused backward ``aten::convolution_backward``, plus
``im2col``/``col2im`` (``F.unfold``/``F.fold``).

Everything is built from column matrices and GEMMs (``gemm.matmul``):

* :func:`_windows` pads the input once into an ``(N, *spatial, C)`` buffer and takes every
  kernel window with one ``as_strided`` view; :func:`_cols` copies a chunk of samples of it
  into the column matrix ``(G, n, out_positions, K*Cg)`` (C innermost, so it is built from
  contiguous runs of channels);
* a forward convolution is ONE batched GEMM per group and chunk, ``weight @ cols^T``, its
  transposed columns (:func:`_cols_t`: kernel offset and channel by output position) copied
  from a channels-first padding in runs of output positions, the product landing directly in
  NCHW order;
* the weight gradient is the GEMM ``grad_out @ cols``; the input gradient is, for stride 1, the
  forward convolution of the gradient with the flipped kernel, otherwise the GEMM
  ``grad_out^T @ weight`` followed by a col2im (one strided add per kernel offset).

The chunks of samples (at least one per thread, each padding and copying its own samples) run
on ``ember.get_num_threads()`` threads through :func:`ember._core.parallel.parallel_for`, each
GEMM on one BLAS thread: the column copies then run in parallel too, where a BLAS pool would
only share the products.

Stride-1 convolutions of one group (most of a CNN, and every stride-1 input gradient) skip the
column matrix where ember's GEMM kernel is there (``gemm.py``, AVX-512): each row of the
columns is a stretch of the flattened padded input, which the kernel reads through row offsets
(the "grid" functions below), one multithreaded GEMM for the whole batch. The padding and the
copy of the outputs out of the grid are OpenMP loops too (``grid_copy.py``).

Three shapes skip both: 1 x 1 kernels without padding are one product per sample (any stride:
the strided positions are taken first); depthwise convolutions (one group per input channel:
MobileNet's, EfficientNet's, ConvNeXt's) are C loops of their own (``depthwise.py``); and
one-group convolutions with few output positions per sample (a ResNet's last stages) multiply
the weight once by the columns of many samples.

A transposed convolution is the input gradient of the regular convolution whose weight it
shares, and its backward uses the forward/weight-gradient primitives, as in ATen.
"""
import functools
import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..._core import strides as _st
from ..._core.allocator import cpu_cache as _cpu_cache
from ..._core.parallel import num_threads, parallel_for
from ._util import array_module, contiguous, nd, strided_view, wrap
from . import depthwise, gemm, grid_copy
from .gemm import matmul
from ..rules.conv import check_col2im, check_convolution, check_im2col


# ---------------------------------------------------------------------------------------------
# Argument checks (shared with the Meta kernels)


# ---------------------------------------------------------------------------------------------
# NumPy primitives. Shapes: x (N, C, *S); w (O, C/G, *K) for a regular convolution.

def _compute_dtype(a):
    """float16/bfloat16 are computed in float32 (NumPy has no fast half GEMM)."""
    if a.dtype.char in "fd":
        return a.dtype
    return np.float32 if a.dtype == np.float16 or a.dtype.name == "bfloat16" else a.dtype


def _padded_channels_last(x, padding):
    """(N, *S+2p, C) zero-padded copy of x (N, C, *S), in x's array module (the CUDA
    convolutions call this on device arrays)."""
    n, c, *s = x.shape
    mod = array_module(x)
    xp = mod.zeros((n, *[a + 2 * p for a, p in zip(s, padding)], c), x.dtype)
    xp[(slice(None), *[slice(p, p + a) for a, p in zip(s, padding)])] = mod.moveaxis(x, 1, -1)
    return xp


# Column chunks of about this many bytes: the GEMM then reads columns that the copy just wrote
# while they are still in cache (measured ~1.5x faster than one whole-batch column matrix).
_CHUNK_BYTES = 4 << 20


def _windows(x, ksize, stride, padding, dilation, groups, out):
    """Every kernel window of x (N, C, *S) as one view (N, *O, *K, G, Cg) of a padded
    channels-last copy: no data is copied beyond the padding."""
    xp = _padded_channels_last(x, padding)
    n, c = x.shape[:2]
    k = len(ksize)
    st = xp.strides
    return strided_view(xp, (n, *out, *ksize, groups, c // groups),
                        (st[0], *[st[1 + i] * stride[i] for i in range(k)],
                         *[st[1 + i] * dilation[i] for i in range(k)], st[-1] * (c // groups),
                         st[-1]))


def _chunks(n, per_sample_bytes):
    """Sample ranges of about _CHUNK_BYTES of columns, at least one per thread."""
    step = max(1, min(_CHUNK_BYTES // max(1, per_sample_bytes), -(-n // num_threads())))
    return [(i, min(n, i + step)) for i in range(0, n, step)]


def _cols(view, n0, n1):
    """Columns (G, n1-n0, prod(O), prod(K)*Cg) of samples n0:n1 (the reshape is the copy)."""
    k = (view.ndim - 3) // 2
    v = np.moveaxis(view[n0:n1], 1 + 2 * k, 0)  # (G, n, *O, *K, Cg)
    g, n = v.shape[:2]
    return v.reshape(g, n, math.prod(v.shape[2:2 + k]), -1)


def _wmat(w, groups):
    """Weight (O, Cg, *K) as (G, Og, prod(K) * Cg), matching the column layout (K outer)."""
    o = w.shape[0]
    return array_module(w).moveaxis(w, 1, -1).reshape(groups, o // groups, -1)


def _conv_out(shape, ksize, stride, padding, dilation):
    return [(a + 2 * p - d * (kk - 1) - 1) // st + 1 for a, p, d, kk, st in
            zip(shape, padding, dilation, ksize, stride)]


def _cols_t(x, ksize, stride, padding, dilation, groups, out):
    """The columns transposed, (G, N, prod(K)*Cg, prod(O)) (rows in ``_wmat``'s order: kernel
    offset outer, channel inner): each row is one channel's plane shifted by one kernel
    offset, so the copy moves whole runs of output columns, and the GEMM's B operand is
    row-major (its packing is a plain copy). The copy is C's (``grid_copy.copy``) into a buffer
    of the caching allocator: NumPy's into fresh memory took page faults, which two threads'
    chunks then waited for in turn (the 7 x 7 stem: 1.0 ms on one thread, 1.07 on two)."""
    xp = grid_copy.padded(x, padding)
    n, c = x.shape[:2]
    k = len(ksize)
    st = xp.strides
    view = as_strided(xp, (n, *ksize, groups, c // groups, *out),
                      (st[0], *[st[2 + i] * dilation[i] for i in range(k)],
                       st[1] * (c // groups), st[1], *[st[2 + i] * stride[i] for i in range(k)]))
    v = np.moveaxis(view, 1 + k, 0)  # (G, N, *K, Cg, *O)
    cols = _cpu_cache.empty((groups, n, math.prod(ksize) * (c // groups), math.prod(out)),
                            x.dtype)
    grid_copy.copy(cols.reshape(v.shape), v)
    return cols


# ---------------------------------------------------------------------------------------------
# Stride 1 without columns: a kernel offset is a shift of the flattened padded input. On the
# grid of the padded input, output position j (its index there) of kernel offset k and channel
# c reads input element c * P + shift(k) + j: every row of the column matrix is a stretch of
# the input itself, which the GEMM reads through row offsets (gemm.rows_product) instead of a
# copy. The grid has (kernel extent - 1) positions more per row than the output; the forward
# computes them and drops them, the weight gradient gives them a zero gradient (for finite
# inputs: see _conv_grad_weight).

def _grid(shape, ksize, padding, dilation):
    """For x of ``shape`` (N, C, *S): (the padded spatial shape's element strides, the output
    shape, the number of grid positions from the first output to the last, the (K*C,) row
    offsets in ``_wmat``'s order: kernel offset outer, channel inner)."""
    c, s = shape[1], shape[2:]
    padded = [a + 2 * p for a, p in zip(s, padding)]
    strides = [math.prod(padded[i + 1:]) for i in range(len(padded))]
    out = [a - d * (k - 1) for a, d, k in zip(padded, dilation, ksize)]
    ncols = sum((o - 1) * st for o, st in zip(out, strides)) + 1
    shifts = [sum(k * d * st for k, d, st in zip(offs, dilation, strides))
              for offs in itertools.product(*[range(k) for k in ksize])]
    rows = (np.asarray(shifts, np.int64)[:, None]
            + np.arange(c, dtype=np.int64)[None, :] * math.prod(padded)).reshape(-1)
    return strides, out, ncols, rows


def _on_grid(buf, out, strides):
    """The output positions (..., *out) of ``buf`` (..., grid positions)."""
    return as_strided(buf, buf.shape[:-1] + tuple(out),
                      buf.strides[:-1] + tuple(st * buf.itemsize for st in strides))


def _gridded(x, w, stride, groups):
    """Whether the column-free path takes this convolution: stride 1, one group, float32 or
    float64 operands of one dtype, and the GEMM kernel there."""
    return (all(st == 1 for st in stride) and groups == 1 and x.dtype == w.dtype
            and gemm.usable(x.dtype))


def _conv_forward_grid(x, w, padding, dilation):
    n, o = x.shape[0], w.shape[0]
    strides, out, ncols, rows = _grid(x.shape, w.shape[2:], padding, dilation)
    y = _cpu_cache.empty((n, o, ncols), x.dtype)
    gemm.rows_product(_wmat(w, 1), grid_copy.padded(x, padding).reshape(n, -1), y, b_rows=rows)
    res = _cpu_cache.empty((n, o, *out), x.dtype)
    grid_copy.copy(res, _on_grid(y, out, strides))
    return res


def _conv_grad_weight_grid(x, gy, w_shape, padding, dilation):
    n, o = gy.shape[:2]
    _, _, ncols, rows = _grid(x.shape, w_shape[2:], padding, dilation)
    # the gradient on x's padded grid, zero past each output row (and plane): the grid's
    # positions that are not outputs
    extra = [d * (k - 1) for d, k in zip(dilation, w_shape[2:])]
    gy_grid = grid_copy.padded(gy, [0] * len(extra), extra).reshape(n, o, -1)[:, :, :ncols]
    gw = np.empty((1, len(rows), o), gy.dtype)  # transposed: the batch's sum of (K*C, O)
    xp = grid_copy.padded(x, padding).reshape(n, -1)
    gemm.rows_product(xp, gy_grid.transpose(0, 2, 1), gw, a_rows=rows)
    # gw's row k * C + c is weight[:, c, k]: transposed in the order (c, k)
    c, k = w_shape[1], math.prod(w_shape[2:])
    order = (np.arange(k)[None, :] * c + np.arange(c)[:, None]).reshape(-1)
    return grid_copy.transpose_rows(gw[0], order).reshape(w_shape)


# ---------------------------------------------------------------------------------------------
# Small outputs (a ResNet's last stages: 8 x 8 and 4 x 4 positions): the grid and per-sample
# column paths multiply the whole weight by each sample's few columns, reading the weight once
# per sample through a narrow GEMM (512 x 4608 by 22 columns: 5.3 ms where PyTorch takes 2.2).
# Here the columns of many samples make one operand, (C*K, samples * positions), its rows in the
# weight's own (channel, kernel offset) order: the weight is read once, the weight gradient comes
# out in its layout, and only real windows are read (no grid positions: NaN and inf are safe).

SMALL_POSITIONS = 256      # output positions per sample up to which this path is taken
_BATCH_COLS_BYTES = 32 << 20  # columns of at most this size per GEMM (samples are chunked)


def _small(x_shape, w_shape, stride, padding, dilation, groups):
    return groups == 1 and math.prod(
        _conv_out(x_shape[2:], w_shape[2:], stride, padding, dilation)) <= SMALL_POSITIONS


def _sample_ranges(n, per_sample_bytes):
    step = max(1, _BATCH_COLS_BYTES // max(1, per_sample_bytes))
    return [(i, min(n, i + step)) for i in range(0, n, step)]


def _batch_cols(xp, ksize, stride, dilation, out):
    """Columns (C*K, n*M) of the padded samples xp (n, C, *S + 2p), copied on the OpenMP threads
    into a buffer of the caching allocator (fresh pages cost a page fault per 4 KiB)."""
    n, c = xp.shape[:2]
    k, st = len(ksize), xp.strides
    view = as_strided(xp, (c, *ksize, n, *out),
                      (st[1], *[st[2 + i] * dilation[i] for i in range(k)], st[0],
                       *[st[2 + i] * stride[i] for i in range(k)]))
    cols = _cpu_cache.empty((c * math.prod(ksize), n * math.prod(out)), xp.dtype)
    grid_copy.copy(cols.reshape(view.shape), view)
    return cols


def _conv_forward_small(x, w, stride, padding, dilation):
    n, o = x.shape[0], w.shape[0]
    out = _conv_out(x.shape[2:], w.shape[2:], stride, padding, dilation)
    xp = grid_copy.padded(x, padding)
    wm = w.reshape(o, -1)
    y = np.empty((n, o, *out), x.dtype)
    for n0, n1 in _sample_ranges(n, wm.shape[1] * math.prod(out) * x.itemsize):
        prod = matmul(wm, _batch_cols(xp[n0:n1], w.shape[2:], stride, dilation, out))
        y[n0:n1] = prod.reshape(o, n1 - n0, *out).swapaxes(0, 1)
    return y


def _conv_grad_weight_small(x, gy, w_shape, stride, padding, dilation):
    n, o, *out = gy.shape
    xp = grid_copy.padded(x, padding)
    gw = None
    for n0, n1 in _sample_ranges(n, math.prod(w_shape[1:]) * math.prod(out) * x.itemsize):
        g2 = np.ascontiguousarray(gy[n0:n1].swapaxes(0, 1)).reshape(o, -1)
        part = matmul(g2, _batch_cols(xp[n0:n1], w_shape[2:], stride, dilation, out).T)
        gw = part if gw is None else gw + part
    return gw.reshape(w_shape)


def _conv_grad_input_small(gy, w, x_shape, stride, padding, dilation):
    """dcols = W^T @ the gradient's columns, then one strided add per kernel offset (col2im)."""
    n, o, *out = gy.shape
    c, s, ksize = x_shape[1], x_shape[2:], w.shape[2:]
    wt = w.reshape(o, -1).T
    dxp = np.zeros((n, c, *[a + 2 * p for a, p in zip(s, padding)]), np.result_type(gy, w))
    for n0, n1 in _sample_ranges(n, wt.shape[0] * math.prod(out) * gy.itemsize):
        g2 = np.ascontiguousarray(gy[n0:n1].swapaxes(0, 1)).reshape(o, -1)
        dcols = matmul(wt, g2).reshape(c, *ksize, n1 - n0, *out)
        for offs in itertools.product(*[range(kk) for kk in ksize]):
            dst = (slice(n0, n1), slice(None),
                   *[slice(f * d, f * d + st * (m - 1) + 1, st)
                     for f, d, st, m in zip(offs, dilation, stride, out)])
            dxp[dst] += dcols[(slice(None),) + offs].swapaxes(0, 1)
    return np.ascontiguousarray(
        dxp[(slice(None), slice(None), *[slice(p, p + a) for a, p in zip(s, padding)])])


# ---------------------------------------------------------------------------------------------
# Pointwise (1 x 1) kernels without padding -- half the convolutions of a MobileNet or a ResNet's
# bottlenecks: one product per sample, W (O, C) @ x (C, positions), where the grid and column
# paths' bookkeeping cost more than the product on small activations (70 us against PyTorch's
# 7 for a 2 x 72 x 1 x 1 input). A stride takes every stride-th position first.

def _pointwise(w_shape, padding, groups):
    return groups == 1 and all(k == 1 for k in w_shape[2:]) and not any(padding)


def _strided(x, stride):
    """x (N, C, *S) at every stride-th position, contiguous."""
    if all(s == 1 for s in stride):
        return x
    return np.ascontiguousarray(x[(slice(None), slice(None)) +
                                  tuple(slice(None, None, s) for s in stride)])


def _conv_forward_pointwise(x, w, stride):
    xs = _strided(x, stride)
    n, c, *out = xs.shape
    y = matmul(w.reshape(w.shape[0], c), np.ascontiguousarray(xs).reshape(n, c, -1))
    return y.reshape(n, w.shape[0], *out)


def _conv_grad_input_pointwise(gy, w, x_shape, stride):
    n, o, *out = gy.shape
    gi = matmul(w.reshape(o, -1).T, gy.reshape(n, o, -1))
    gi = gi.reshape(n, -1, *out)
    if all(s == 1 for s in stride):
        return gi
    res = np.zeros(x_shape, gi.dtype)
    res[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)] = gi
    return res


def _conv_grad_weight_pointwise(x, gy, w_shape, stride):
    """The batch's sum of gy (O, positions) @ x (positions, C), made in the weight's layout."""
    xs = _strided(x, stride)
    n, c = xs.shape[:2]
    o = gy.shape[1]
    a, b = gy.reshape(n, o, -1), xs.reshape(n, c, -1).transpose(0, 2, 1)
    if not (gemm.usable(x.dtype) and gy.dtype == x.dtype):
        return matmul(a, b).sum(0).reshape(w_shape)
    gw = np.empty((1, o, c), x.dtype)
    gemm.rows_product(a, b, gw)
    return gw.reshape(w_shape)


def _depthwise(x_shape, groups):
    """One group per input channel (more than one): ``depthwise.py``'s C loops, where built."""
    return groups > 1 and groups == x_shape[1]


def _conv_forward(x, w, stride, padding, dilation, groups):
    """y (N, O, *O_sp) = one batched GEMM per sample chunk: (G, Og, K) @ cols^T (G, K, M)."""
    if _pointwise(w.shape, padding, groups):
        return _conv_forward_pointwise(x, w, stride)
    if _depthwise(x.shape, groups):
        y = depthwise.forward(x, w, stride, padding, dilation)
        if y is not None:
            return y
    if _small(x.shape, w.shape, stride, padding, dilation, groups):
        return _conv_forward_small(x, w, stride, padding, dilation)
    if _gridded(x, w, stride, groups):
        return _conv_forward_grid(x, w, padding, dilation)
    n, o = x.shape[0], w.shape[0]
    ksize = w.shape[2:]
    out = _conv_out(x.shape[2:], ksize, stride, padding, dilation)
    m = math.prod(out)
    wm = _wmat(w, groups)[:, None]  # (G, 1, Og, K)
    y = np.empty((n, groups, o // groups, m), np.result_type(x, w))
    chunks = _chunks(n, m * wm.shape[-1] * groups * x.itemsize)

    def chunk(i):  # pads, copies and multiplies its own samples: the chunks run in parallel
        n0, n1 = chunks[i]
        cols_t = _cols_t(x[n0:n1], ksize, stride, padding, dilation, groups, out)
        matmul(wm, cols_t, out=y[n0:n1].swapaxes(0, 1))
    parallel_for(len(chunks), chunk)
    return y.reshape(n, o, *out)


def _flipped_transposed(w, groups):
    """The weight of the convolution that computes a stride-1 convolution's input gradient:
    in/out channels swapped per group, kernel flipped along every spatial dim."""
    o, cg, *k = w.shape
    wt = w.reshape(groups, o // groups, cg, *k).swapaxes(1, 2).reshape(groups * cg, o // groups,
                                                                        *k)
    return np.ascontiguousarray(wt[(slice(None), slice(None)) + (slice(None, None, -1),) * len(k)])


def _conv_grad_input(gy, w, x_shape, stride, padding, dilation, groups):
    if _pointwise(w.shape, padding, groups):
        return _conv_grad_input_pointwise(gy, w, x_shape, stride)
    if _depthwise(x_shape, groups):
        gi = depthwise.grad_input(gy, w, x_shape, stride, padding, dilation)
        if gi is not None:
            return gi
    if _small(x_shape, w.shape, stride, padding, dilation, groups):
        return _conv_grad_input_small(gy, w, x_shape, stride, padding, dilation)
    n, o, *out = gy.shape
    ksize = w.shape[2:]
    full = [d * (kk - 1) - p for d, kk, p in zip(dilation, ksize, padding)]
    if all(s == 1 for s in stride) and all(f >= 0 for f in full):
        # stride 1: a "full" convolution of the gradient with the flipped kernel; trailing
        # input positions no window reached get their zero gradient from the crop/extension
        gi = _conv_forward(gy, _flipped_transposed(w, groups), stride, full, dilation, groups)
        if list(gi.shape[2:]) == list(x_shape[2:]):
            return gi
        res = np.zeros(x_shape, gi.dtype)
        res[(slice(None), slice(None), *[slice(0, a) for a in gi.shape[2:]])] = gi
        return res
    # general case: dcols = grad^T @ weight, then col2im, chunk by chunk
    c, s = x_shape[1], x_shape[2:]
    k = len(ksize)
    cg = c // groups
    wm = _wmat(w, groups)[:, None]  # (G, 1, Og, K)
    g = gy.reshape(n, groups, o // groups, -1)
    dxp = np.zeros((n, *[a + 2 * p for a, p in zip(s, padding)], groups, cg),
                   np.result_type(gy, w))
    chunks = _chunks(n, math.prod(out) * wm.shape[-1] * groups * gy.itemsize)

    def chunk(i):  # each chunk writes its own samples of dxp
        n0, n1 = chunks[i]
        dcols = matmul(g[n0:n1].transpose(1, 0, 3, 2), wm)  # (G, n, M, K*Cg)
        cols = np.moveaxis(dcols.reshape(groups, n1 - n0, *out, *ksize, cg), 0, 1 + 2 * k)
        for offs in itertools.product(*[range(kk) for kk in ksize]):
            dst = (slice(n0, n1), *[slice(f * d, f * d + st * (m - 1) + 1, st) for f, d, st, m in
                                    zip(offs, dilation, stride, out)])
            dxp[dst] += cols[(slice(None),) * (1 + k) + offs]
    parallel_for(len(chunks), chunk)
    dxp = dxp[(slice(None), *[slice(p, p + a) for a, p in zip(s, padding)])]
    return np.ascontiguousarray(np.moveaxis(dxp.reshape(n, *s, c), -1, 1))


def _conv_grad_weight(x, gy, w_shape, stride, padding, dilation, groups):
    """gw (O, Cg, *K) = sum over column chunks of grad (G, Og, M) @ cols (G, M, K*Cg)."""
    if _pointwise(w_shape, padding, groups):
        return _conv_grad_weight_pointwise(x, gy, w_shape, stride)
    if _depthwise(x.shape, groups):
        gw = depthwise.grad_weight(x, gy, w_shape, stride, padding, dilation)
        if gw is not None:
            return gw
    if _small(x.shape, w_shape, stride, padding, dilation, groups):
        return _conv_grad_weight_small(x, gy, w_shape, stride, padding, dilation)
    # on the grid, the positions between output rows multiply input values by a zero gradient:
    # a NaN or infinity among them would reach the sums (0 * inf), so such inputs take columns
    if _gridded(x, gy, stride, groups) and np.isfinite(x).all():
        return _conv_grad_weight_grid(x, gy, w_shape, padding, dilation)
    n, o, *out = gy.shape
    g = gy.reshape(n, groups, o // groups, -1)
    kc = math.prod(w_shape[2:]) * w_shape[1]
    chunks = _chunks(n, math.prod(out) * kc * groups * x.itemsize)
    partial = [None] * len(chunks)  # per chunk, summed after: threads never add into one array

    def chunk(i):
        n0, n1 = chunks[i]
        view = _windows(x[n0:n1], w_shape[2:], stride, padding, dilation, groups, out)
        cols = _cols(view, 0, n1 - n0).reshape(groups, -1, kc)  # (G, n*M, K*Cg)
        gc = np.ascontiguousarray(g[n0:n1].transpose(1, 2, 0, 3)).reshape(groups, o // groups,
                                                                          -1)
        partial[i] = matmul(gc, cols)
    parallel_for(len(chunks), chunk)
    gw = functools.reduce(np.add, partial)
    gw = gw.reshape(o, *w_shape[2:], w_shape[1])
    return np.ascontiguousarray(np.moveaxis(gw, -1, 1))


# ---------------------------------------------------------------------------------------------
# Kernels

def _as_compute(t):
    a = nd(t)
    cd = _compute_dtype(a)
    return a.astype(cd, copy=False) if a.dtype != cd else a


def _channels_last(input, weight):
    """PyTorch's CPU convolutions (oneDNN's) return channels-last results -- the output and both
    gradients -- when the input or the weight suggests channels_last."""
    return (_st.suggests_channels_last(input._size, input._stride) or
            _st.suggests_channels_last(weight._size, weight._stride))


def _laid_out(a, channels_last):
    """``a`` (N, C, *S), laid out channels-last when asked (a copy: the kernels compute
    channels-first)."""
    if not channels_last or a.ndim not in (4, 5):
        return a
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    shape, stride, padding, dilation, output_padding = check_convolution(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    dt = input._dtype._np
    if 0 in shape:
        return wrap(np.zeros(shape, dt))
    x, w = _as_compute(input), _as_compute(weight)
    with np.errstate(all="ignore"):  # (NaN and inf propagate without NumPy's warnings)
        if transposed:
            y = _conv_grad_input(x, w, shape, stride, padding, dilation, groups)
        else:
            y = _conv_forward(x, w, stride, padding, dilation, groups)
        if bias is not None:
            y += _as_compute(bias).reshape(-1, *[1] * (len(shape) - 2))
    return wrap(_laid_out(y.astype(dt, copy=False), _channels_last(input, weight)))


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    _, stride, padding, dilation, output_padding = check_convolution(
        input, weight, None, stride, padding, dilation, transposed, output_padding, groups)
    dt = input._dtype._np
    gy, x, w = _as_compute(grad_output), _as_compute(input), _as_compute(weight)
    if input._dtype.is_complex:  # (gradients are taken against the conjugates, as PyTorch's)
        x, w = np.conj(x), np.conj(w)
    empty = 0 in gy.shape or 0 in x.shape
    cl = _channels_last(input, weight)
    with np.errstate(all="ignore"):  # (as in convolution)
        gi = gw = gb = None
        if output_mask[0]:
            if empty:
                gi = np.zeros(x.shape, dt)
            elif transposed:
                gi = _conv_forward(gy, w, stride, padding, dilation, groups)
            else:
                gi = _conv_grad_input(gy, w, x.shape, stride, padding, dilation, groups)
            gi = wrap(_laid_out(gi.astype(dt, copy=False), cl))
        if output_mask[1]:
            if empty:
                gw = np.zeros(w.shape, dt)
            elif transposed:
                gw = _conv_grad_weight(gy, x, w.shape, stride, padding, dilation, groups)
            else:
                gw = _conv_grad_weight(x, gy, w.shape, stride, padding, dilation, groups)
            gw = wrap(_laid_out(gw.astype(dt, copy=False), cl))
        if output_mask[2]:
            axes = (0,) + tuple(range(2, gy.ndim))
            gb = wrap(np.asarray(gy.sum(axes), dtype=dt).reshape(bias_sizes or (gy.shape[1],)))
    return gi, gw, gb


# ---------------------------------------------------------------------------------------------
# im2col / col2im (F.unfold / F.fold): (N, C*kh*kw, L) columns in PyTorch's channel-major order


def im2col(self, kernel_size, dilation, padding, stride):
    shape, out = check_im2col(self, kernel_size, dilation, padding, stride)
    x = nd(self)
    x4 = x if x.ndim == 4 else x[None]
    if x4.shape[0] == 0:
        return wrap(array_module(x).zeros(shape, x.dtype))
    view = _windows(x4, kernel_size, stride, padding, dilation, 1, out)  # (N,oh,ow,kh,kw,1,C)
    return wrap(contiguous(view[:, :, :, :, :, 0].transpose(0, 5, 3, 4, 1, 2)).reshape(shape))


def col2im(self, output_size, kernel_size, dilation, padding, stride):
    shape, out = check_col2im(self, output_size, kernel_size, dilation, padding, stride)
    a = nd(self)
    a3 = a if a.ndim == 3 else a[None]
    n, c = a3.shape[0], shape[-3]
    cols = a3.reshape(n, c, *kernel_size, *out)
    res = array_module(a).zeros((n, c, *[o + 2 * p for o, p in zip(output_size, padding)]),
                                a.dtype)
    for i, j in itertools.product(range(kernel_size[0]), range(kernel_size[1])):
        res[:, :, i * dilation[0]: i * dilation[0] + stride[0] * (out[0] - 1) + 1: stride[0],
            j * dilation[1]: j * dilation[1] + stride[1] * (out[1] - 1) + 1: stride[1]] += \
            cols[:, :, i, j]
    res = res[:, :, padding[0]: padding[0] + output_size[0],
              padding[1]: padding[1] + output_size[1]]
    return wrap(contiguous(res).reshape(shape))
