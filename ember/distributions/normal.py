"""PyTorch's module path ``torch.distributions.normal``: Normal (defined in ``continuous.py``)."""
from .continuous import Normal

__all__ = ["Normal"]
