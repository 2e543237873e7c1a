"""PyTorch's module path ``torch.distributions.studentT``: StudentT
(defined in ``continuous.py``)."""
from .continuous import StudentT

__all__ = ["StudentT"]
