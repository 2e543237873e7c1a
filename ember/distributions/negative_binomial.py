"""PyTorch's module path ``torch.distributions.negative_binomial``: NegativeBinomial
(defined in ``discrete.py``)."""
from .discrete import NegativeBinomial

__all__ = ["NegativeBinomial"]
