"""``torch.ao.nn.quantized``: quantized modules: the static ones (``Quantize``, ``DeQuantize``,
``Linear``, ``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d``/``2d``/``3d``: quantized
inputs and outputs), the dynamic ones (``dynamic``: float inputs quantized at each call) and the
functional forms (``functional``). ember has no quantized norms or activation modules;
average pooling, max pooling and means take quantized tensors through the plain ``nn`` modules
and functions, as in PyTorch."""
from .modules import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d,  # noqa: F401
                      ConvTranspose3d, DeQuantize, Linear, Quantize)
from . import modules  # noqa: F401
from . import dynamic  # noqa: F401
from . import functional  # noqa: F401

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "DeQuantize", "Linear", "Quantize"]
