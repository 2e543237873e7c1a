"""Upsampling of quantized tensors (ATen's ``quantized/cpu/UpSampleNearest2d.cpp``,
``UpSampleNearest3d.cpp`` and ``UpSampleBilinear2d.cpp``), the quantizer kept (per tensor
only) and the output laid out as the input suggests.

Nearest neighbours copy integers: the dense op runs on the integers as floats (exact), so its
checks and index rules are the dense op's. Bilinear interpolation mixes the four neighbouring
integers with ATen's float weights (``area_pixel_compute_scale``/``_source_index`` in float),
less the zero point, and rounds ``result + zero_point`` as ``quantize_val`` does (the zero
point added before rounding). A channels-last input takes ATen's NHWC kernel, compiled with
FMA and contracted by the compiler: its source index is ``fma(ratio, dst + 0.5, -0.5)`` and
its sums in the vector body (whole blocks of eight channels of the 8-bit types) ``fma(w1, p1, w0 * p0)`` and
``fma(h1, bottom, h0 * top)``, in the scalar tail ``fma(w0, p0, w1 * p1)`` and ``fma(h0, top,
h1 * bottom)`` (measured against PyTorch 2.13, AVX2 and AVX-512 alike).
"""
import numpy as np

from ..._core import dtype as _dt
from ..._core.device import channels_last, channels_last_3d
from ..._ops.overload import ops
from ..registration import register
from ..cpu._util import fma_float32
from ..rules.resample import check_upsample
from .affine import _scalar_quantize, _suggest_channels_last, int_alias, new_qtensor
from .pool import _per_tensor, _store

_aten = ops.aten


def _nhwc(t):
    """Whether ATen takes its NHWC kernel: the input channels-last contiguous. That kernel
    writes the output's memory in channels-last order whatever layout the output has (it
    differs when the input's layout was ambiguous, as with 1x1 planes)."""
    return t.is_contiguous(memory_format=channels_last if t.dim() == 4 else channels_last_3d)


def _nearest(op):
    """The dense nearest op on the integers (as float32, or float64 for qint32: exact)."""
    def kernel(self, output_size, *scales):
        quantizer = _per_tensor(self)
        shape = (*self.shape[:2], *output_size)
        layout = _suggest_channels_last(self)
        if self.dim() == 5 and 0 in output_size:
            # (the 3-d kernels check only the width, and by an internal assert)
            if output_size[-1] == 0:
                raise RuntimeError(
                    "input_width > 0 && output_width > 0 INTERNAL ASSERT FAILED at "
                    "\"/__w/pytorch/pytorch/aten/src/ATen/native/quantized/cpu/"
                    "UpSampleNearest3d.cpp\":157, please report a bug to PyTorch. ")
            return new_qtensor(shape, quantizer, layout)[0]
        as_float = _aten._to_copy(int_alias(self), dtype=_dt.float64 if
                                  self.dtype.itemsize == 4 else _dt.float32)
        values = op(as_float, output_size, *scales)._nd()
        return _store(shape, quantizer, layout, values, _nhwc(self))
    kernel.__name__ = kernel.__qualname__ = op.__name__.split(".")[0]
    return kernel


def _source(in_size, out_size, align_corners, scale, fused):
    """ATen's float ``area_pixel_compute_scale`` and ``area_pixel_compute_source_index``
    (``fused``: its product and difference contracted into one FMA): each output position's
    lower input index, the step to the next (0 at the edge) and its two weights."""
    f32 = np.float32
    if align_corners:
        ratio = f32(in_size - 1) / f32(out_size - 1) if out_size > 1 else f32(0)
    elif scale is not None and scale > 0:
        ratio = f32(1.0 / scale)
    else:
        ratio = f32(in_size) / f32(out_size)
    dst = np.arange(out_size, dtype=f32)
    if align_corners:
        src = ratio * dst
    elif fused:
        src = np.maximum(fma_float32(ratio, dst + f32(0.5), f32(-0.5)), f32(0))
    else:
        src = np.maximum(ratio * (dst + f32(0.5)) - f32(0.5), f32(0))
    low = src.astype(np.int64)
    step = (low < in_size - 1).astype(np.int64)
    lambda1 = src - low.astype(f32)
    return low, step, f32(1) - lambda1, lambda1


def _vector_channels(c, dtype):
    """How many leading channels the NHWC kernel's vector body takes: whole blocks of eight
    for the 8-bit types under AVX2 and AVX-512 (measured against PyTorch 2.13: its AVX-512
    build runs this kernel's AVX2 widths), none for qint32."""
    from ...backends.cpu import get_cpu_capability
    if dtype.itemsize != 1 or get_cpu_capability() not in ("AVX2", "AVX512"):
        return 0
    return c // 8 * 8


def upsample_bilinear2d(self, output_size, align_corners, scales_h=None, scales_w=None):
    """``upsample_bilinear2d_quantized_cpu``: ``h0 * (w0 * p00 + w1 * p01) + h1 * (w0 * p10 +
    w1 * p11) - zero_point`` in float, quantized with scale 1 and the zero point."""
    shape = check_upsample("upsample_bilinear2d", tuple(self._size), output_size,
                           _dt.float32)
    quantizer = _per_tensor(self)
    layout, nhwc = _suggest_channels_last(self), _nhwc(self)
    if 0 in shape:
        return new_qtensor(shape, quantizer, layout)[0]
    x = np.asarray(int_alias(self)._nd())
    if tuple(output_size) == tuple(self.shape[2:]):  # (ATen copies the integers)
        return _store(shape, quantizer, layout, x, nhwc)
    x = x.astype(np.float32)
    (h, hp, h0, h1), (w, wp, w0, w1) = (
        _source(n, m, align_corners, s, nhwc) for n, m, s in
        zip(self.shape[2:], output_size, (scales_h, scales_w)))
    rows = x[:, :, h], x[:, :, h + hp]
    h0, h1 = h0[:, None], h1[:, None]
    if nhwc:
        # (the vector body's channels and the scalar tail's contract differently)
        a, b = rows[0][..., w], rows[0][..., w + wp]
        c, d = rows[1][..., w], rows[1][..., w + wp]
        body = np.arange(x.shape[1]).reshape(-1, 1, 1) < _vector_channels(x.shape[1], self.dtype)
        top = np.where(body, fma_float32(w1, b, w0 * a), fma_float32(w0, a, w1 * b))
        bottom = np.where(body, fma_float32(w1, d, w0 * c), fma_float32(w0, c, w1 * d))
        result = np.where(body, fma_float32(h1, bottom, h0 * top),
                          fma_float32(h0, top, h1 * bottom))
    else:
        top = w0 * rows[0][..., w] + w1 * rows[0][..., w + wp]
        bottom = w0 * rows[1][..., w] + w1 * rows[1][..., w + wp]
        result = h0 * top + h1 * bottom
    result = result - np.float32(quantizer.zero_point)
    values = _scalar_quantize(result, np.float32(1), quantizer.zero_point, quantizer.dtype)
    return _store(shape, quantizer, layout, values, nhwc)


register("upsample_nearest2d", "QuantizedCPU", _nearest(_aten.upsample_nearest2d.default))
register("upsample_nearest3d", "QuantizedCPU", _nearest(_aten.upsample_nearest3d.default))
register("_upsample_nearest_exact2d", "QuantizedCPU",
         _nearest(_aten._upsample_nearest_exact2d.default))
register("_upsample_nearest_exact3d", "QuantizedCPU",
         _nearest(_aten._upsample_nearest_exact3d.default))
register("upsample_bilinear2d", "QuantizedCPU", upsample_bilinear2d)
