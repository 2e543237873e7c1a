"""``torch.distributed._tensor``: DTensor's old import path, kept (as PyTorch keeps it) as an
alias of ``ember.distributed.tensor``: the same objects, and its submodules ``_utils``,
``experimental`` and ``device_mesh`` registered under this package too."""
import sys
from importlib import import_module

for _submodule in ("_utils", "experimental", "device_mesh"):
    sys.modules[f"{__name__}.{_submodule}"] = import_module(
        f"ember.distributed.tensor.{_submodule}")

from ..tensor import (DeviceMesh, DTensor, Partial, Placement, Replicate, Shard,  # noqa: E402
                      distribute_module, distribute_tensor, empty, full, init_device_mesh, ones,
                      rand, randn, zeros)

__all__ = ["DeviceMesh", "DTensor", "Partial", "Placement", "Replicate", "Shard",
           "distribute_module", "distribute_tensor", "empty", "full", "init_device_mesh", "ones",
           "rand", "randn", "zeros"]
