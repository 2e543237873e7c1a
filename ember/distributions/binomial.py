"""PyTorch's module path ``torch.distributions.binomial``: Binomial (defined in ``discrete.py``)."""
from .discrete import Binomial

__all__ = ["Binomial"]
