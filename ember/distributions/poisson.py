"""PyTorch's module path ``torch.distributions.poisson``: Poisson (defined in ``discrete.py``)."""
from .discrete import Poisson

__all__ = ["Poisson"]
