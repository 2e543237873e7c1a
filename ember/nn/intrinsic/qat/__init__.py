"""``torch.nn.intrinsic.qat``: ``ember.ao.nn.intrinsic.qat`` under its legacy path."""
from ....ao.nn.intrinsic.qat import *  # noqa: F401,F403
from ....ao.nn.intrinsic.qat import __all__  # noqa: F401
