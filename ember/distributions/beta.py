"""PyTorch's module path ``torch.distributions.beta``: Beta (defined in ``continuous.py``)."""
from .continuous import Beta

__all__ = ["Beta"]
