"""PyTorch's module path ``torch.distributions.geometric``: Geometric
(defined in ``discrete.py``)."""
from .discrete import Geometric

__all__ = ["Geometric"]
