"""PyTorch's module path ``torch.distributions.half_normal``: HalfNormal
(defined in ``continuous.py``)."""
from .continuous import HalfNormal

__all__ = ["HalfNormal"]
