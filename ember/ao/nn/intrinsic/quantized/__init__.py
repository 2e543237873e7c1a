"""``torch.ao.nn.intrinsic.quantized``: fused quantized modules (ember has ``LinearReLU`` and
``ConvReLU2d``: the static quantized Linear and Conv2d whose outputs stop at the zero point,
``quantized::linear_relu`` and ``quantized::conv2d_relu``)."""
import ember
from .....nn.utils.fusion import fuse_conv_bn_weights
from ...quantized import Conv2d as _QuantizedConv2d
from ...quantized import Linear as _QuantizedLinear
from .. import ConvReLU2d as _FusedConvReLU2d
from .. import LinearReLU as _FusedLinearReLU
from .. import qat as _nniqat

__all__ = ["ConvReLU2d", "LinearReLU"]


class LinearReLU(_QuantizedLinear):
    """A quantized Linear then ReLU, in one op."""
    _FLOAT_MODULE = _FusedLinearReLU

    def __init__(self, in_features, out_features, bias=True, dtype=ember.qint8):
        super().__init__(in_features, out_features, bias, dtype)

    def forward(self, x):
        return ember.ops.quantized.linear_relu(x, self._packed_params._packed_params, self.scale,
                                               self.zero_point)

    def _get_name(self):
        return "QuantizedLinearReLU"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return super().from_float(mod, use_precomputed_fake_quant)

    @classmethod
    def from_reference(cls, ref_linear_relu, output_scale, output_zero_point):
        return super().from_reference(ref_linear_relu[0], output_scale, output_zero_point)


class ConvReLU2d(_QuantizedConv2d):
    """A quantized Conv2d then ReLU, in one op."""
    _FLOAT_MODULE = _FusedConvReLU2d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride,
                         padding=padding, dilation=dilation, groups=groups, bias=bias,
                         padding_mode=padding_mode, device=device, dtype=dtype)

    def forward(self, input):
        return ember.ops.quantized.conv2d_relu(self._padded(input), self._packed_params,
                                               self.scale, self.zero_point)

    def _get_name(self):
        return "QuantizedConvReLU2d"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From an observed ConvReLU2d or a QAT ConvReLU2d or ConvBnReLU2d (whose batch norm
        folds into the weight and bias)."""
        if type(mod) is _nniqat.ConvBnReLU2d:
            if mod.bn.running_var is None or mod.bn.running_mean is None:
                raise AssertionError("mod.bn.running_var and mod.bn.running_mean must not be "
                                     "None")
            mod.weight, mod.bias = fuse_conv_bn_weights(
                mod.weight, mod.bias, mod.bn.running_mean, mod.bn.running_var, mod.bn.eps,
                mod.bn.weight, mod.bn.bias)
        return super().from_float(mod, use_precomputed_fake_quant)

    @classmethod
    def from_reference(cls, ref_qconv, output_scale, output_zero_point):
        return super().from_reference(ref_qconv[0], output_scale, output_zero_point)
