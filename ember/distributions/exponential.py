"""PyTorch's module path ``torch.distributions.exponential``: Exponential
(defined in ``continuous.py``)."""
from .continuous import Exponential

__all__ = ["Exponential"]
