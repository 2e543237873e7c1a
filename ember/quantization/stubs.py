"""``torch.quantization.stubs``: ``ember.ao.quantization.stubs`` under its legacy path."""
from ..ao.quantization.stubs import *  # noqa: F401,F403
