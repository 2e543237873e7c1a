"""Windows over quantized tensors' integers, the quantizer kept: max pooling (ATen's
``quantized/cpu/qpool.cpp``, which ``max_pool1d``/``2d`` run on a quantized input: the window's
largest integer, per tensor only, channels-last in and out when the input is, ATen's own
argument checks and messages; ``max_pool1d``/``2d``, CompositeImplicitAutograd, send quantized
inputs here as ATen's do), average pooling, 2-d and 3-d, plain and adaptive, and means (ATen's
``AveragePool2d.cpp``, ``AveragePool3d.cpp``, ``AdaptiveAveragePooling.cpp``, ``ReduceOps.cpp``
and their NHWC kernels in ``kernels/QuantizedOpKernels.cpp``, whose float arithmetic is
followed rounding for rounding: see :func:`_avg_pool`) and reflection padding (ATen's
``ReflectionPad.cpp``, which a reflect-padded quantized convolution runs)."""
import itertools

import numpy as np

from ..._core import dtype as _dt
from ..._core import strides as _st
from ..._core.device import channels_last, channels_last_3d
from ..._core.quantizer import PerTensorAffineQuantizer, per_tensor_affine, qrange
from ..._ops.overload import ops
from ..cpu._util import fma_float32
from ..registration import register
from ..rules.pool import check_max_pool1d_args, pooling_output_size
from .affine import _IMPROVE, _suggest_channels_last, int_alias, new_qtensor

_aten = ops.aten


def quantized_max_pool2d(self, kernel_size, stride=(), padding=(0,), dilation=(1,),
                         ceil_mode=False):
    """ATen's ``quantized_max_pool2d`` (``max_pool2d`` of a quantized input)."""
    if len(kernel_size) not in (1, 2):
        raise RuntimeError("Expected 1d or 2d kernel size.")
    if len(stride) not in (0, 2):
        raise RuntimeError("Expected no strides or 2d strides.")
    if len(padding) not in (1, 2):
        raise RuntimeError("Expected 1d or 2d padding.")
    if len(dilation) not in (1, 2):
        raise RuntimeError("Expected 1d or 2d dilation.")
    if self.dim() not in (3, 4):
        raise RuntimeError("Expecting the input tensor of rank 3 or 4.")
    _per_tensor(self)
    kh, kw = list(kernel_size) * (3 - len(kernel_size))
    sh, sw = list(stride) if stride else (kh, kw)
    ph, pw = list(padding) * (3 - len(padding))
    dh, dw = list(dilation) * (3 - len(dilation))
    if kh <= 0 or kw <= 0:
        raise RuntimeError("kernel_size should be greater than zero.")
    if sh <= 0 or sw <= 0:
        raise RuntimeError("strides should be greater than zero.")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero. Got ({dh}, {dw})")
    if ph < 0 or pw < 0:
        raise RuntimeError(f"padding should be non-negative. Got ({ph}, {pw})")
    if kh // 2 < ph or kw // 2 < pw:
        raise RuntimeError("padding should be smaller than half of kernel_size.")
    c, h, w = self.shape[-3:]
    oh = pooling_output_size(h, kh, ph, sh, dh, ceil_mode)
    ow = pooling_output_size(w, kw, pw, sw, dw, ceil_mode)
    if oh <= 0 or ow <= 0:
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: "
                           f"({c}x{oh}x{ow}). Output size is too small.")
    ints = int_alias(self)
    # the dense op on the integers as doubles (exact), its windows and padding the same
    pooled = _aten.max_pool2d_with_indices.default(
        _aten._to_copy.default(ints, dtype=_dt.float64), [kh, kw], [sh, sw], [ph, pw],
        [dh, dw], ceil_mode)[0]
    pooled = _aten._to_copy.default(pooled, dtype=ints.dtype)
    if self.dim() == 4 and _suggest_channels_last(self):
        pooled = _aten.clone.default(pooled, memory_format=channels_last)
    else:
        pooled = _aten.clone.default(pooled)
    return _aten._make_per_tensor_quantized_tensor.default(pooled, self.q_scale(),
                                                           self.q_zero_point())



def quantized_max_pool1d(self, kernel_size, stride=(), padding=(0,), dilation=(1,),
                         ceil_mode=False):
    """ATen's ``quantized_max_pool1d`` (``max_pool1d`` of a quantized input): its 1-d checks,
    then the 2-d pooling of the input with a height of one."""
    if self.dim() not in (2, 3):
        raise RuntimeError(f"max_pool1d() Expected 2D or 3D input tensor, but got "
                           f"{list(self.shape)}")
    k, s, p, d = check_max_pool1d_args(self.shape[-1], kernel_size, stride, padding, dilation,
                                       ceil_mode)
    squeeze = self.dim() - 1
    y = _aten.quantized_max_pool2d.default(_aten.unsqueeze.default(self, squeeze), [1, k],
                                           [1, s], [0, p], [1, d], ceil_mode)
    return _aten.squeeze.dim(y, squeeze)


def _per_tensor(self):
    """The input's quantizer, which must be per tensor (ATen reads ``q_scale()``)."""
    if self._quantizer.qscheme is not per_tensor_affine:
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but "
                           "got false." + _IMPROVE)
    return self._quantizer


def _planes(self, batch, c, spatial):
    """The input's integers as int64 (batch, C, *spatial) planes, as ATen's loops read its
    data (an input without a batch dim is one batch)."""
    return np.asarray(int_alias(self)._nd(), np.int64).reshape(-1, *spatial)[:batch * c].reshape(
        batch, c, *spatial)


def _window_sums(x, bounds):
    """Sums of ``x``'s (batch, C, *spatial) integers over the boxes ``bounds`` gives (per
    spatial dim, arrays of window starts and ends), exactly, by summed-area tables."""
    n = len(bounds)
    table = np.zeros(x.shape[:2] + tuple(d + 1 for d in x.shape[2:]), np.int64)
    sums = x
    for axis in range(2, 2 + n):
        sums = sums.cumsum(axis)
    table[(Ellipsis,) + (slice(1, None),) * n] = sums
    out = 0
    for corner in itertools.product((0, 1), repeat=n):
        index = np.ix_(*[end if high else start for high, (start, end) in zip(corner, bounds)])
        sign = 1 if (n - sum(corner)) % 2 == 0 else -1
        out = out + sign * table[(slice(None), slice(None)) + index]
    return out


def _vector_channels(c, dtype, lanes):
    """How many leading channels an NHWC kernel of ATen's runs in its vector body: whole
    vectors of ``lanes[capability]`` int32 lanes of 8-bit integers; the others (all of a qint32
    tensor's, all without AVX) run its scalar tail, whose rounding differs."""
    from ...backends.cpu import get_cpu_capability
    n = lanes.get(get_cpu_capability(), 0)
    return 0 if not n or dtype.itemsize != 1 else c // n * n


# the vector bodies' widths: average pooling's follows the capability; adaptive pooling's
# quantizes eight channels at a time under AVX-512 too (measured against PyTorch 2.13)
_AVG_LANES = {"AVX2": 8, "AVX512": 16}
_ADAPTIVE_LANES = {"AVX2": 8, "AVX512": 8}


def _requantize_tail(acc, multiplier, zero_point):
    """ATen's ``quantize_val(1.0f / multiplier, zero_point, acc)`` (FBGEMM's scalar
    ``Quantize``): the accumulator times the float reciprocal of the float ``1 / multiplier``,
    plus the zero point in float, then rounded (ties to even)."""
    scale = np.float32(1) / multiplier
    with np.errstate(over="ignore", invalid="ignore"):
        return np.rint(acc.astype(np.float32) * (np.float32(1) / scale) + np.float32(zero_point))


def _channels_last_like(t):
    """Whether ``t.contiguous(memory_format=channels_last_3d)`` suggests channels-last: ``t``
    itself when it already is, else its channels-last copy (which does unless its sizes make
    the layout ambiguous)."""
    if t.is_contiguous(memory_format=channels_last_3d):
        return _suggest_channels_last(t)
    return _st.suggests_channels_last(t._size, _st.channels_last_order_strides(t._size))


def _store(shape, quantizer, channels_last, values, nhwc=False):
    """A new quantized tensor of ``values`` (batch, C, *spatial) clamped to the dtype's range.
    ``nhwc``: ATen's NHWC kernel wrote them into the output's memory in channels-last order
    whatever the output's layout (which differs when the input's layout was ambiguous, as with
    one channel), so each element is the value at its memory offset in that order."""
    lo, hi = qrange(quantizer.dtype)
    q, view = new_qtensor(shape, quantizer, channels_last)
    values = np.clip(values, lo, hi)
    if nhwc:
        written = values.transpose(0, *range(2, values.ndim), 1).reshape(-1)
        offsets = sum(i * s for i, s in zip(np.indices(shape), q._stride))
        values = written[offsets]
    view[...] = values.reshape(view.shape)
    return q


_WORDS = {2: "two", 3: "three"}


def _avg_pool(self, n, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    """ATen's ``avg_pool{2,3}d_quantized_cpu`` (x86): each window's integer sum less ``size``
    zero points (``size`` the window's elements inside the input), divided and requantized to
    the input's scale and zero point in float. A channels-last input (every 3-d one, made
    channels-last first) takes the NHWC kernel: ``rint(acc * multiplier) + zero_point``
    (``multiplier = 1.0f / divisor``) in its vector body, :func:`_requantize_tail` in its tail
    (:func:`_vector_channels`); any other input ATen's NCHW loop, ``rint(acc * multiplier +
    zero_point)`` in float (the zero point added before rounding)."""
    name = f"avg_pool{n}d"
    for arg, v, forms in (("kernel_size", kernel_size, "either be a single int, or"),
                          ("stride", stride, "either be omitted, a single int, or"),
                          ("padding", padding, "either be a single int, or")):
        if len(v) not in (1, n) and not (arg == "stride" and not v):
            raise RuntimeError(f"{name}: {arg} must {forms} a tuple of {_WORDS[n]} ints")
    kernel = [kernel_size[i if len(kernel_size) > 1 else 0] for i in range(n)]
    strides = [stride[i if len(stride) > 1 else 0] for i in range(n)] if stride else kernel
    pads = [padding[i if len(padding) > 1 else 0] for i in range(n)]
    _st.wrap_dim(-(n + 1), self.dim(), scalar_ok=False)  # (ATen reads these sizes first)
    if divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    c, *spatial = self.shape[-(n + 1):]
    batch = self.shape[0] if self.dim() == n + 2 else 1
    out = []
    for i, k, p, s in zip(spatial, kernel, pads, strides):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > k // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation=1")
        out.append(pooling_output_size(i, k, p, s, 1, ceil_mode))
    if n == 2:
        nhwc = self.dim() == 4 and self.is_contiguous(memory_format=channels_last)
        layout = nhwc and _suggest_channels_last(self)
    else:
        if self.dim() != 5:
            raise RuntimeError("required rank 5 tensor to use channels_last_3d format")
        nhwc, layout = True, _channels_last_like(self)
    quantizer = _per_tensor(self)
    zp = quantizer.zero_point
    shape = (c, *out) if self.dim() == n + 1 else (batch, c, *out)
    if min(shape) <= 0:
        return new_qtensor(shape, quantizer, layout)[0]
    bounds, pool_size, count = [], 1, 1
    for o, i, k, p, s in zip(out, spatial, kernel, pads, strides):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, i + p)
        extent = [1] * n
        extent[len(bounds)] = o
        pool_size = pool_size * (end - start).reshape(extent)
        start, end = np.maximum(start, 0), np.minimum(end, i)
        count = count * (end - start).reshape(extent)
        bounds.append((start, end))
    divisor = (np.full_like(count, divisor_override) if divisor_override is not None
               else pool_size if count_include_pad else count)
    sums = _window_sums(_planes(self, batch, c, spatial), bounds)
    acc = (sums - count * zp).astype(np.int32)
    if nhwc:
        # (float input_scale / output_scale, both the input's, is 1)
        multiplier = np.float32(1) / divisor.astype(np.float32)
        values = _requantize_tail(acc, multiplier, zp)
        body = _vector_channels(c, self.dtype, _AVG_LANES)
        values[:, :body] = np.rint(acc[:, :body].astype(np.float32) * multiplier) + zp
        return _store(shape, quantizer, layout, values, nhwc=True)
    # (double input_scale / output_scale is 1; the quotient by the divisor rounded to float)
    multiplier = (1.0 / divisor.astype(np.float64)).astype(np.float32)
    values = np.rint(acc.astype(np.float32) * multiplier + np.float32(zp))
    return _store(shape, quantizer, False, values)


def avg_pool2d(self, kernel_size, stride=(), padding=(0,), ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool(self, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(self, kernel_size, stride=(), padding=(0,), ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool(self, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _adaptive_bounds(out_size, in_size):
    """ATen's start_index/end_index: floor and ceil of float quotients."""
    o = np.arange(out_size)
    start = np.floor((o * in_size).astype(np.float32) / np.float32(out_size))
    end = np.ceil(((o + 1) * in_size).astype(np.float32) / np.float32(out_size))
    return start.astype(np.int64), end.astype(np.int64)


def _adaptive_avg_pool(self, n, output_size):
    """ATen's ``adaptive_avg_pool{2,3}d_quantized_cpu`` (x86). A channels-last input takes the
    NHWC kernel: the window's sum less its zero points requantized with ``multiplier = 1.0f /
    size``, by :func:`_requantize_tail` in its tail and in its vector body by the same
    arithmetic with the product and the zero point's sum fused (one rounding); any other input
    the NCHW loop: ``rint(sum * r)`` of the raw integers, ``r`` the float ``1 / kd / kh / kw``
    divided in that order (the zero point cancels)."""
    if len(output_size) != n:
        raise RuntimeError(f"adaptive_avg_pool{n}d: output_size must be {n}")
    if min(output_size) < 0:
        received = ", ".join(map(str, output_size[:2])) + "".join(f",{o}" for o in
                                                                  output_size[2:])
        raise RuntimeError(f"adaptive_avg_pool{n}d: elements of output_size must be greater "
                           f"than or equal to 0 but received {{{received}}}")
    for i in range(1, self.dim()):
        if self.shape[i] <= 0:
            raise RuntimeError(f"adaptive_avg_pooling{n}d(): expected input to have non-empty "
                               f"spatial dimensions, but input has sizes {list(self.shape)} "
                               f"with dimension {i} being empty")
    if self.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"non-empty {n + 1}D or {n + 2}D (batch mode) tensor expected for "
                           f"input")
    c, *spatial = self.shape[-(n + 1):]
    batch = self.shape[0] if self.dim() == n + 2 else 1
    shape = (c, *output_size) if self.dim() == n + 1 else (batch, c, *output_size)
    quantizer = _per_tensor(self)
    # (ATen takes its NHWC kernel for either channels-last layout, whichever rank it has)
    nhwc = ((self.dim() == 4 and self.is_contiguous(memory_format=channels_last))
            or (self.dim() == 5 and self.is_contiguous(memory_format=channels_last_3d)))
    layout = _suggest_channels_last(self)
    if min(shape) <= 0:
        return new_qtensor(shape, quantizer, layout)[0]
    bounds = [_adaptive_bounds(o, i) for o, i in zip(output_size, spatial)]
    sums = _window_sums(_planes(self, batch, c, spatial), bounds)
    extents = [(end - start).reshape([-1 if d == j else 1 for d in range(n)])
               for j, (start, end) in enumerate(bounds)]
    if nhwc:
        size = np.prod(np.broadcast_arrays(*extents), axis=0)
        multiplier = np.float32(1) / size.astype(np.float32)
        zp = quantizer.zero_point
        acc = (sums - size * zp).astype(np.int32)
        values = _requantize_tail(acc, multiplier, zp)
        # (the vector body: FBGEMM's AVX2 ``Quantize``, one fused multiply-add)
        body = _vector_channels(c, self.dtype, _ADAPTIVE_LANES)
        inverse = np.float32(1) / (np.float32(1) / multiplier)
        values[:, :body] = np.rint(fma_float32(acc[:, :body].astype(np.float32), inverse,
                                               np.float32(zp)))
    else:
        r = np.float32(1)
        for k in extents:
            r = r / k.astype(np.float32)
        values = np.rint(sums.astype(np.float32) * r)
    return _store(shape, quantizer, layout, values, nhwc)


def _adaptive_avg_pool2d(self, output_size):
    return _adaptive_avg_pool(self, 2, output_size)


def _adaptive_avg_pool3d(self, output_size):
    return _adaptive_avg_pool(self, 3, output_size)


def mean_dim(self, dim, keepdim=False, dtype=None):
    """ATen's ``mean_quantized_cpu``: over the innermost dims of a contiguous tensor, the raw
    integers' sum over their count in float, rounded, with the input's scale and zero point;
    otherwise the float mean of the dequantized tensor, quantized with them again."""
    dims = [] if dim is None else [_st.wrap_dim(d, self.dim()) for d in dim]
    dims.sort(reverse=True)
    innermost = not dims or (dims[0] == self.dim() - 1 and all(
        b == a - 1 for a, b in zip(dims, dims[1:])))
    if not (self.is_contiguous() and innermost and dtype in (None, self.dtype)):
        result = _aten.mean.dim(_aten.dequantize.self(self), dim, keepdim, dtype=dtype)
        return _aten.quantize_per_tensor.default(result, self.q_scale(), self.q_zero_point(),
                                                 dtype or self.dtype)
    k = len(dims) if dims else self.dim()
    lead, reduced = self.shape[:self.dim() - k], self.shape[self.dim() - k:]
    shape = tuple(lead) + ((1,) * k if keepdim else ())
    quantizer = PerTensorAffineQuantizer(self.dtype, self.q_scale(), self.q_zero_point())
    count = int(np.prod(reduced, dtype=np.int64))
    sums = np.asarray(int_alias(self)._nd(), np.int64).reshape(
        int(np.prod(lead, dtype=np.int64)), count).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):  # (no elements: ATen's is undefined)
        values = np.rint(sums.astype(np.float32) / np.float32(count)).astype(np.int64)
    q, view = new_qtensor(shape, quantizer, _suggest_channels_last(self))
    view[...] = values.reshape(view.shape)
    return q


def mean(self, dtype=None):
    """``mean`` of every element: ``mean.dim`` over all dims (ATen's composite)."""
    return _aten.mean.dim(self, [], False, dtype=dtype)


def _reflection_pad(op):
    """The dense op on the integers, the quantizer kept (per tensor only)."""
    def kernel(self, padding):
        if self._quantizer.qscheme is not per_tensor_affine:
            raise RuntimeError("Only per tensor quantization is supported")
        return _aten._make_per_tensor_quantized_tensor.default(
            op(int_alias(self), padding), self.q_scale(), self.q_zero_point())
    kernel.__name__ = kernel.__qualname__ = op.__name__.split(".")[0]
    return kernel

register("reflection_pad1d", "QuantizedCPU", _reflection_pad(_aten.reflection_pad1d.default))
register("reflection_pad2d", "QuantizedCPU", _reflection_pad(_aten.reflection_pad2d.default))
register("quantized_max_pool1d", "QuantizedCPU", quantized_max_pool1d)
register("quantized_max_pool2d", "QuantizedCPU", quantized_max_pool2d)
register("avg_pool2d", "QuantizedCPU", avg_pool2d)
register("avg_pool3d", "QuantizedCPU", avg_pool3d)
register("_adaptive_avg_pool2d", "QuantizedCPU", _adaptive_avg_pool2d)
register("_adaptive_avg_pool3d", "QuantizedCPU", _adaptive_avg_pool3d)
register("mean.dim", "QuantizedCPU", mean_dim)
register("mean", "QuantizedCPU", mean)
