"""PyTorch's module path ``torch.distributions.bernoulli``: Bernoulli
(defined in ``discrete.py``)."""
from .discrete import Bernoulli

__all__ = ["Bernoulli"]
