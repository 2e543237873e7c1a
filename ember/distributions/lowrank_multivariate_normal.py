"""PyTorch's module path ``torch.distributions.lowrank_multivariate_normal``:
LowRankMultivariateNormal (defined in ``multivariate.py``)."""
from .multivariate import LowRankMultivariateNormal

__all__ = ["LowRankMultivariateNormal"]
