"""CPU kernels of ``torch.nn.functional``'s native ops: activations (and their ``*_backward``
ops), softmax/log_softmax, layer/batch/group norm, nll_loss, embedding, dropout, mse/bce losses.

PyTorch gives the heavy ops of a training step a dedicated fused backward op
(``_softmax_backward_data``, ``native_layer_norm_backward``, ``nll_loss_backward``,
``embedding_dense_backward``...): each is one NumPy kernel here too, so a backward pass costs a
few array passes instead of a graph of small ops. Half-precision inputs compute in float32 and
round once at the end (PyTorch's "opmath" type). The argument checks and shape/dtype rules are
the ``check_*``/``*_shapes`` functions below; the Meta kernels (``meta/nn.py``) call the same
ones, so both devices reject the same calls.
"""
import math

import numpy as np
from scipy import special as _sp

from ..._core import dtype as D
from .gemm import matmul as _matmul
from ..._core import overlap as _overlap
from ..._core import strides as _st
from ..._core.tensor_impl import empty_tensor
from ..registration import register
from . import add_rows as _add_rows
from . import batch_norm as _batch_norm
from . import generated as _generated
from ._util import (add_rows_at, array_module, check_all, check_index_range, contiguous, nd,
                    wrap)
from .pointwise_values import _fma
from .random import bernoulli_mask
from ..rules.float8 import REFUSED as _REFUSED, refuse as _refuse
from ..rules.nn import (ACTIVATION_RULES, NO_INPLACE, check_activation, has_generated_backward,
                        _check_lambd, batch_norm_shapes, bce_with_logits_dtype, check_bce,
                        check_dropout, check_embedding,
                        activation_backward_shape, check_floating, check_group_norm, check_prelu,
                        check_softmax, check_softmax_backward, dropout_backward_dtype, glu_shape,
                        layer_norm_shapes, norm_stats_dtype, loss_shapes,
                        nll_loss_shapes)

_HALF = (D.float16, D.bfloat16)


def _work(dt):
    """NumPy dtype a kernel computes in for tensors of dtype ``dt``."""
    return np.float32 if dt is D.float16 or dt is D.bfloat16 else dt._np


def _arr(t):
    a = nd(t)
    w = _work(t._dtype)
    return a if a.dtype == w else a.astype(w)


def _res(r, dt):
    """Result array ``r`` (fresh; a device array too) as a tensor of dtype ``dt``."""
    if not hasattr(r, "dtype"):
        r = np.asarray(r)
    if r.dtype != dt._np:
        r = r.astype(dt._np)
    return wrap(r)


def _quiet():
    return np.errstate(all="ignore")


# ---------------------------------------------------------------------------------------------
# Checks shared with the Meta kernels.


# ---------------------------------------------------------------------------------------------
# Activations. Each row: (forward(x, *params), input gradient(x, grad, *params), dtype check).
# x and grad arrive in the computation dtype; params are the schema's Scalars after ``self``.

_SQRT1_2 = 1 / math.sqrt(2.0)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_GELU_K = math.sqrt(2 / math.pi)
_GELU_C = 0.044715


_F32 = np.float32


def _erf(x):
    """erf for GELU. float32 uses the rational approximation of PyTorch's vectorized CPU kernel
    (Abramowitz & Stegun 7.1.26: 1 - t*poly(t)*exp(-x^2), t = 1/(1 + p|x|); |error| < 6e-7),
    five times faster than scipy's erf, which evaluates every float32 element in double."""
    if x.dtype != np.float32 or x.ndim == 0:  # (0-d: NumPy hands back scalars, no out=)
        return _sp.erf(x)
    t = np.abs(x)
    t *= _F32(0.3275911)
    t += _F32(1)
    np.reciprocal(t, out=t)
    r = t * _F32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736):
        r += _F32(c)
        r *= t
    r += _F32(0.254829592)
    e = np.square(x)
    np.negative(e, out=e)
    np.exp(e, out=e)
    e *= t
    e *= r
    np.subtract(_F32(1), e, out=e)
    return np.copysign(e, x, out=e)


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        inner = x.dtype.type(_GELU_K) * (x + x.dtype.type(_GELU_C) * x * x * x)
        return 0.5 * x * (1 + np.tanh(inner))
    return 0.5 * x * (1 + _erf(x * x.dtype.type(_SQRT1_2)))


def _gelu_grad(x, g, approximate="none"):
    if approximate == "tanh":
        x2 = x * x
        t = np.tanh(x.dtype.type(_GELU_K) * (x + x.dtype.type(_GELU_C) * x2 * x))
        dinner = x.dtype.type(_GELU_K) * (1 + x.dtype.type(3 * _GELU_C) * x2)
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dinner)
    cdf = 0.5 * (1 + _erf(x * x.dtype.type(_SQRT1_2)))
    pdf = np.exp(-0.5 * x * x) * x.dtype.type(_INV_SQRT_2PI)
    return g * (cdf + x * pdf)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# silu, hardsigmoid, hardswish and their gradients in ATen's order of operations (its
# Activation.cpp CPU kernels; generated.py's C rows compute the same expressions)
def _silu(x):
    return x / (1 + np.exp(-x))


def _silu_grad(x, g):
    s = _sigmoid(x)
    return g * s * (1 + x * (1 - s))


def _softplus(x, beta=1, threshold=20):
    bx = x * beta
    return np.where(bx > threshold, x, np.log1p(np.exp(bx)) / beta)


def _softplus_grad(x, g, beta=1, threshold=20):
    bx = x * beta
    z = np.exp(bx)
    return np.where(bx > threshold, g, g * z / (z + 1))


def _mish(x):
    return x * np.tanh(_softplus(x))


def _mish_grad(x, g):
    t = np.tanh(_softplus(x))
    return g * (t + x * _sigmoid(x) * (1 - t * t))


def _elu(x, alpha=1, scale=1, input_scale=1):
    return np.where(x > 0, x * scale, np.expm1(x * input_scale) * (alpha * scale))


def _celu(x, alpha=1.0):
    return _elu(x, alpha, 1, 1.0 / alpha)


def _celu_grad(x, g, alpha=1.0):
    return np.where(x > 0, g, g * np.exp(x / alpha))


def _leaky_relu(x, negative_slope=0.01):
    return np.where(x > 0, x, x * negative_slope)


def _leaky_relu_grad(x, g, negative_slope=0.01):
    return np.where(x > 0, g, g * negative_slope)


def _hardtanh(x, min_val=-1, max_val=1):
    return np.minimum(np.maximum(x, min_val), max_val)


def _hardtanh_grad(x, g, min_val=-1, max_val=1):
    return np.where((x <= min_val) | (x >= max_val), 0, g)


def _relu6_of_shifted(x):
    return np.minimum(np.maximum(x + 3, 0), 6)


def _hardsigmoid(x):
    return _relu6_of_shifted(x) / 6


def _hardsigmoid_grad(x, g):
    return np.where((x > -3) & (x < 3), g * x.dtype.type(1 / 6), 0)


def _hardswish(x):
    return x * _relu6_of_shifted(x) / 6


def _hardswish_grad(x, g):
    # PyTorch 2.13 takes the outer pieces at the kinks: 0 at x = -3 and g at x = 3
    # (a NaN takes the middle piece: NaN)
    return np.where(x <= -3, 0, np.where(x >= 3, g, g * (x / 3 + 0.5)))


def _softshrink(x, lambd=0.5):
    _check_lambd(lambd)
    return np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0))


def _shrink_grad(x, g, lambd=0.5):
    return np.where((x >= -lambd) & (x <= lambd), 0, g)


def _hardshrink(x, lambd=0.5):
    return np.where((x >= -lambd) & (x <= lambd), 0, x)


def _threshold(x, threshold, value):
    return np.where(x <= threshold, np.asarray(value).astype(x.dtype), x)


def _threshold_grad(x, g, threshold):
    return np.where(x <= threshold, 0, g)


# name -> (forward, gradient or None); the dtype check and PyTorch's kernel name for dtype
# errors are rules.nn.ACTIVATION_RULES[name]
_VALUES = {
    "gelu": (_gelu, _gelu_grad),
    "silu": (_silu, _silu_grad),
    "mish": (_mish, _mish_grad),
    "elu": (_elu, None),
    "celu": (_celu, _celu_grad),
    "leaky_relu": (_leaky_relu, _leaky_relu_grad),
    "hardtanh": (_hardtanh, _hardtanh_grad),
    "hardsigmoid": (_hardsigmoid, _hardsigmoid_grad),
    "hardswish": (_hardswish, _hardswish_grad),
    "softplus": (_softplus, _softplus_grad),
    "softshrink": (_softshrink, _shrink_grad),
    "hardshrink": (_hardshrink, _shrink_grad),
    "threshold": (_threshold, _threshold_grad),
}
ACTIVATIONS = {name: (*fg, *ACTIVATION_RULES[name]) for name, fg in _VALUES.items()}


def _activation(name, self, params):
    if self._dtype in _REFUSED:  # (rules/float8.py's IN_KERNEL: every activation and its twin)
        _refuse(name, (self, *params))
    check_activation(name, self, params)
    x = _arr(self)
    r = _generated.activation(name, x, params)
    if r is not None:
        return r
    with _quiet():
        return ACTIVATIONS[name][0](x, *params)


def _activation_kernels(name):
    def functional(self, *params):
        return _res(_activation(name, self, params), self._dtype)

    def inplace(self, *params):
        if name != "threshold":  # (ATen builds threshold's iterator without the overlap check)
            _overlap.assert_no_internal_overlap(self)
        np.copyto(nd(self), _activation(name, self, params), casting="unsafe")
        return self

    def backward(grad_output, self, *params):
        ACTIVATIONS[name][2](ACTIVATIONS[name][3], self)
        shape = activation_backward_shape(grad_output, self)
        x, g = _arr(self), _arr(grad_output)
        r = _generated.activation_backward(name, x, g, params)
        if r is not None:
            return _res(r, self._dtype)
        with _quiet():
            r = ACTIVATIONS[name][1](x, g, *params)
        if np.shape(r) != shape:  # a result that broadcasting alone makes (grad or self 0-d)
            r = np.ascontiguousarray(np.broadcast_to(r, shape))
        return _res(r, self._dtype)
    functional.__name__, inplace.__name__, backward.__name__ = name, name + "_", name + "_backward"
    return functional, inplace, backward


for _name in ACTIVATIONS:
    _f, _i, _b = _activation_kernels(_name)
    register(_name, "CPU", _f)
    if _name not in NO_INPLACE:
        register(_name + "_", "CPU", _i)
    if has_generated_backward(_name):
        register(_name + "_backward", "CPU", _b)


def elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result):
    check_floating("elu_backward_cpu", self_or_result)
    x, g = _arr(self_or_result), _arr(grad_output)
    with _quiet():
        if is_result:
            r = np.where(x <= 0, g * input_scale * (x + alpha * scale), g * scale)
        else:
            r = np.where(x <= 0, g * (input_scale * alpha * scale) * np.exp(x * input_scale),
                         g * scale)
    return _res(r, grad_output._dtype)


def leaky_relu_backward(grad_output, self, negative_slope, self_is_result):
    check_floating("leaky_relu_backward_cpu", self)
    if self_is_result and negative_slope < 0:
        raise RuntimeError("In-place leakyReLu backward calculation is triggered with a negative "
                           "slope which is not supported. This is caused by calling in-place "
                           "forward function with a negative slope, please call out-of-place "
                           "version instead. File an issue at https://github.com/pytorch/pytorch "
                           "if you do require supporting in-place leakRelu backward calculation "
                           "with negative slope")
    return _res(_leaky_relu_grad(_arr(self), _arr(grad_output), negative_slope), self._dtype)


def log_sigmoid_forward(self):
    check_floating("log_sigmoid_cpu", self)
    x = _arr(self)
    with _quiet():
        z = np.exp(-np.abs(x))
        out = np.minimum(x, 0) - np.log1p(z)
    return _res(out, self._dtype), _res(z, self._dtype)


def log_sigmoid_backward(grad_output, self, buffer):
    check_floating("log_sigmoid_backward_cpu", self)
    x, g, z = _arr(self), _arr(grad_output), _arr(buffer)
    neg = x < 0
    with _quiet():
        r = g * (neg - np.where(neg, 1, -1) * (z / (1 + z)))
    return _res(r, self._dtype)


def glu(self, dim=-1):
    check_floating("glu_cpu", self)
    d, _ = glu_shape(self, dim)
    a, b = np.split(_arr(self), 2, axis=d)
    with _quiet():
        return _res(a * _sigmoid(b), self._dtype)


def glu_backward(grad_output, self, dim):
    check_floating("glu_backward_cpu", self)
    d, _ = glu_shape(self, dim)
    a, b = np.split(_arr(self), 2, axis=d)
    g = _arr(grad_output)
    with _quiet():
        s = _sigmoid(b)
        ga = g * s
        r = np.concatenate([ga, ga * a * (1 - s)], axis=d)
    return _res(r, self._dtype)


def _prelu_kernel(self, weight):
    check_prelu(self, weight)
    x, w = _arr(self), _arr(weight)
    return _res(np.where(x > 0, x, w * x), self._dtype)


def _prelu_kernel_backward(grad_output, self, weight):
    check_prelu(self, weight)
    x, w, g = _arr(self), _arr(weight), _arr(grad_output)
    pos = x > 0
    gi = np.where(pos, g, w * g)
    gw = np.where(pos, 0, x * g)
    return _res(gi, self._dtype), _res(_sum_to(gw, weight._size), weight._dtype)


def _sum_to(a, shape):
    """Sum a broadcast result back to ``shape``."""
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and a.shape[i + lead] != 1)
    if axes:
        a = a.sum(axis=axes, keepdims=True)
    return a.reshape(shape)


# ---------------------------------------------------------------------------------------------
# softmax / log_softmax and their fused backward ops.


def _rows(x):
    """A 0-dim input as one row (NumPy reductions of 0-dim arrays return scalars)."""
    return x.reshape(1) if x.ndim == 0 else x


def _row_result(r, like, dt):
    """The softmax kernels' result ``r`` shaped as ``like``, contiguous whatever the inputs'
    strides (ATen's structured kernels set it so; NumPy would keep a transposed input's
    order), as a tensor of dtype ``dt``."""
    return _res(contiguous(r).reshape(like._size), dt)


def _softmax(self, dim, half_to_float):
    if self._dtype in _REFUSED:  # (IN_KERNEL, as the other hot kernels here)
        _refuse("_softmax", (self, dim, half_to_float))
    d = check_softmax(self, dim, half_to_float)
    x = _rows(_arr(self))
    if x.size == 0:
        return _res(x.copy(), self._dtype)
    e = _generated.softmax(x, d)
    if e is not None:
        return _row_result(e, self, self._dtype)
    with _quiet():
        e = x - x.max(axis=d, keepdims=True)
        np.exp(e, out=e)
        e /= e.sum(axis=d, keepdims=True)
    return _row_result(e, self, self._dtype)


def _log_softmax(self, dim, half_to_float):
    if self._dtype in _REFUSED:
        _refuse("_log_softmax", (self, dim, half_to_float))
    d = check_softmax(self, dim, half_to_float, "log_softmax")
    x = _rows(_arr(self))
    if x.size == 0:
        return _res(x.copy(), self._dtype)
    # PyTorch's CPU last-dim kernel keeps a half or bfloat16 row's sum of exponentials and its
    # log in the input's dtype: both are rounded to it before the subtraction (its CUDA kernel,
    # whose host fallback this body also is, keeps them in float)
    rounded = self._dtype in _HALF and d == x.ndim - 1 and self._device.type == "cpu"
    r = None if rounded else _generated.softmax(x, d, log=True)
    if r is not None:
        return _row_result(r, self, self._dtype)
    with _quiet():
        r = x - x.max(axis=d, keepdims=True)
        total = np.exp(r).sum(axis=d, keepdims=True)
        if rounded:
            total = np.log(total.astype(self._dtype._np).astype(r.dtype))
            total = total.astype(self._dtype._np).astype(r.dtype)
        else:
            total = np.log(total)
        r -= total
    return _row_result(r, self, self._dtype)


def _softmax_backward_data(grad_output, output, dim, input_dtype):
    d = check_softmax_backward(grad_output, output, dim, input_dtype)
    g, y = _rows(_arr(grad_output)), _rows(_arr(output))
    gy = _generated.softmax_backward(g, y, d)
    if gy is not None:
        return _row_result(gy, output, input_dtype)
    gy = g * y
    gy -= y * gy.sum(axis=d, keepdims=True)
    return _row_result(gy, output, input_dtype)


def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    d = check_softmax_backward(grad_output, output, dim, input_dtype, "log_softmax")
    g, y = _rows(_arr(grad_output)), _rows(_arr(output))
    r = _generated.softmax_backward(g, y, d, log=True)
    if r is not None:
        return _row_result(r, output, input_dtype)
    with _quiet():
        r = np.exp(y)
        r *= -g.sum(axis=d, keepdims=True)
        r += g
    return _row_result(r, output, input_dtype)


# ---------------------------------------------------------------------------------------------
# Normalization. Every statistic is computed in float32/float64 and kept in the input's dtype,
# as PyTorch's CPU kernels do.


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    if input._dtype in _REFUSED or getattr(weight, "_dtype", None) in _REFUSED or \
            getattr(bias, "_dtype", None) in _REFUSED:
        _refuse("native_layer_norm", (input, normalized_shape, weight, bias, eps))
    check_floating("LayerNormKernelImpl", input)
    m, n, stat_shape = layer_norm_shapes(input, normalized_shape, weight, bias)
    stat_dt = norm_stats_dtype(input, weight, bias)
    x = _arr(input).reshape(m, n)
    dt = input._dtype
    r = _generated.layer_norm(x, _arr(weight).reshape(1, n) if weight is not None else None,
                              _arr(bias).reshape(1, n) if bias is not None else None, eps)
    if r is not None:
        out, mean, rstd = r
        return (_res(out.reshape(input._size), dt), _res(mean.reshape(stat_shape), stat_dt),
                _res(rstd.reshape(stat_shape), stat_dt))
    with _quiet():
        mean = x.mean(axis=1, keepdims=True) if n else array_module(x).zeros((m, 1), x.dtype)
        xc = x - mean
        var = np.einsum("ij,ij->i", xc, xc)[:, None] / max(n, 1)
        rstd = 1 / np.sqrt(var + x.dtype.type(eps))
        xc *= rstd
        if weight is not None:
            xc *= _arr(weight).reshape(1, n)
        if bias is not None:
            xc += _arr(bias).reshape(1, n)
    return (_res(xc.reshape(input._size), dt), _res(mean.reshape(stat_shape), stat_dt),
            _res(rstd.reshape(stat_shape), stat_dt))


def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                               output_mask):
    m, n, _ = layer_norm_shapes(input, normalized_shape, weight, bias)
    if input._dtype in _HALF:
        return _layer_norm_backward_reduced(grad_out, input, m, n, mean, rstd, weight, bias,
                                            output_mask)
    x = _arr(input).reshape(m, n)
    g = _arr(grad_out).reshape(m, n)
    mu, rs = _arr(mean).reshape(m, 1), _arr(rstd).reshape(m, 1)
    gi = gw = gb = xhat = sums = None
    want_w, want_b = output_mask[1] and weight is not None, output_mask[2] and bias is not None
    if output_mask[0]:
        w = _arr(weight).reshape(1, n) if weight is not None else None
        r = None
        if want_w:  # the three gradients in one pass
            r = _generated.layer_norm_backward(g, x, mu, rs, w)
            if r is not None:
                r, sums = r[0], r[1:]
        if r is None:
            r = _generated.layer_norm_backward_input(g, x, mu, rs, w)
        if r is None:
            xhat = x - mu
            xhat *= rs
            dxhat = g * w if w is not None else g
            inv_n = x.dtype.type(1 / max(n, 1))
            # dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), in place
            r = xhat * (np.einsum("ij,ij->i", dxhat, xhat)[:, None] * inv_n)
            r += dxhat.sum(axis=1, keepdims=True) * inv_n
            np.subtract(dxhat, r, out=r)
            r *= rs
        gi = _res(r.reshape(input._size), input._dtype)
    if sums is None and (want_w or want_b):
        sums = _generated.layer_norm_backward_weight_bias(g, x, mu, rs)
    if want_w:
        if sums is not None:
            dw = sums[0]
        else:
            if xhat is None:
                xhat = x - mu
                xhat *= rs
            dw = np.einsum("ij,ij->j", g, xhat)
        gw = _res(dw.reshape(weight._size), weight._dtype)
    if want_b:
        gb = _res((sums[1] if sums is not None else g.sum(axis=0)).reshape(bias._size),
                  bias._dtype)
    return gi, gw, gb


def _layer_norm_backward_reduced(grad_out, input, m, n, mean, rstd, weight, bias, output_mask):
    """ATen's backward for bfloat16/float16 inputs: the input gradient in float from the
    row sums ``ds = sum(dy * x * w)`` and ``db = sum(dy * w)``, rounded once; the weight and
    bias gradients summed in the input's dtype per thread (``layer_norm_reduced``)."""
    norm_stats_dtype(input, weight, bias)
    x = nd(input).reshape(m, n)
    g = np.ascontiguousarray(nd(grad_out)).reshape(m, n)
    mu = _arr(mean).reshape(m)
    rs = _arr(rstd).reshape(m)
    gi = gw = gb = None
    if output_mask[0]:
        x32, g32 = x.astype(np.float32), g.astype(np.float32)
        w = _arr(weight).reshape(1, n) if weight is not None else None
        gw32 = g32 * w if w is not None else g32
        ds = np.einsum("ij,ij->i", gw32, x32)
        db = gw32.sum(axis=1)
        scale = np.float32(1 / max(n, 1))
        b = (db * mu - ds) * rs * rs * rs * scale
        c = -b * mu - db * rs * scale
        # dx = rstd * dy * w + b * x + c, in ATen's order
        r = g32 * rs[:, None]
        if w is not None:
            r *= w
        r += b[:, None] * x32
        r += c[:, None]
        gi = _res(r.reshape(input._size), input._dtype)
    want_w, want_b = output_mask[1] and weight is not None, output_mask[2] and bias is not None
    if want_w or want_b:
        from ..._functional_ops import get_num_threads
        from .layer_norm_reduced import weight_bias_grads
        dw, dbias = weight_bias_grads(g, x, mu, rs, x.dtype, get_num_threads())
        if want_w:
            gw = _res(dw.reshape(weight._size), weight._dtype)
        if want_b:
            gb = _res(dbias.reshape(bias._size), bias._dtype)
    return gi, gw, gb


def _bn_axes(x):
    return (0,) + tuple(range(2, x.ndim))


def _per_channel(a, ndim):
    return a.reshape((1, -1) + (1,) * (ndim - 2))


def _inv_std(var, eps):
    """ATen's InvStd in double: 1 / sqrt(var + eps), and 0 where both are 0."""
    v = var.astype(np.float64) + eps
    return np.where(v == 0, 0.0, 1 / np.sqrt(v)).astype(var.dtype)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """ATen's batch_norm_cpu: the statistics (a double sum per channel), then
    y = x * alpha + beta per channel with alpha = invstd * weight, beta = bias - mean * alpha,
    each a fused multiply-add (``batch_norm.py``)."""
    args = (input, weight, bias, running_mean, running_var, training, momentum, eps)
    for t in args[:5]:
        if getattr(t, "_dtype", None) in _REFUSED:
            _refuse("native_batch_norm", args)
    check_floating("batch_norm", input)
    c = batch_norm_shapes(input, weight, bias, running_mean, running_var)
    x = _arr(input)
    xp = array_module(x)
    dt = input._dtype
    stat_dt = norm_stats_dtype(input, weight, bias, running_mean, running_var)
    with _quiet():
        if training:
            count = x.size // max(c, 1)
            found = _batch_norm.stats(x)
            if found is None:
                mean = x.mean(axis=_bn_axes(x))
                d = x - _per_channel(mean, x.ndim)
                var_sum = (d * d).sum(axis=_bn_axes(x))
            else:
                mean, var_sum = found
            if stat_dt in _HALF:  # ATen keeps both sums in the parameters' 16-bit dtype
                mean, var_sum = (a.astype(stat_dt._np).astype(x.dtype) for a in (mean, var_sum))
            invstd = _inv_std(var_sum / count, eps)
            m = x.dtype.type(momentum)
            unbiased = var_sum / (count - 1) if count > 1 else var_sum * np.nan
            # m * batch + (1 - m) * running, as ATen's compiled loop rounds it (measured against
            # its bits): for float32 the variance's first product is fused into the sum
            if running_mean is not None:
                r = nd(running_mean)
                xp.copyto(r, m * mean + (1 - m) * r.astype(x.dtype), casting="unsafe")
            if running_var is not None:
                r = nd(running_var)
                rest = (1 - m) * r.astype(x.dtype)
                xp.copyto(r, _fma(m, unbiased, rest) if x.dtype == np.float32 else
                          m * unbiased + rest, casting="unsafe")
            save_mean, save_invstd = _res(mean, stat_dt), _res(invstd, stat_dt)
            if stat_dt in _HALF:  # ATen normalizes with the statistics as it saved them
                invstd = _arr(save_invstd)
        else:
            if running_mean is None or running_var is None:
                raise RuntimeError("running_mean and running_var must be defined in evaluation "
                                   "mode")
            mean = _arr(running_mean).astype(x.dtype)
            invstd = 1 / xp.sqrt(_arr(running_var).astype(x.dtype) + x.dtype.type(eps))
            save_mean, save_invstd = _res(xp.zeros(0), stat_dt), _res(xp.zeros(0), stat_dt)
        alpha = invstd * _arr(weight) if weight is not None else invstd
        bias_ = _arr(bias) if bias is not None else xp.zeros_like(alpha)
        y = _batch_norm.transform(x, alpha, mean, bias_)
        if y is None:  # ATen's fused multiply-adds, for float32 through float64 (where the
            # products are exact)
            wide = xp.float64 if x.dtype == xp.float32 else x.dtype
            beta = bias_.astype(wide) - mean.astype(wide) * alpha.astype(wide)
            y = (x.astype(wide) * _per_channel(alpha.astype(wide), x.ndim)
                 + _per_channel(beta.astype(x.dtype).astype(wide), x.ndim)).astype(x.dtype)
    return _res(y, dt), save_mean, save_invstd


def native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
                               save_invstd, train, eps, output_mask):
    x, g = _arr(input), _arr(grad_out)
    axes = _bn_axes(x)
    nd_ = x.ndim
    with _quiet():
        if train:
            mean, invstd = _arr(save_mean), _arr(save_invstd)
        else:
            mean = _arr(running_mean)
            invstd = 1 / np.sqrt(_arr(running_var) + eps)
        w = _arr(weight) if weight is not None else np.ones_like(mean)
        found = _batch_norm.backward(x, g, mean, invstd, w, train, output_mask[0])
        if found is not None:
            r, gsum, dotp = found
            dotp = dotp * invstd
        else:
            xhat = (x - _per_channel(mean, nd_)) * _per_channel(invstd, nd_)
            gsum = g.sum(axis=axes)
            dotp = (g * xhat).sum(axis=axes)
            if output_mask[0]:
                scale = _per_channel(invstd * w, nd_)
                if train:
                    n = x.size // max(x.shape[1], 1)
                    r = (g - _per_channel(gsum / n, nd_)
                         - xhat * _per_channel(dotp / n, nd_)) * scale
                else:
                    r = g * scale
        gi = gw = gb = None
        if output_mask[0]:
            gi = _res(r, input._dtype)
        if output_mask[1]:
            gw = _res(dotp, weight._dtype if weight is not None else input._dtype)
        if output_mask[2]:
            gb = _res(gsum, weight._dtype if weight is not None else input._dtype)
    return gi, gw, gb


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    check_floating("GroupNormKernelImpl", input)
    check_group_norm(input, weight, bias, N, C, HxW, group)
    stat_dt = norm_stats_dtype(input, weight, bias)
    x = _arr(input).reshape(N, group, -1)
    with _quiet():
        mean = x.mean(axis=2, keepdims=True)
        xc = x - mean
        var = (xc * xc).mean(axis=2, keepdims=True)
        rstd = 1 / np.sqrt(var + eps)
        y = (xc * rstd).reshape(N, C, HxW)
        if weight is not None:
            y *= _arr(weight).reshape(1, C, 1)
        if bias is not None:
            y += _arr(bias).reshape(1, C, 1)
    dt = input._dtype
    return (_res(y.reshape(input._size), dt), _res(mean.reshape(N, group), stat_dt),
            _res(rstd.reshape(N, group), stat_dt))


def native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group,
                               output_mask):
    x = _arr(input).reshape(N, group, C // group, HxW)
    g = _arr(grad_out).reshape(N, group, C // group, HxW)
    mu = _arr(mean).reshape(N, group, 1, 1)
    rs = _arr(rstd).reshape(N, group, 1, 1)
    xhat = (x - mu) * rs
    gi = gw = gb = None
    if output_mask[0]:
        w = _arr(weight).reshape(1, group, C // group, 1) if weight is not None else 1
        dxhat = g * w
        n = (C // group) * HxW
        a = dxhat.sum(axis=(2, 3), keepdims=True) / max(n, 1)
        b = (dxhat * xhat).sum(axis=(2, 3), keepdims=True) / max(n, 1)
        gi = _res(((dxhat - a - xhat * b) * rs).reshape(input._size), input._dtype)
    wdt = weight._dtype if weight is not None else input._dtype
    if output_mask[1]:
        gw = _res((g * xhat).sum(axis=(0, 3)).reshape(C), wdt)
    if output_mask[2]:
        gb = _res(g.sum(axis=(0, 3)).reshape(C), wdt)
    return gi, gw, gb


# ---------------------------------------------------------------------------------------------
# nll_loss: forward returns (output, total_weight) as PyTorch's; the backward op scatters
# -weight[target] / total_weight into a zero gradient, one fancy-index write.

_REDUCTIONS = ("none", "mean", "sum")  # PyTorch's at::Reduction enum: 0, 1, 2


def _nll_parts(self, target, weight, ignore_index):
    """(log-probabilities [N, C], targets [N], per-sample weights [N], valid mask [N])."""
    x = _arr(self)
    xp = array_module(x)
    x = x.reshape(1, -1) if x.ndim == 1 else x
    t = nd(target).reshape(-1).astype(np.int64, copy=False)
    valid = t != ignore_index
    c = x.shape[1]
    safe = xp.where(valid, t, 0)
    if xp is np:
        if safe.size and (safe.min() < 0 or safe.max() >= c):
            bad = safe[(safe < 0) | (safe >= c)][0]
            raise IndexError(f"Target {bad} is out of bounds.")
    else:  # PyTorch's CUDA assertion
        check_index_range(safe, 0, c, IndexError, "nll_loss: Assertion `t >= 0 && t < n_classes` "
                          "failed")
    w = _arr(weight).reshape(-1)[safe] if weight is not None else xp.ones(t.shape, x.dtype)
    w = xp.where(valid, w, 0).astype(x.dtype, copy=False)
    return x, safe, w, valid


def nll_loss_forward(self, target, weight, reduction, ignore_index):
    if self._dtype in _REFUSED or target._dtype in _REFUSED or \
            getattr(weight, "_dtype", None) in _REFUSED:
        _refuse("nll_loss_forward", (self, target, weight, reduction, ignore_index))
    check_floating("nll_loss_out_frame", self)
    nll_loss_shapes(self, target, weight, reduction, ignore_index)
    x, t, w, valid = _nll_parts(self, target, weight, ignore_index)
    xp = array_module(x)
    picked = -x[xp.arange(t.shape[0]), t] * w
    dt = self._dtype
    if reduction == 0:
        out = picked.reshape(nll_loss_shapes(self, target, weight, 0, ignore_index))
        return _res(out, dt), _res(xp.zeros((), x.dtype), dt)
    if dt in _HALF and xp is np and t.shape[0]:
        return _nll_reduced_float(x, t, w, valid, weight is not None, reduction, dt)
    total = w.sum()
    loss = picked.sum()
    if reduction == 1:
        with _quiet():
            loss = loss / total
    return _res(loss, dt), _res(total, dt)


def _nll_reduced_float(x, t, w, counted, weighted, reduction, dt):
    """nll_loss's sum (and total weight) of a half or bfloat16 input as ATen's CPU kernel adds
    them, in the input's dtype: see :func:`_cascade_sum`."""
    def rounded(a):
        return a.astype(dt._np).astype(np.float32)
    with _quiet():
        picked = x[np.arange(t.shape[0]), t]
        picked = -rounded(picked * w) if weighted else -picked
        picked[~counted] = 0
        loss = _cascade_sum(picked, counted, rounded)
        total = _cascade_sum(np.where(counted, w, 0).astype(np.float32), counted, rounded) \
            if weighted else np.float32(counted.sum())
        total = rounded(np.float32(total))
        if reduction == 1:
            loss = rounded(np.float32(loss) / total)
    return _res(np.asarray(loss), dt), _res(np.asarray(total), dt)


def _cascade_sum(values, counted, rounded):
    """ATen's cascade summation (nll_loss_out_frame) of ``values``, float32 holding numbers of
    a dtype that ``rounded`` rounds every sum to: eight partial sums, the first adding one
    counted sample at a time; at a counted sample whose index has its low level_power bits
    zero, level 0 goes into level 1, and on up while the next level_power bits are zero too;
    at the end the partial sums are added in order. Level 0 runs for all its stretches at once
    (a stretch ends at such a sample), the flushes one stretch at a time."""
    n = values.shape[0]
    power = max(4, (n - 1).bit_length() // 8)
    flush = counted & (np.arange(n) & ((1 << power) - 1) == 0)
    ends = np.flatnonzero(flush)
    stretch = np.searchsorted(ends, np.arange(n))  # the flush that closes each sample's stretch
    starts = np.concatenate(([0], ends + 1))
    rank = np.arange(n) - starts[stretch]
    sums = np.zeros(len(ends) + 1, np.float32)  # the last: what level 0 holds at the end
    for r in range(int(rank.max()) + 1):
        pick = rank == r
        sums[stretch[pick]] = rounded(sums[stretch[pick]] + values[pick])
    levels = [np.float32(0)] * 8
    for b, level0 in zip(ends, sums):
        levels[1] = rounded(levels[1] + level0)
        for j in range(1, 7):
            if b & (((1 << power) - 1) << (j * power)):
                break
            levels[j + 1], levels[j] = rounded(levels[j + 1] + levels[j]), np.float32(0)
    levels[0] = sums[-1]
    total = np.float32(0)
    for level in levels:
        total = rounded(np.float32(total + level))
    return total


def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    x, t, w, _ = _nll_parts(self, target, weight, ignore_index)
    g = _arr(grad_output)
    if reduction == 0:
        coef = -w * g.reshape(-1)
    else:
        # ATen's order: -(grad / total_weight), a tensor of the input's dtype, times the weight
        g = g.reshape(())
        if reduction == 1:
            with _quiet():
                g = (g / _arr(total_weight).reshape(())).astype(self._dtype._np).astype(g.dtype)
        coef = w * -g
    xp = array_module(x)
    gi = xp.zeros(x.shape, x.dtype)
    gi[xp.arange(t.shape[0]), t] = coef
    return _res(gi.reshape(self._size), self._dtype)


# ---------------------------------------------------------------------------------------------
# Embedding: a gather forward; the backward adds each row of grad into its index's row
# (_util.add_rows_at; rows of padding_idx stay zero).


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    check_embedding(weight, indices)
    idx = nd(indices)
    # no negative indices (PyTorch's CUDA kernel asserts srcIndex < srcSelectDimSize)
    check_index_range(idx, 0, weight._size[0], IndexError, "index out of range in self")
    return wrap(nd(weight)[idx])


def embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                             scale_grad_by_freq):
    idx = nd(indices).reshape(-1).astype(np.int64, copy=False)
    d = grad_output._size[-1]
    g = _arr(grad_output).reshape(-1, d)
    # ATen's CPU kernel adds row i into grad_weight[k] only for padding_idx != k in
    # [0, num_weights): an index out of range (a negative one too: no wrapping) adds nothing
    keep = (idx != padding_idx) & (idx >= 0) & (idx < num_weights)
    xp = array_module(g)
    rows = num_weights
    if xp is not np:  # on a GPU, no host round trip: dropped rows go to a spare row, cut below
        idx, rows = xp.where(keep, idx, num_weights), num_weights + 1
    elif not keep.all():
        idx, g = idx[keep], g[keep]
    if xp is np and idx.size and (scale_grad_by_freq or grad_output._dtype in _HALF):
        out = np.zeros((rows, d), grad_output._dtype._np)
        scale = 1.0 / np.maximum(np.bincount(idx, minlength=rows), 1) if scale_grad_by_freq \
            else None
        _add_rows_rounded(out, idx, g, scale)
        return _res(out, grad_output._dtype)
    if scale_grad_by_freq:
        counts = xp.bincount(idx, minlength=rows)
        g = g / counts[idx][:, None]
    out = xp.zeros((rows, d), g.dtype)
    if idx.size:
        if xp is not np:
            import cupyx  # CuPy's scatter-add: atomic adds, one kernel
            cupyx.scatter_add(out, idx, g)
        elif _add_rows.add_rows(out, idx, g):  # ATen's order, in C
            pass
        elif idx.size > 4 * num_weights:
            # NumPy, many repeats: one matrix product with a one-hot count matrix beats add.at
            onehot = np.zeros((num_weights, idx.size), g.dtype)
            onehot[idx, np.arange(idx.size)] = 1
            out = _matmul(onehot, g)
        else:
            add_rows_at(out, idx, g)
    return _res(out if rows == num_weights else out[:num_weights], grad_output._dtype)


def _add_rows_rounded(out, idx, g, scale):
    """``out[idx[i]] += scale[idx[i]] * g[i]`` (``scale`` None: 1), into each row in index order,
    every add rounded to ``out``'s dtype: ATen's embedding_dense_backward adds one index's row at
    a time (add_stub with alpha ``1 / count``, which a half or bfloat16 add rounds to its dtype:
    a fused multiply-add in float, so such a row rounds at every add). Round r adds each index's
    r-th row at once."""
    order = np.argsort(idx, kind="stable")
    sorted_idx = idx[order]
    new_run = np.concatenate(([True], sorted_idx[1:] != sorted_idx[:-1]))
    rank = np.empty_like(order)
    rank[order] = np.arange(idx.size) - np.maximum.accumulate(
        np.where(new_run, np.arange(idx.size), 0))
    work = np.float64 if out.dtype == np.float64 else np.float32
    for r in range(int(rank.max()) + 1):
        pick = rank == r
        k = idx[pick]
        row, src = out[k].astype(work), g[pick].astype(work)
        if scale is None:
            row += src
        else:
            row = _fma(src, scale[k].astype(out.dtype).astype(work)[:, None], row)
        out[k] = row.astype(out.dtype)


def embedding_renorm_(self, indices, max_norm, norm_type):
    w = nd(self)
    rows = np.unique(nd(indices).reshape(-1))
    sub = w[rows].astype(np.float64)
    norms = np.linalg.norm(sub, ord=norm_type, axis=1) if norm_type != 2 else \
        np.sqrt((sub * sub).sum(axis=1))
    scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    w[rows] = (sub * scale[:, None]).astype(w.dtype)
    return self


# ---------------------------------------------------------------------------------------------
# Dropout: ATen's native_dropout_cpu, a bool mask bernoulli_(1 - p) (the random kernels' draws),
# then ``input.mul(mask).mul_(scale)``, each product rounded to input's dtype.


def _laid_out(r, like, stride, dt):
    """``r`` (fresh, logical order) as a tensor of dtype ``dt`` shaped as ``like`` with
    ``stride`` (dense)."""
    if stride == _st.contiguous_strides(like._size):
        return _res(r, dt)
    out = empty_tensor(like._size, dt, like._device, stride)
    np.copyto(nd(out), r, casting="unsafe")
    return out


def native_dropout(input, p, train):
    check_dropout(input, p)
    # ATen's mask is empty_like(input), laid out as input (preserve_format), and its output
    # is input.mul(mask) (TensorIterator's layout over both) or, in eval, input.clone()
    size = input._size
    mask_stride = _st.suggest_memory_format_strides(size, input._stride)
    if input.numel() == 0:
        # ATen returns the input itself (no values to alias: a fresh tensor with its strides)
        # and empty_like(input) of input's dtype, which its Meta kernel and ember keep bool
        return (empty_tensor(size, input._dtype, input._device, input._stride),
                empty_tensor(size, D.bool_, input._device, mask_stride))
    if train is False:  # None means training, as in ATen
        return (_laid_out(nd(input).copy(), input, mask_stride, input._dtype),
                _laid_out(np.ones(size, np.bool_), input, mask_stride, D.bool_))
    x = nd(input)
    keep = 1.0 - p
    scale = 0.0 if keep == 0 else 1.0 / keep
    mask = bernoulli_mask(input, keep)
    w = _arr(input)
    r = (w * mask).astype(x.dtype, copy=False).astype(w.dtype, copy=False)
    out_stride = _st.elementwise_output_strides(size, [input._stride, mask_stride])
    return (_laid_out(r * w.dtype.type(scale), input, out_stride, input._dtype),
            _laid_out(mask, input, mask_stride, D.bool_))


def native_dropout_backward(grad_output, mask, scale):
    dt = dropout_backward_dtype(grad_output, mask, scale)
    r = _arr(grad_output).astype(dt._np) * nd(mask)
    r *= r.dtype.type(scale)
    return _res(r, dt)


# ---------------------------------------------------------------------------------------------
# Losses with native kernels.


def _reduce(r, reduction):
    if reduction == 1:
        return r.mean() if r.size else np.asarray(np.nan, r.dtype)
    if reduction == 2:
        return r.sum()
    return r


def mse_loss(self, target, reduction=1):
    check_floating("mse_cpu", self)
    loss_shapes("mse_loss", self, target, reduction)
    d = _arr(self) - _arr(target)
    return _res(_reduce(d * d, reduction), self._dtype)


def mse_loss_backward(grad_output, self, target, reduction):
    d = _arr(self) - _arr(target)
    d = np.broadcast_to(d, _st.broadcast_shapes(self._size, target._size))
    g = _arr(grad_output)
    r = 2 * d * g
    if reduction == 1:
        r = r / max(d.size, 1)
    return _res(_sum_to(r, self._size), self._dtype)


_BCE_CLAMP = -100.0  # PyTorch clamps log(p) at -100 so that p = 0 or 1 gives a finite loss


def binary_cross_entropy(self, target, weight=None, reduction=1):
    check_floating("binary_cross_entropy", self)
    check_bce(self, target, weight)
    x, y = _arr(self), _arr(target)
    # (NaN fails too, as in PyTorch's kernels)
    check_all((x >= 0) & (x <= 1), RuntimeError, "all elements of input should be between 0 and 1")
    with _quiet():
        r = -(y * np.maximum(np.log(x), _BCE_CLAMP) + (1 - y) * np.maximum(np.log1p(-x),
                                                                           _BCE_CLAMP))
    if weight is not None:
        r = r * _arr(weight)
    return _res(_reduce(r, reduction), self._dtype)


_BCE_EPS = 1e-12


def binary_cross_entropy_backward(grad_output, self, target, weight=None, reduction=1):
    x, y, g = _arr(self), _arr(target), _arr(grad_output)
    with _quiet():
        r = g * (x - y) / np.maximum((1 - x) * x, x.dtype.type(_BCE_EPS))
    if weight is not None:
        r = r * _arr(weight)
    if reduction == 1:
        r = r / max(x.size, 1)
    return _res(np.broadcast_to(r, self._size).copy(), self._dtype)


def binary_cross_entropy_with_logits(self, target, weight=None, pos_weight=None, reduction=1):
    check_floating("log_sigmoid_cpu", self)  # (ATen's composite: log_sigmoid first)
    check_bce(self, target, weight)
    dt = bce_with_logits_dtype(self, target)
    x, y = _arr(self), _arr(target)
    with _quiet():
        # log(1 + exp(-x)) computed stably as softplus(-x)
        sp = np.maximum(-x, 0) + np.log1p(np.exp(-np.abs(x)))
        if pos_weight is not None:
            lw = 1 + (_arr(pos_weight) - 1) * y
            r = (1 - y) * x + lw * sp
        else:
            r = (1 - y) * x + sp
    if weight is not None:
        r = r * _arr(weight)
    return _res(_reduce(r, reduction), dt)
