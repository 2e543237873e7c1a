"""Windows over quantized tensors' integers, the quantizer kept: max pooling (ATen's
``quantized/cpu/qpool.cpp``, which ``max_pool2d`` runs on a quantized input: the window's
largest integer, per tensor only, channels-last in and out when the input is, ATen's own
argument checks and messages; ``max_pool2d``, CompositeImplicitAutograd, sends quantized inputs
here as ATen's does) and reflection padding (ATen's ``ReflectionPad.cpp``, which a
reflect-padded quantized convolution runs)."""
from ..._core import dtype as _dt
from ..._core.device import channels_last
from ..._core.quantizer import per_tensor_affine
from ..._ops.overload import ops
from ..registration import register
from .affine import _suggest_channels_last, int_alias

_aten = ops.aten


def _output_size(size, k, s, p, d, ceil_mode):
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:  # (the last window starts in the input)
        out -= 1
    return out


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
    if self._quantizer.qscheme is not per_tensor_affine:
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but "
                           "got false.  (Could this error message be improved?  If so, please "
                           "report an enhancement request to PyTorch.)")
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
    oh = _output_size(h, kh, sh, ph, dh, ceil_mode)
    ow = _output_size(w, kw, sw, pw, dw, ceil_mode)
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


def reflection_pad2d(self, padding):
    """The dense op on the integers, the quantizer kept (per tensor only)."""
    if self._quantizer.qscheme is not per_tensor_affine:
        raise RuntimeError("Only per tensor quantization is supported")
    return _aten._make_per_tensor_quantized_tensor.default(
        _aten.reflection_pad2d.default(int_alias(self), padding), self.q_scale(),
        self.q_zero_point())


register("reflection_pad2d", "QuantizedCPU", reflection_pad2d)
register("quantized_max_pool2d", "QuantizedCPU", quantized_max_pool2d)
