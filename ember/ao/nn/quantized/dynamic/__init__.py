"""``torch.ao.nn.quantized.dynamic``: modules with int8 weights whose float inputs are quantized
at each call (ember has ``Linear``)."""
from .modules import Linear  # noqa: F401
from . import modules  # noqa: F401
