"""The static quantized modules (``torch.ao.nn.quantized.modules``): ``Quantize`` and
``DeQuantize`` (what ``convert`` makes of the stubs), ``Linear``, ``Conv1d``/``2d``/``3d`` and
``ConvTranspose1d``/``2d``/``3d``."""
import ember
from ..... import nn
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "DeQuantize", "Linear", "Quantize"]


class Quantize(nn.Module):
    """Quantizes its float input per tensor with fixed ``scale``, ``zero_point`` and
    ``dtype`` (buffers, so they travel in state dicts)."""

    def __init__(self, scale, zero_point, dtype, factory_kwargs=None):
        factory_kwargs = dict(factory_kwargs or {})
        super().__init__()
        self.register_buffer("scale", ember.tensor([scale], **factory_kwargs))
        self.register_buffer("zero_point", ember.tensor(
            [zero_point], dtype=ember.long,
            **{k: v for k, v in factory_kwargs.items() if k != "dtype"}))
        self.dtype = dtype

    def forward(self, X):
        return ember.quantize_per_tensor(X, float(self.scale), int(self.zero_point), self.dtype)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        if not hasattr(mod, "activation_post_process"):
            raise AssertionError(f"Module {type(mod).__name__} must have "
                                 f"activation_post_process attribute")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return Quantize(scale.float().item(), zero_point.long().item(),
                        mod.activation_post_process.dtype)

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(nn.Module):
    """Dequantizes its quantized input."""

    def forward(self, Xq):
        return Xq.dequantize()

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return DeQuantize()
