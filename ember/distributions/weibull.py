"""PyTorch's module path ``torch.distributions.weibull``: Weibull (defined in ``continuous.py``)."""
from .continuous import Weibull

__all__ = ["Weibull"]
