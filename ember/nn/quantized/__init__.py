"""``torch.nn.quantized``: ``ember.ao.nn.quantized`` (the dynamic quantized Linear) under the
legacy path."""
from . import dynamic  # noqa: F401
