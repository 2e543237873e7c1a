"""``torch.nn.quantized.functional``: ``ember.ao.nn.quantized.functional`` under the legacy
path."""
from ...ao.nn.quantized.functional import *  # noqa: F401,F403
