"""PyTorch's module path ``torch.distributions.multivariate_normal``: MultivariateNormal
(defined in ``multivariate.py``)."""
from .multivariate import MultivariateNormal

__all__ = ["MultivariateNormal"]
