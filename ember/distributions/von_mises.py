"""PyTorch's module path ``torch.distributions.von_mises``: VonMises
(defined in ``continuous.py``)."""
from .continuous import VonMises

__all__ = ["VonMises"]
