"""PyTorch's module path ``torch.distributions.multinomial``: Multinomial
(defined in ``discrete.py``)."""
from .discrete import Multinomial

__all__ = ["Multinomial"]
