"""PyTorch's module path ``torch.distributions.pareto``: Pareto (defined in ``continuous.py``)."""
from .continuous import Pareto

__all__ = ["Pareto"]
