"""``torch.nn.qat``: ``ember.ao.nn.qat`` under its legacy path."""
from ...ao.nn.qat import *  # noqa: F401,F403
from ...ao.nn.qat import __all__  # noqa: F401
