"""``torch.nn.intrinsic.quantized``: ``ember.ao.nn.intrinsic.quantized`` under its legacy path."""
from ....ao.nn.intrinsic.quantized import *  # noqa: F401,F403
from ....ao.nn.intrinsic.quantized import __all__  # noqa: F401
