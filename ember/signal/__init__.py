"""``ember.signal``: PyTorch's ``torch.signal`` (the window functions of
:mod:`ember.signal.windows`)."""
from . import windows  # noqa: F401

__all__ = ["windows"]
