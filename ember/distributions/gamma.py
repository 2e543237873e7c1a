"""PyTorch's module path ``torch.distributions.gamma``: Gamma (defined in ``continuous.py``)."""
from .continuous import Gamma

__all__ = ["Gamma"]
