"""``torch.ao.nn.quantized``: quantized modules: the static ones (``Quantize``, ``DeQuantize``,
``Linear``, ``Conv1d``, ``Conv2d``, ``Conv3d``: quantized inputs and outputs) and the dynamic
ones (``dynamic``: float inputs quantized at each call). ember has no transposed quantized
convolutions, norms or activations; average pooling, max pooling and means take quantized
tensors through the plain ``nn`` modules and functions, as in PyTorch."""
from .modules import Conv1d, Conv2d, Conv3d, DeQuantize, Linear, Quantize  # noqa: F401
from . import modules  # noqa: F401
from . import dynamic  # noqa: F401

__all__ = ["Conv1d", "Conv2d", "Conv3d", "DeQuantize", "Linear", "Quantize"]
