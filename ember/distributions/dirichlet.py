"""PyTorch's module path ``torch.distributions.dirichlet``: Dirichlet
(defined in ``multivariate.py``)."""
from .multivariate import Dirichlet

__all__ = ["Dirichlet"]
