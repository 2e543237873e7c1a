"""``ember.amp``: automatic mixed precision.

* :mod:`.autocast_mode`: ``autocast`` and its thread-local state;
* :mod:`.policies`: the Autocast dispatch keys' kernels, one op-policy table per device;
* :mod:`.grad_scaler`: ``GradScaler``, loss scaling for float16 training.
"""
from . import policies as _policies
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available  # noqa: F401
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]

_policies.install()
