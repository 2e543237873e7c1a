"""``torch.ao.nn``: quantized counterparts of ``torch.nn`` modules (ember has the dynamic
quantized Linear, ``ao.nn.quantized.dynamic``)."""
from . import quantized  # noqa: F401
