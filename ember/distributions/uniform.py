"""PyTorch's module path ``torch.distributions.uniform``: Uniform (defined in ``continuous.py``)."""
from .continuous import Uniform

__all__ = ["Uniform"]
