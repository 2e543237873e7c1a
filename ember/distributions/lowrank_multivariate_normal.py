"""PyTorch's module path ``torch.distributions.lowrank_multivariate_normal``:
LowRankMultivariateNormal and the low-rank (capacitance/Woodbury) helpers PyTorch keeps there
(defined in ``multivariate.py``)."""
from .multivariate import (  # noqa: F401  (PyTorch's private helpers, imported by name)
    LowRankMultivariateNormal, _batch_capacitance_tril, _batch_lowrank_logdet,
    _batch_lowrank_mahalanobis, _batch_mahalanobis, _batch_mv)

__all__ = ["LowRankMultivariateNormal"]
