"""``torch.nn.intrinsic``: ``ember.ao.nn.intrinsic`` (and its ``qat`` and ``quantized``) under
the legacy path."""
from ...ao.nn.intrinsic import *  # noqa: F401,F403
from ...ao.nn.intrinsic import __all__, _FusedModule  # noqa: F401
from . import qat, quantized  # noqa: F401
