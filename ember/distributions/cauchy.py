"""PyTorch's module path ``torch.distributions.cauchy``: Cauchy (defined in ``continuous.py``)."""
from .continuous import Cauchy

__all__ = ["Cauchy"]
