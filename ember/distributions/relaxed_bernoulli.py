"""PyTorch's module path ``torch.distributions.relaxed_bernoulli``:
LogitRelaxedBernoulli, RelaxedBernoulli (defined in ``discrete.py``)."""
from .discrete import LogitRelaxedBernoulli, RelaxedBernoulli

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]
