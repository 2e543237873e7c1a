"""Quantizing and dequantizing (ATen's ``quantized/Quantizer.cpp``, ``AffineQuantizer.cpp``,
``QTensor.cpp`` and the FBGEMM kernels an x86 PyTorch runs), the quantized factories and the
accessors of a quantized tensor's parameters.

The rounding is PyTorch's, bit for bit, and differs by scheme because different code runs:

* per tensor, quint8/qint8: FBGEMM's AVX2 kernel, ``fma(x, 1/scale, zero_point)`` rounded once
  to float (:func:`fma_float32`), then to the nearest integer (ties to even), NaN to the type's
  maximum;
* per tensor, qint32, and every per-channel tensor: FBGEMM's scalar ``Quantize``,
  ``x * (1/scale)`` rounded to float, ``+ zero_point`` rounded to float, then to the nearest
  integer; NaN becomes 0 (the 8-bit types) or the int32 minimum, as C's conversion leaves it;
* dequantizing: ``scale * (q - zero_point)`` in float per tensor, and per channel
  ``(float(q) - zero_point) * scale`` with the product in double, rounded to float.

``1/scale`` is always computed in float from the scale rounded to float.
"""
import warnings

import numpy as np

from ..._core import dtype as _dt
from ..._core import strides as _st
from ..._core.quantizer import (QUANTIZED_OF, UNDERLYING, PerChannelAffineQuantizer,
                                PerTensorAffineQuantizer, per_channel_affine,
                                per_tensor_affine, qrange)
from ..._core.storage import from_array
from ..._core.tensor_impl import make_tensor, quantized_tensor_impl, wrap_array
from ..._dispatch.keys import QUANTIZED_BITS
from ..._ops.overload import ops
from ..cpu._util import fma_float32
from ..registration import register

_aten = ops.aten
_warned = []

_DEPRECATED = ("torch.quantize_per_tensor, torch.quantize_per_channel and other quantized tensor "
               "creation functions that produce tensors with dtype torch.quint8, torch.qint8, "
               "and torch.qint32 are deprecated and will be removed in a future PyTorch release. "
               "Please see https://github.com/pytorch/pytorch/issues/184982 for more "
               "information.")


def is_quantized(t):
    return bool(t._keyset & QUANTIZED_BITS)


def int_alias(t):
    """A plain integer tensor over a quantized tensor's storage (same sizes, strides and offset),
    outside autograd's view tracking: what the kernels compute on."""
    return make_tensor(t._storage, t._size, t._stride, t._offset, UNDERLYING[t._dtype], t._device)


def new_qtensor(size, quantizer, channels_last=False):
    """A fresh quantized tensor with uninitialized integers (ATen's ``new_qtensor``), contiguous
    or channels-last; its integer array (logical shape) comes second."""
    if quantizer.dtype not in UNDERLYING:
        raise RuntimeError(f"ScalarType {quantizer.dtype._short} is not supported in new_qtensor.")
    if not _warned:  # (TORCH_WARN_ONCE)
        _warned.append(True)
        warnings.warn(_DEPRECATED, UserWarning, stacklevel=2)
    size = tuple(size)
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"[{', '.join(map(str, size))}]")
    stride = _st.channels_last_order_strides(size) if channels_last else \
        _st.contiguous_strides(size)
    np_dt = UNDERLYING[quantizer.dtype]._np
    flat = np.empty(_st.numel(size), np_dt)
    q = quantized_tensor_impl(from_array(flat), size, stride, 0, quantizer)
    view = np.lib.stride_tricks.as_strided(flat, size, [s * flat.itemsize for s in stride])
    return q, view


def _suggest_channels_last(t):
    return _st.suggests_channels_last(t._size, t._stride)


def _check_zero_point(fn_name, zero_point, dtype):
    lo, hi = qrange(dtype)
    if zero_point > hi:
        raise RuntimeError(f"{fn_name} zero_point {zero_point} is above upper bound.")
    if zero_point < lo:
        raise RuntimeError(f"{fn_name} zero_point {zero_point} is below lower bound.")


def _check_float(t):
    if t._dtype is not _dt.float32:
        raise RuntimeError(f"Quantize only works on Float Tensor, got {t._dtype._short}")


def _to_ints(v, dtype, nan):
    """Float values already rounded to integers, clamped to ``dtype``'s range (NaN -> ``nan``)."""
    lo, hi = qrange(dtype)
    v = v.astype(np.float64)
    out = np.clip(v, lo, hi)
    out[np.isnan(v)] = nan
    return out.astype(UNDERLYING[dtype]._np)


def _scalar_quantize(x, inv, zero_point, dtype):
    """FBGEMM's scalar ``Quantize<T, LEGACY=true>`` of float32 ``x`` (``inv`` float32, possibly
    broadcast per channel; ``zero_point`` likewise)."""
    with np.errstate(invalid="ignore", over="ignore"):
        v = np.rint((x * inv) + np.asarray(zero_point).astype(np.float32))
    return _to_ints(v, dtype, qrange(dtype)[0] if dtype.itemsize == 4 else 0)


def _avx2_quantize(x, inv, zero_point, dtype):
    """FBGEMM's ``QuantizeAvx2<T, LEGACY=true>``: one fused multiply-add rounded once to float,
    NaN to the largest float below 2**31, then round to nearest."""
    v = fma_float32(x, inv, zero_point)
    v[np.isnan(v)] = np.float32(2 ** 31 - 128)
    return _to_ints(np.rint(v), dtype, qrange(dtype)[1])


def _inv_scale(scale):
    with np.errstate(divide="ignore", over="ignore"):
        return np.float32(1.0) / np.asarray(scale, np.float64).astype(np.float32)


def quantize_tensor(self, quantizer):
    """``self`` (float32) quantized with ``quantizer`` (ATen's ``Quantizer::quantize``)."""
    if quantizer.qscheme is per_tensor_affine:  # (per channel, the kernel's check says it)
        _check_float(self)
    q, out = new_qtensor(self._size, quantizer, _suggest_channels_last(self))
    quantize_into(out, self, quantizer)
    return q


def quantize_into(out, src, quantizer):
    """Write float32 ``src``'s integers under ``quantizer`` into ``out`` (an array of its
    shape): ATen's ``quantize_tensor_per_tensor_affine`` / ``_per_channel_affine``."""
    dtype = quantizer.dtype
    if quantizer.qscheme is per_tensor_affine:
        _check_zero_point("quantize_tensor_per_tensor_affine", quantizer.zero_point, dtype)
        x = src.contiguous()._nd().reshape(-1)  # (1-d: NumPy makes scalars of 0-d results)
        fn = _avx2_quantize if dtype.itemsize == 1 else _scalar_quantize
        out[...] = fn(x, _inv_scale(quantizer.scale), quantizer.zero_point,
                      dtype).reshape(out.shape)
        return
    if src._dtype is not _dt.float32:
        raise RuntimeError(f"quantize_tensor_per_channel_affine expects a Float Tensor, got "
                           f"{src._dtype._short}")
    x = src.contiguous()._nd()
    axis = quantizer.axis
    if not 0 <= axis < src.dim():
        raise RuntimeError(f"Channel axis out of range in per channel affine quantization. Got: "
                           f"{axis}Expected: [0, {src.dim()})")
    channels = src._size[axis]
    if channels != quantizer.scales.numel():
        raise RuntimeError(f"length of scales must equal to channel, expected {channels} got, "
                           f"{quantizer.scales.numel()}")
    if channels != quantizer.zero_points.numel():
        raise RuntimeError(f"length of zero_points must equal to channel expected {channels} "
                           f"got, {quantizer.zero_points.numel()}")
    zps = quantizer.zero_points._nd()
    for zp in zps.tolist():
        _check_zero_point("quantize_tensor_per_channel_affine", zp, dtype)
    shape = [1] * src.dim()
    shape[axis] = channels
    out[...] = _scalar_quantize(x, _inv_scale(quantizer.scales._nd()).reshape(shape),
                                zps.reshape(shape), dtype)


def dequantize_array(self):
    """The float32 values of quantized ``self`` as a NumPy array of its shape."""
    ints = np.asarray(int_alias(self)._nd(), np.int64)
    quantizer = self._quantizer
    if quantizer.qscheme is per_tensor_affine:
        # (the difference is an int32 in FBGEMM: it wraps for the extreme qint32 values)
        diff = np.asarray(ints - quantizer.zero_point).astype(np.int32)
        with np.errstate(invalid="ignore", over="ignore"):  # (0 * an infinite scale is NaN)
            return np.asarray(diff.astype(np.float32) * np.float32(quantizer.scale))
    if not 0 <= quantizer.axis < self.dim():
        raise RuntimeError(f"Channel axis out of range in per channel affine dequantization. "
                           f"Got:{quantizer.axis} Expected: [0, {self.dim()})")
    channels = self._size[quantizer.axis]
    if channels != quantizer.scales.numel():  # (a view that kept the axis but not its size)
        raise RuntimeError(f"length of scales must equal to channel, expected {channels} got, "
                           f"{quantizer.scales.numel()}")
    shape = [1] * self.dim()
    shape[quantizer.axis] = channels
    zps = quantizer.zero_points._nd().reshape(shape).astype(np.float32)
    diff = ints.astype(np.float32) - zps
    with np.errstate(invalid="ignore", over="ignore"):
        return (diff.astype(np.float64) * quantizer.scales._nd().reshape(shape)).astype(np.float32)


def _per_channel_quantizer(scales, zero_points, axis, dtype):
    """ATen's ``make_per_channel_affine_quantizer``: its checks, then scales as float64 and
    zero points as int64, contiguous."""
    if scales.dim() != 1:
        raise RuntimeError("scale tensor must have dimension 1")
    if zero_points.dim() != 1:
        raise RuntimeError("zero_points tensor must have dimension 1")
    if scales.numel() != zero_points.numel():
        raise RuntimeError("number of elements in scales and zero_points must match")
    if not scales._dtype.is_floating_point:
        raise RuntimeError("scale tensor must be floating point")
    if zero_points._dtype.is_floating_point:
        raise NotImplementedError("ember has no per_channel_affine_float_qparams quantizer "
                                  "(floating-point zero points)")
    return PerChannelAffineQuantizer(dtype, scales.to(_dt.float64).contiguous(),
                                     zero_points.to(_dt.int64).contiguous(), axis)


# -- quantize: the float tensor's kernels (CPU) --------------------------------------------------

def quantize_per_tensor(self, scale, zero_point, dtype):
    return quantize_tensor(self, PerTensorAffineQuantizer(dtype, scale, zero_point))


def quantize_per_tensor_tensor_qparams(self, scale, zero_point, dtype):
    return quantize_per_tensor(self, scale.item(), zero_point.item(), dtype)


def quantize_per_tensor_tensors(tensors, scales, zero_points, dtype):
    if len(tensors) != scales.numel():
        raise RuntimeError("Length of list of input tensors and number of scales must match")
    if len(tensors) != zero_points.numel():
        raise RuntimeError("Length of list of input tensors and number of zero_points must "
                           "match")
    scales, zero_points = scales.tolist(), zero_points.tolist()
    return [quantize_per_tensor(t, s, z, dtype) for t, s, z in zip(tensors, scales, zero_points)]


def quantize_per_channel(self, scales, zero_points, axis, dtype):
    return quantize_tensor(self, _per_channel_quantizer(scales, zero_points, axis, dtype))


def choose_qparams(x_min, x_max, qmin, qmax, reduce_range, preserve_sparsity=False):
    """ATen's ``quant_utils::ChooseQuantizationParams`` (without power-of-two scales; FBGEMM's,
    which the fused observer calls, computes the same): (scale, zero_point) covering [min, max]
    and 0. ``preserve_sparsity`` makes a range around 0 symmetric, its zero point the middle."""
    x_min, x_max = np.float32(x_min), np.float32(x_max)
    if not x_min <= x_max:
        raise RuntimeError("In ChooseQuantizationParams, min should be less than or equal to "
                           "max")
    if reduce_range:
        qmin, qmax = int(qmin / 2), int(qmax / 2)
    if x_min < 0 and x_max > 0 and preserve_sparsity:
        symmetric_qmin = -((qmax - qmin) // 2 + 1)
        symmetric_qmax = (qmax - qmin) // 2
        # (float quotients, their larger one widened to double)
        max_scale = float(max(abs(x_min / np.float32(symmetric_qmin)),
                              abs(x_max / np.float32(symmetric_qmax))))
        x_min = np.float32(max_scale * symmetric_qmin)
        x_max = np.float32(max_scale * symmetric_qmax)
    x_min, x_max = min(x_min, np.float32(0)), max(x_max, np.float32(0))
    scale = (float(x_max) - float(x_min)) / (qmax - qmin)
    f = np.float32(scale)
    with np.errstate(divide="ignore", over="ignore"):
        if f == 0 or np.isinf(np.float32(1) / f):
            scale = 0.1
    small = float(np.float32(6.1e-5))
    if scale < small:
        org_scale = np.float32(scale)
        scale = small
        if x_min == 0:
            x_max = np.float32(small * (qmax - qmin))
        elif x_max == 0:
            x_min = np.float32(-small * (qmax - qmin))
        else:
            amplifier = np.float32(np.float32(small) / org_scale)
            x_min, x_max = np.float32(x_min * amplifier), np.float32(x_max * amplifier)
    from_min = qmin - float(x_min) / scale
    from_max = qmax - float(x_max) / scale
    from_min_error = abs(qmin) - abs(float(x_min) / scale)
    from_max_error = abs(qmax) - abs(float(x_max) / scale)
    initial = from_min if from_min_error < from_max_error else from_max
    if x_min < 0 and x_max > 0 and preserve_sparsity:
        initial = (qmin + qmax) / 2
    if initial < qmin:
        zero_point = qmin
    elif initial > qmax:
        zero_point = qmax
    else:
        zero_point = int(np.rint(initial))
    return scale, zero_point


def quantize_per_tensor_dynamic(self, dtype, reduce_range):
    if dtype not in (_dt.ALIASES["qint8"], _dt.ALIASES["quint8"], _dt.float16):
        raise RuntimeError(f"dtype {dtype._short}not supported")
    x = self.contiguous()
    if dtype is _dt.float16:
        return x.to(_dt.float16)
    qmin, qmax = qrange(dtype)
    scale, zero_point = choose_qparams(x.min().item(), x.max().item(), qmin, qmax, reduce_range)
    return quantize_per_tensor(self, scale, zero_point, dtype)


# -- tensors from integers, and empty ones ------------------------------------------------------

def _qint_type(t):
    dtype = QUANTIZED_OF.get(t._dtype)
    if dtype is None:
        raise RuntimeError("Creation of quantized tensor requires quantized dtype like "
                           "torch.quint8")
    return dtype


def _from_ints(self, quantizer):
    q, out = new_qtensor(self._size, quantizer, _suggest_channels_last(self))
    out[...] = self._nd()
    return q


def _make_per_tensor_quantized_tensor(self, scale, zero_point):
    return _from_ints(self, PerTensorAffineQuantizer(_qint_type(self), scale, zero_point))


def _make_per_channel_quantized_tensor(self, scale, zero_point, axis):
    dtype = _qint_type(self)
    return _from_ints(self, _per_channel_quantizer(scale, zero_point, axis, dtype))


def _check_qdtype(dtype):
    if dtype is None or dtype not in UNDERLYING:
        raise RuntimeError("Creation of quantized tensor requires quantized dtype like "
                           "torch.quint8")


def _channels_last(memory_format):
    return memory_format is not None and memory_format._name.startswith("channels_last")


def _empty_affine_quantized(size, dtype=None, layout=None, device=None, pin_memory=None,
                            scale=1.0, zero_point=0, memory_format=None):
    _check_qdtype(dtype)
    return new_qtensor(size, PerTensorAffineQuantizer(dtype, scale, zero_point),
                       _channels_last(memory_format))[0]


def _empty_per_channel_affine_quantized(size, scales, zero_points, axis, dtype=None,
                                        layout=None, device=None, pin_memory=None,
                                        memory_format=None):
    _check_qdtype(dtype)
    quantizer = _per_channel_quantizer(scales, zero_points, axis, dtype)
    return new_qtensor(size, quantizer, _channels_last(memory_format))[0]


def empty_quantized(size, qtensor, dtype=None, layout=None, device=None, pin_memory=None,
                    memory_format=None):
    quantizer = qtensor._quantizer
    if dtype is not None and dtype is not quantizer.dtype:
        quantizer = _with_dtype(quantizer, dtype)
    return new_qtensor(size, quantizer, _channels_last(memory_format))[0]


def _with_dtype(quantizer, dtype):
    _check_qdtype(dtype)
    if quantizer.qscheme is per_tensor_affine:
        return PerTensorAffineQuantizer(dtype, quantizer.scale, quantizer.zero_point)
    return PerChannelAffineQuantizer(dtype, quantizer.scales, quantizer.zero_points,
                                     quantizer.axis)


# -- reading a quantized tensor (QuantizedCPU) ------------------------------------------------

def dequantize_self(self):
    return wrap_array(np.array(dequantize_array(self), order="C"))


def dequantize_self_float(self):
    """``dequantize`` of a tensor that is not quantized: itself as float32 (ATen's
    ``dequantize_cpu_or_cuda``)."""
    return self.to(_dt.float32)


def dequantize_tensors(tensors):
    return [t.dequantize() for t in tensors]


def int_repr(self):
    """The integers as a plain tensor, laid out as ``self`` suggests (ATen's
    ``int_repr_quantized_cpu``)."""
    from ..._core.device import channels_last, channels_last_3d, contiguous_format
    layout = contiguous_format
    if _suggest_channels_last(self):
        layout = channels_last if self.dim() == 4 else channels_last_3d
    return int_alias(self).clone(memory_format=layout)


_IMPROVE = ("  (Could this error message be improved?  If so, please report an enhancement "
            "request to PyTorch.)")


def _per_tensor(self, what):
    if self._quantizer.qscheme is not per_tensor_affine:
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but "
                           "got false." + _IMPROVE)
    return getattr(self._quantizer, what)


def _per_channel(self, what):
    if self._quantizer.qscheme is not per_channel_affine:
        raise RuntimeError("Expected quantizer->qscheme() == kPerChannelAffine || "
                           "quantizer->qscheme() == kPerChannelAffineFloatQParams to be true, but "
                           "got false." + _IMPROVE)
    return getattr(self._quantizer, what)


def q_scale(self):
    return _per_tensor(self, "scale")


def q_zero_point(self):
    return _per_tensor(self, "zero_point")


def q_per_channel_scales(self):
    return _per_channel(self, "scales").clone()


def q_per_channel_zero_points(self):
    return _per_channel(self, "zero_points").clone()


def q_per_channel_axis(self):
    return _per_channel(self, "axis")


def qscheme(self):
    return self._quantizer.qscheme


for _name, _fn in (("quantize_per_tensor", quantize_per_tensor),
                   ("quantize_per_tensor.tensor_qparams", quantize_per_tensor_tensor_qparams),
                   ("quantize_per_tensor.tensors", quantize_per_tensor_tensors),
                   ("quantize_per_channel", quantize_per_channel),
                   ("quantize_per_tensor_dynamic", quantize_per_tensor_dynamic),
                   ("_make_per_tensor_quantized_tensor", _make_per_tensor_quantized_tensor),
                   ("_make_per_channel_quantized_tensor", _make_per_channel_quantized_tensor),
                   ("_empty_affine_quantized", _empty_affine_quantized),
                   ("_empty_per_channel_affine_quantized", _empty_per_channel_affine_quantized),
                   ("dequantize.self", dequantize_self_float)):
    register(_name, "CPU", _fn)
for _name, _fn in (("dequantize.self", dequantize_self), ("dequantize.tensors", dequantize_tensors),
                   ("int_repr", int_repr), ("q_scale", q_scale), ("q_zero_point", q_zero_point),
                   ("q_per_channel_scales", q_per_channel_scales),
                   ("q_per_channel_zero_points", q_per_channel_zero_points),
                   ("q_per_channel_axis", q_per_channel_axis), ("qscheme", qscheme),
                   ("empty_quantized", empty_quantized)):
    register(_name, "QuantizedCPU", _fn)
