"""PyTorch's module path ``torch.distributions.half_cauchy``: HalfCauchy
(defined in ``continuous.py``)."""
from .continuous import HalfCauchy

__all__ = ["HalfCauchy"]
