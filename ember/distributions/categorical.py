"""PyTorch's module path ``torch.distributions.categorical``: Categorical
(defined in ``discrete.py``)."""
from .discrete import Categorical

__all__ = ["Categorical"]
