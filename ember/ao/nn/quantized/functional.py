"""``torch.ao.nn.quantized.functional``: the functional forms of the quantized layers and
activations on quantized tensors. Each checks its arguments as PyTorch's does and calls the
op PyTorch calls (a ``quantized::`` op, or the plain ``nn.functional`` one, which quantized
inputs send to their QuantizedCPU kernels); the convolutions and ``linear`` prepack their
weight at every call."""
import warnings

import ember
from ...._ops.overload import ops
from ....nn import functional as _F
from ....nn.modules.utils import _pair, _triple
from .modules.utils import _pair_from_first

__all__ = [
    "avg_pool2d", "avg_pool3d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "conv1d",
    "conv2d", "conv3d", "interpolate", "linear", "max_pool1d", "max_pool2d", "celu",
    "leaky_relu", "hardtanh", "hardswish", "threshold", "elu", "hardsigmoid", "clamp",
    "upsample", "upsample_bilinear", "upsample_nearest",
]


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-d average pooling of a quantized input; the input's parameters propagate."""
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.avg_pool2d' must be quantized!")
    return _F.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-d average pooling of a quantized input; the input's parameters propagate."""
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.avg_pool3d' must be quantized!")
    return _F.avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)


def adaptive_avg_pool2d(input, output_size):
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.functional.adaptive_avg_pool2d' must be "
                         "quantized!")
    return _F.adaptive_avg_pool2d(input, output_size)


def adaptive_avg_pool3d(input, output_size):
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.functional.adaptive_avg_pool3d' must be "
                         "quantized!")
    return _F.adaptive_avg_pool3d(input, output_size)


_SHAPES = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}


def _conv(n, input, weight, bias, stride, padding, dilation, groups, padding_mode, scale,
          zero_point, ntuple):
    """``quantized::conv{n}d`` of ``input`` by ``weight`` prepacked for this call."""
    if padding_mode != "zeros":
        raise NotImplementedError("Only zero-padding is supported!")
    if input.dtype != ember.quint8:
        raise NotImplementedError("Only torch.quint8 is supported for activation tensor!")
    if weight.dtype != ember.qint8:
        raise NotImplementedError("Only torch.qint8 is supported for weight tensor!")
    if input.ndim != n + 2:
        raise ValueError(f"Input shape must be `{_SHAPES[n]}`!")
    packed_params = getattr(ops.quantized, f"conv{n}d_prepack")(
        weight, bias, ntuple(stride), ntuple(padding), ntuple(dilation), groups)
    return getattr(ops.quantized, f"conv{n}d")(input, packed_params, scale, zero_point)


def conv1d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros", scale=1.0, zero_point=0, dtype=ember.quint8):
    """1-d convolution of a quint8 input by a qint8 weight and a float bias, the output
    quantized with ``scale`` and ``zero_point``."""
    return _conv(1, input, weight, bias, stride, padding, dilation, groups, padding_mode,
                 scale, zero_point, _pair_from_first)


def conv2d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros", scale=1.0, zero_point=0, dtype=ember.quint8):
    """2-d convolution of a quint8 input by a qint8 weight and a float bias, the output
    quantized with ``scale`` and ``zero_point``."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups, padding_mode,
                 scale, zero_point, _pair)


def conv3d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros", scale=1.0, zero_point=0, dtype=ember.quint8):
    """3-d convolution of a quint8 input by a qint8 weight and a float bias, the output
    quantized with ``scale`` and ``zero_point``."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups, padding_mode,
                 scale, zero_point, _triple)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """``nn.functional.interpolate`` of a quantized input (nearest and bilinear); the input's
    parameters propagate."""
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.interpolate' must be quantized!")
    return _F.interpolate(input, size, scale_factor, mode, align_corners)


def linear(input, weight, bias=None, scale=None, zero_point=None):
    """``quantized::linear`` of a quint8 input by a qint8 weight prepacked for this call; the
    output's parameters default to the input's."""
    if scale is None:
        scale = input.q_scale()
    if zero_point is None:
        zero_point = input.q_zero_point()
    _packed_params = ops.quantized.linear_prepack(weight, bias)
    return ops.quantized.linear(input, _packed_params, scale, zero_point)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-d max pooling of a quantized input; the input's parameters propagate."""
    if return_indices:
        raise NotImplementedError("return_indices is not yet implemented!")
    if stride is None:
        stride = []
    return _F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                         return_indices=return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-d max pooling of a quantized input; the input's parameters propagate."""
    if return_indices:
        raise NotImplementedError("return_indices is not yet implemented!")
    if stride is None:
        stride = []
    return _F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                         return_indices=return_indices)


def celu(input, scale, zero_point, alpha=1.0):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``, quantized with ``scale`` and
    ``zero_point``."""
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.celu' must be quantized!")
    return ops.quantized.celu(input, scale, zero_point, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False, scale=None, zero_point=None):
    """Leaky ReLU of a quantized input; given both ``scale`` and ``zero_point``, the output
    is quantized with them, else with the input's parameters."""
    if scale is not None and zero_point is not None:
        if inplace:
            raise AssertionError("Cannot rescale with `inplace`")
        output = ember._empty_affine_quantized(input.shape, scale=scale,
                                               zero_point=int(zero_point), dtype=input.dtype)
        ops.aten.leaky_relu.out(input, negative_slope, out=output)
        return output
    if inplace:
        return ops.aten.leaky_relu_(input, negative_slope)
    return ops.aten.leaky_relu(input, negative_slope)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``nn.functional.hardtanh`` of a quantized input: its integers clamped."""
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.hardtanh' must be quantized!")
    if inplace:
        return ops.aten.hardtanh_(input, min_val, max_val)
    return ops.aten.hardtanh(input, min_val, max_val)


def hardswish(input, scale, zero_point):
    """``x * relu6(x + 3) / 6``, quantized with ``scale`` and ``zero_point``."""
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.hardswish' must be quantized!")
    return ops.quantized.hardswish(input, scale, zero_point)


def threshold(input, threshold, value):
    """``x`` where ``x > threshold``, else ``value``; the input's parameters."""
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.threshold' must be quantized!")
    if threshold is None:
        raise ValueError("Input to 'threshold' must be specified!")
    if value is None:
        raise ValueError("Input to 'value' must be specified!")
    return ops.quantized.threshold(input, threshold, value)


def elu(input, scale, zero_point, alpha=1.0):
    """ELU quantized with ``scale`` and ``zero_point``."""
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.elu' must be quantized!")
    return ops.quantized.elu(input, scale, zero_point, alpha)


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6`` of a quantized input, quantized with scale ``1 / 256``."""
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.hardsigmoid' must be quantized!")
    if inplace:
        return ops.aten.hardsigmoid_(input)
    return ops.aten.hardsigmoid(input)


def clamp(input, min_, max_):
    """``torch.clamp`` of a quantized input: its integers clamped."""
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.clamp' must be quantized!")
    return ember.clamp(input, min_, max_)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated: :func:`interpolate`."""
    warnings.warn("nn.quantized.functional.upsample is deprecated. Use "
                  "nn.quantized.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: :func:`interpolate` with ``mode='bilinear', align_corners=True``."""
    warnings.warn("nn.quantized.functional.upsample_bilinear is deprecated. Use "
                  "nn.quantized.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: :func:`interpolate` with ``mode='nearest'``."""
    warnings.warn("nn.quantized.functional.upsample_nearest is deprecated. Use "
                  "nn.quantized.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")
