"""PyTorch's module path ``torch.distributions.kumaraswamy``: Kumaraswamy
(defined in ``continuous.py``)."""
from .continuous import Kumaraswamy

__all__ = ["Kumaraswamy"]
