"""PyTorch's module path ``torch.distributions.chi2``: Chi2 (defined in ``continuous.py``)."""
from .continuous import Chi2

__all__ = ["Chi2"]
