"""``torch.ao.nn.quantized``: quantized modules: the static ones (``Quantize``, ``DeQuantize``,
``Linear``: quantized inputs and outputs) and the dynamic ones (``dynamic``: float inputs
quantized at each call). ember has no quantized convolutions, norms or activations."""
from .modules import DeQuantize, Linear, Quantize  # noqa: F401
from . import modules  # noqa: F401
from . import dynamic  # noqa: F401

__all__ = ["DeQuantize", "Linear", "Quantize"]
