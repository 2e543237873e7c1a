"""``torch.quantization.qconfig``: ``ember.ao.quantization.qconfig`` under its legacy path."""
from ..ao.quantization.qconfig import *  # noqa: F401,F403
