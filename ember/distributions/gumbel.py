"""PyTorch's module path ``torch.distributions.gumbel``: Gumbel (defined in ``continuous.py``)."""
from .continuous import Gumbel

__all__ = ["Gumbel"]
