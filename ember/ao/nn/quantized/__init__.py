"""``torch.ao.nn.quantized``: quantized modules: the static ones (``Quantize``, ``DeQuantize``,
``Linear``, ``Conv2d``: quantized inputs and outputs) and the dynamic ones (``dynamic``: float
inputs quantized at each call). ember has no other quantized convolutions, norms or
activations."""
from .modules import Conv2d, DeQuantize, Linear, Quantize  # noqa: F401
from . import modules  # noqa: F401
from . import dynamic  # noqa: F401

__all__ = ["Conv2d", "DeQuantize", "Linear", "Quantize"]
