"""``torch.quantization.quantization_mappings``: ``ember.ao.quantization.quantization_mappings`` under its legacy path."""
from ..ao.quantization.quantization_mappings import *  # noqa: F401,F403
