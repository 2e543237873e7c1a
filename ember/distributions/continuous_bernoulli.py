"""PyTorch's module path ``torch.distributions.continuous_bernoulli``: ContinuousBernoulli
(defined in ``continuous.py``)."""
from .continuous import ContinuousBernoulli

__all__ = ["ContinuousBernoulli"]
