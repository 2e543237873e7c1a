"""PyTorch's module path ``torch.distributions.multivariate_normal``: MultivariateNormal and
the batched linear algebra helpers PyTorch keeps there (defined in ``multivariate.py``)."""
from . import constraints  # noqa: F401  (what PyTorch's module imports, libraries take from it)
from .distribution import Distribution  # noqa: F401
from .multivariate import (  # noqa: F401  (PyTorch's private helpers, imported by name)
    MultivariateNormal, _batch_mahalanobis, _batch_mv, _precision_to_scale_tril)
from .utils import _standard_normal, lazy_property  # noqa: F401

__all__ = ["MultivariateNormal"]
