"""``torch.ao.nn.intrinsic.quantized``: fused quantized modules (ember has ``LinearReLU`` and
``ConvReLU1d``/``2d``/``3d``: the static quantized Linear and convolutions whose outputs stop at
the zero point, ``quantized::linear_relu`` and ``quantized::conv{1,2,3}d_relu``)."""
import ember
from .....nn.utils.fusion import fuse_conv_bn_weights
from ...quantized import Conv1d as _QuantizedConv1d
from ...quantized import Conv2d as _QuantizedConv2d
from ...quantized import Conv3d as _QuantizedConv3d
from ...quantized import Linear as _QuantizedLinear
from .. import ConvReLU1d as _FusedConvReLU1d
from .. import ConvReLU2d as _FusedConvReLU2d
from .. import ConvReLU3d as _FusedConvReLU3d
from .. import LinearReLU as _FusedLinearReLU
from .. import qat as _nniqat

__all__ = ["ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU"]


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


class _ConvReLUNd:
    """A quantized convolution then ReLU, in one op (``quantized::conv{n}d_relu``)."""
    _RELU = True

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From an observed ConvReLU or a QAT ConvReLU or ConvBnReLU (whose batch norm folds
        into the weight and bias)."""
        if type(mod) is getattr(_nniqat, f"ConvBnReLU{cls._N}d"):
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


class ConvReLU1d(_ConvReLUNd, _QuantizedConv1d):
    __doc__ = _ConvReLUNd.__doc__
    _FLOAT_MODULE = _FusedConvReLU1d


class ConvReLU2d(_ConvReLUNd, _QuantizedConv2d):
    __doc__ = _ConvReLUNd.__doc__
    _FLOAT_MODULE = _FusedConvReLU2d


class ConvReLU3d(_ConvReLUNd, _QuantizedConv3d):
    __doc__ = _ConvReLUNd.__doc__
    _FLOAT_MODULE = _FusedConvReLU3d
