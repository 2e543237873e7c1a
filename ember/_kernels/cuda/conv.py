"""CUDA convolutions: ``aten::convolution`` and ``convolution_backward`` (regular, 1-3 spatial
dims, stride, padding, dilation, groups), each direction with several algorithms, chosen as
``ember.backends.cudnn`` tells PyTorch's cuDNN path to choose.

Algorithms (bodies written against the array module, as every CUDA kernel here; shapes: x
``(N, C, *S)``, w ``(O, C/G, *K)``; the data are padded channels-last copies):

* forward ``im2col_gemm``: every kernel window of the whole batch copied into one column matrix,
  then one batched GEMM per group (most memory, fewest launches);
* forward ``implicit_gemm``: one GEMM per kernel offset on a strided view of the padded input,
  accumulated (no column matrix);
* input gradient ``col2im_strided``: columns of the gradient (one GEMM), added back with one
  strided add per kernel offset — deterministic;
* input gradient ``col2im_atomic``: the same columns scattered with one atomic scatter-add — fewer
  launches, but the order of the float additions varies from run to run on a GPU (not
  deterministic), as cuDNN's ``*_ALGO_0`` is not;
* weight gradient ``im2col_gemm``: columns, then one GEMM per group.

With ``ember.backends.cudnn.benchmark`` the first call of each configuration (direction, shapes,
dtype, stride, padding, dilation, groups) times every eligible algorithm (at most
``benchmark_limit``; 0 means all; each run once untimed first) and caches the fastest; otherwise each direction uses its
first algorithm. ``cudnn.deterministic`` (or ``use_deterministic_algorithms(True)``) leaves
out the non-deterministic ones. ``chosen`` holds the cache. Transposed convolutions, and dtypes
other than floating ones, take the CUDA fallback.
"""
import itertools
import math
import time

import numpy as np

from ..._core import dtype as D
from ..._core.tensor_impl import empty_tensor
from ..cpu.conv import _conv_out, _padded_channels_last, _wmat
from ..rules.conv import check_convolution
from .arrays import NeedsHost, device_array, launch, to_tensor

_FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)
chosen = {}  # configuration -> algorithm name, filled by cudnn.benchmark's timing runs


def _offset_view(xpad, offs, dilation, stride, out):
    """The padded input (N, *O, C) seen by kernel offset ``offs``."""
    return xpad[(slice(None), *[slice(f * d, f * d + st * (m - 1) + 1, st) for f, d, st, m in
                               zip(offs, dilation, stride, out)])]


def _cols(xp, x, ksize, stride, padding, dilation, groups, out):
    """Columns (G, N*M, prod(K)*Cg) of every window of x."""
    xpad = _padded_channels_last(x, padding)
    n, c = x.shape[:2]
    cg = c // groups
    parts = [_offset_view(xpad, offs, dilation, stride, out)
             for offs in itertools.product(*[range(k) for k in ksize])]
    cols = xp.stack(parts, axis=-2)  # (N, *O, K, C)
    cols = cols.reshape(n, math.prod(out), len(parts), groups, cg)
    return xp.ascontiguousarray(cols.transpose(3, 0, 1, 2, 4)).reshape(groups, -1,
                                                                        len(parts) * cg)


def _to_nchw(xp, y, n, out):
    """(G, N*M, Og) -> (N, G*Og, *O)."""
    g, _, og = y.shape
    return xp.ascontiguousarray(y.reshape(g, n, math.prod(out), og).transpose(1, 0, 3, 2)
                                ).reshape(n, g * og, *out)


# -- forward -------------------------------------------------------------------------------------

def _fwd_im2col_gemm(xp, x, w, stride, padding, dilation, groups):
    out = _conv_out(x.shape[2:], w.shape[2:], stride, padding, dilation)
    cols = _cols(xp, x, w.shape[2:], stride, padding, dilation, groups, out)
    return _to_nchw(xp, xp.matmul(cols, xp.swapaxes(_wmat(w, groups), 1, 2)), x.shape[0],
                    out)


def _fwd_implicit_gemm(xp, x, w, stride, padding, dilation, groups):
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    ksize = w.shape[2:]
    out = _conv_out(x.shape[2:], ksize, stride, padding, dilation)
    xpad = _padded_channels_last(x, padding)
    y = xp.zeros((groups, n * math.prod(out), o // groups), x.dtype)
    for offs in itertools.product(*[range(k) for k in ksize]):
        v = _offset_view(xpad, offs, dilation, stride, out).reshape(n * math.prod(out), groups,
                                                                      cg)
        wk = w[(slice(None), slice(None), *offs)].reshape(groups, o // groups, cg)
        y += xp.matmul(xp.swapaxes(v, 0, 1), xp.swapaxes(wk, 1, 2))
    return _to_nchw(xp, y, n, out)


# -- input gradient ------------------------------------------------------------------------------

def _grad_cols(xp, gy, w, groups):
    """Columns of the gradient (N, *O, K, G, Cg): grad^T @ weight, per group."""
    n, o, *out = gy.shape
    g = xp.ascontiguousarray(gy.reshape(n, groups, o // groups, -1).transpose(1, 0, 3, 2))
    dcols = xp.matmul(g.reshape(groups, -1, o // groups), _wmat(w, groups))  # (G, N*M, K*Cg)
    k = math.prod(w.shape[2:])
    return xp.moveaxis(dcols.reshape(groups, n, *out, k, w.shape[1]), 0, -2)


def _bwd_col2im_strided(xp, gy, w, x_shape, stride, padding, dilation, groups):
    n, c, *s = x_shape
    ksize, out = w.shape[2:], gy.shape[2:]
    cols = _grad_cols(xp, gy, w, groups)
    dxp = xp.zeros((n, *[a + 2 * p for a, p in zip(s, padding)], groups, w.shape[1]), cols.dtype)
    for i, offs in enumerate(itertools.product(*[range(k) for k in ksize])):
        _offset_view(dxp, offs, dilation, stride, out)[...] += cols[..., i, :, :]
    return _crop(xp, dxp, n, c, s, padding)


def _bwd_col2im_atomic(xp, gy, w, x_shape, stride, padding, dilation, groups):
    n, c, *s = x_shape
    ksize, out = w.shape[2:], gy.shape[2:]
    cols = _grad_cols(xp, gy, w, groups)  # (N, *O, K, G, Cg)
    padded = [a + 2 * p for a, p in zip(s, padding)]
    # the flat (N, *S+2p) position each column entry adds into, as (N, *O, *K)
    k = len(s)
    idx = xp.arange(n).reshape((n,) + (1,) * (2 * k))
    for d in range(k):
        pos_shape, koff_shape = [1] * (2 * k), [1] * (2 * k)
        pos_shape[d], koff_shape[k + d] = out[d], ksize[d]
        idx = idx * padded[d] + (xp.arange(out[d]) * stride[d]).reshape(pos_shape) + \
            (xp.arange(ksize[d]) * dilation[d]).reshape(koff_shape)
    idx = idx.reshape(-1)
    dxp = xp.zeros((n * math.prod(padded), groups * w.shape[1]), cols.dtype)
    _scatter_add(xp, dxp, idx, cols.reshape(-1, groups * w.shape[1]))
    return _crop(xp, dxp.reshape(n, *padded, groups, w.shape[1]), n, c, s, padding)


def _scatter_add(xp, dst, idx, values):
    if xp is np:
        np.add.at(dst, idx, values)
    else:
        import cupyx
        cupyx.scatter_add(dst, idx, values)


def _crop(xp, dxp, n, c, s, padding):
    dx = dxp[(slice(None), *[slice(p, p + a) for a, p in zip(s, padding)])]
    return xp.ascontiguousarray(xp.moveaxis(dx.reshape(n, *s, c), -1, 1))


# -- weight gradient -----------------------------------------------------------------------------

def _wgrad_im2col_gemm(xp, x, gy, w_shape, stride, padding, dilation, groups):
    n, o, *out = gy.shape
    cols = _cols(xp, x, w_shape[2:], stride, padding, dilation, groups, out)
    g = xp.ascontiguousarray(gy.reshape(n, groups, o // groups, -1).transpose(1, 2, 0, 3))
    gw = xp.matmul(g.reshape(groups, o // groups, -1), cols)  # (G, Og, K*Cg)
    gw = gw.reshape(o, *w_shape[2:], w_shape[1])
    return xp.ascontiguousarray(xp.moveaxis(gw, -1, 1))


# direction -> [(name, function, deterministic)], the default first
ALGORITHMS = {
    "forward": [("im2col_gemm", _fwd_im2col_gemm, True),
                ("implicit_gemm", _fwd_implicit_gemm, True)],
    "backward_input": [("col2im_strided", _bwd_col2im_strided, True),
                       ("col2im_atomic", _bwd_col2im_atomic, False)],
    "backward_weight": [("im2col_gemm", _wgrad_im2col_gemm, True)],
}


def _eligible(direction):
    from ...backends._context import ctx
    algos = ALGORITHMS[direction]
    if ctx.cudnn_deterministic or ctx.deterministic:
        algos = [a for a in algos if a[2]]
    return algos


def _run(direction, key, xp, args):
    """The chosen algorithm's result for ``args`` (timing the candidates first under
    ``cudnn.benchmark``)."""
    from ...backends._context import ctx
    algos = _eligible(direction)
    if not ctx.cudnn_benchmark:
        return algos[0][1](xp, *args)
    name = chosen.get(key)
    fn = next((f for n, f, _ in algos if n == name), None)
    if fn is not None:
        return fn(xp, *args)
    limit = ctx.cudnn_benchmark_limit
    sync = (lambda: None) if xp is np else xp.cuda.get_current_stream().synchronize
    best = None
    for n, f, _ in (algos[:limit] if limit else algos):
        r = f(xp, *args)  # once untimed: CuPy compiles a kernel on its first use
        sync()
        t = time.perf_counter()
        r = f(xp, *args)
        sync()
        dt = time.perf_counter() - t
        if best is None or dt < best[0]:
            best = (dt, n, r)
    chosen[key] = best[1]
    return best[2]


def _compute(t, rt):
    """A tensor's array in the computation dtype (half precision computes in float32)."""
    a = device_array(t, rt)
    return a.astype(np.float32) if t._dtype in (D.float16, D.bfloat16) else a


def _check(input, weight, transposed):  # noqa: A002
    if transposed or input._dtype not in _FLOATS:
        raise NeedsHost("transposed or non-floating convolution")


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,  # noqa: A002
                groups):
    shape, stride, padding, dilation, _ = check_convolution(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    _check(input, weight, transposed)
    dt, dev = input._dtype, input._device
    if 0 in shape:
        return empty_tensor(shape, dt, dev).zero_()
    key = ("forward", input._size, weight._size, dt, tuple(stride), tuple(padding),
           tuple(dilation), groups)

    def body(xp, rt):
        x, w = _compute(input, rt), _compute(weight, rt)
        y = _run("forward", key, xp, (x, w, stride, padding, dilation, groups))
        if bias is not None:
            y += _compute(bias, rt).reshape(-1, *[1] * (len(shape) - 2))
        return to_tensor(y, dt, dev, rt)
    return launch(dev, body)


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,  # noqa: A002
                         transposed, output_padding, groups, output_mask):
    _, stride, padding, dilation, _ = check_convolution(
        input, weight, None, stride, padding, dilation, transposed, output_padding, groups)
    _check(input, weight, transposed)
    if 0 in grad_output._size or 0 in input._size:
        raise NeedsHost("empty convolution gradient")
    dt, dev = input._dtype, input._device
    cfg = (input._size, weight._size, dt, tuple(stride), tuple(padding), tuple(dilation), groups)

    def body(xp, rt):
        gy, x = _compute(grad_output, rt), _compute(input, rt)
        w = _compute(weight, rt)
        gi = gw = gb = None
        if output_mask[0]:
            gi = to_tensor(_run("backward_input", ("backward_input",) + cfg, xp,
                                (gy, w, x.shape, stride, padding, dilation, groups)), dt, dev, rt)
        if output_mask[1]:
            gw = to_tensor(_run("backward_weight", ("backward_weight",) + cfg, xp,
                                (x, gy, w.shape, stride, padding, dilation, groups)),
                           dt, dev, rt)
        if output_mask[2]:
            axes = (0,) + tuple(range(2, gy.ndim))
            gb = to_tensor(gy.sum(axes).reshape(bias_sizes or (gy.shape[1],)), dt, dev, rt)
        return gi, gw, gb
    return launch(dev, body)


def kernels():
    return {"convolution": convolution, "convolution_backward": convolution_backward}
