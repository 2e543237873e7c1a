"""Meta kernels of the fake-quantization ops (CPU: ``quantized/fake_quant.py``): after the
checks that need no values (``rules/fake_quant.py``), an output laid out as the input
(``empty_like``'s preserve format) and a bool mask; the learnable backwards' gradients shaped as
the input, the scale and the zero point."""
from ..._core import dtype as D
from ..._core.device import preserve_format
from ..._ops.overload import ops
from ..registration import register
from ..rules import fake_quant as rules

_aten = ops.aten


def _output_and_mask(self):
    return (_aten.empty_like.default(self, memory_format=preserve_format),
            _aten.empty_like.default(self, dtype=D.bool_, memory_format=preserve_format))


def meta_fake_quantize_per_tensor_affine_cachemask(self, scale, zero_point, quant_min,
                                                    quant_max):
    rules.check_per_tensor(self, zero_point, quant_min, quant_max)
    return _output_and_mask(self)


def meta_fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
        self, scale, zero_point, fake_quant_enabled, quant_min, quant_max):
    rules.check_qrange(quant_min, quant_max)
    rules.check_input_dtype(self, "fake_quantize_tensor_cachemask_kernel_type_handling")
    return _output_and_mask(self)


def meta_fake_quantize_per_channel_affine_cachemask(self, scale, zero_point, axis, quant_min,
                                                     quant_max):
    rules.check_per_channel(self, scale, zero_point, axis, quant_min, quant_max)
    rules.check_axis(self, axis)
    rules.check_per_channel_kernel(self, scale)
    return _output_and_mask(self)


def meta_fake_quantize_learnable(self, scale, zero_point, *args):
    return _aten.empty_like.default(self, memory_format=preserve_format)


def meta_fake_quantize_learnable_per_tensor_affine_backward(dY, X, scale, zero_point, quant_min,
                                                            quant_max, grad_factor=1.0):
    rules.check_learnable_dtypes(dY, X, scale, zero_point, "_")
    one = _aten.empty.memory_format([1], dtype=D.float32, device=X.device)
    return _aten.empty_like.default(X, memory_format=preserve_format), one, one.clone()


def meta_fake_quantize_learnable_per_channel_affine_backward(
        dY, X, scale, zero_point, axis, quant_min, quant_max, grad_factor=1.0):
    rules.check_learnable_dtypes(dY, X, scale, zero_point, "_")
    rules.check_axis(X, axis, inclusive=False)
    channels = [] if X.dim() == 1 else [X._size[axis]]  # (a sum over no dims sums all)
    per_channel = _aten.empty.memory_format(channels, dtype=D.float32, device=X.device)
    return (_aten.empty_like.default(X, memory_format=preserve_format), per_channel,
            per_channel.clone())


def meta_fused_moving_avg_obs_fq_helper(self, observer_on, fake_quant_on, running_min,
                                        running_max, scale, zero_point, averaging_const,
                                        quant_min, quant_max, ch_axis, per_row_fake_quant=False,
                                        symmetric_quant=False):
    return _output_and_mask(self)


for _name, _fn in (
        ("fake_quantize_per_tensor_affine_cachemask",
         meta_fake_quantize_per_tensor_affine_cachemask),
        ("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
         meta_fake_quantize_per_tensor_affine_cachemask_tensor_qparams),
        ("fake_quantize_per_channel_affine_cachemask",
         meta_fake_quantize_per_channel_affine_cachemask),
        ("_fake_quantize_learnable_per_tensor_affine", meta_fake_quantize_learnable),
        ("_fake_quantize_learnable_per_channel_affine", meta_fake_quantize_learnable),
        ("_fake_quantize_learnable_per_tensor_affine_backward",
         meta_fake_quantize_learnable_per_tensor_affine_backward),
        ("_fake_quantize_learnable_per_channel_affine_backward",
         meta_fake_quantize_learnable_per_channel_affine_backward),
        ("_fused_moving_avg_obs_fq_helper", meta_fused_moving_avg_obs_fq_helper)):
    register(_name, "Meta", _fn)
