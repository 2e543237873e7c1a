"""``torch.nn.quantized.dynamic``: ``ember.ao.nn.quantized.dynamic`` under its legacy path."""
from ....ao.nn.quantized.dynamic import Linear  # noqa: F401
