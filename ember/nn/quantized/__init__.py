"""``torch.nn.quantized``: ``ember.ao.nn.quantized`` (the static quantized modules, the
dynamic ones and the functional forms) under the legacy path."""
from ...ao.nn.quantized import *  # noqa: F401,F403
from ...ao.nn.quantized import __all__  # noqa: F401
from . import dynamic  # noqa: F401
from . import functional  # noqa: F401
