"""PyTorch's module path ``torch.distributions.multivariate_normal``: MultivariateNormal and
the batched linear algebra helpers PyTorch keeps there (defined in ``multivariate.py``)."""
from .multivariate import (  # noqa: F401  (PyTorch's private helpers, imported by name)
    MultivariateNormal, _batch_mahalanobis, _batch_mv, _precision_to_scale_tril)

__all__ = ["MultivariateNormal"]
