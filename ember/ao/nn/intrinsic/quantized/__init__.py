"""``torch.ao.nn.intrinsic.quantized``: fused quantized modules (ember has ``LinearReLU``: the
static quantized Linear whose outputs stop at the zero point, ``quantized::linear_relu``)."""
import ember
from ...quantized import Linear as _QuantizedLinear
from .. import LinearReLU as _FusedLinearReLU

__all__ = ["LinearReLU"]


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
