"""``torch.distributed._tensor.api``: the old path of ``ember.distributed.tensor._api``'s
public names."""
from ..tensor._api import (DTensor, distribute_module, distribute_tensor, empty, full, ones,
                           rand, randn, zeros)

__all__ = ["DTensor", "distribute_tensor", "distribute_module", "ones", "empty", "full", "rand",
           "randn", "zeros"]
