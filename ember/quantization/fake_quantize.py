"""``torch.quantization.fake_quantize``: ``ember.ao.quantization.fake_quantize`` under its legacy path."""
from ..ao.quantization.fake_quantize import *  # noqa: F401,F403
