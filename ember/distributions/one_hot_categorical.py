"""PyTorch's module path ``torch.distributions.one_hot_categorical``:
OneHotCategorical, OneHotCategoricalStraightThrough (defined in ``discrete.py``)."""
from .discrete import OneHotCategorical, OneHotCategoricalStraightThrough

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]
