"""PyTorch's module path ``torch.distributions.fishersnedecor``: FisherSnedecor
(defined in ``continuous.py``)."""
from .continuous import FisherSnedecor

__all__ = ["FisherSnedecor"]
