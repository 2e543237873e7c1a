"""PyTorch's module path ``torch.distributions.relaxed_categorical``:
ExpRelaxedCategorical, RelaxedOneHotCategorical (defined in ``discrete.py``)."""
from .discrete import ExpRelaxedCategorical, RelaxedOneHotCategorical

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]
