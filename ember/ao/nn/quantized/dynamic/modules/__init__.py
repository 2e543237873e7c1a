"""The dynamic quantized modules (``torch.ao.nn.quantized.dynamic.modules``)."""
from .linear import Linear  # noqa: F401

__all__ = ["Linear"]
