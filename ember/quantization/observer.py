"""``torch.quantization.observer``: ``ember.ao.quantization.observer`` under its legacy path."""
from ..ao.quantization.observer import *  # noqa: F401,F403
