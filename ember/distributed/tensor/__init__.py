"""PyTorch's ``torch.distributed.tensor``: ``DTensor`` (a tensor laid out over a
``DeviceMesh`` by ``Shard``/``Replicate``/``Partial`` placements), ``distribute_tensor``,
``distribute_module`` and the DTensor factories."""
from . import _ops  # noqa: F401  (registers the ops' sharding strategies)
from ._api import (DTensor, distribute_module, distribute_tensor, empty, full, ones, rand,
                   randn, zeros)
from .placement_types import Partial, Placement, Replicate, Shard
from ..device_mesh import DeviceMesh, init_device_mesh

DTensor.__module__ = "ember.distributed.tensor"

__all__ = ["DeviceMesh", "init_device_mesh", "DTensor", "distribute_tensor", "distribute_module",
           "Shard", "Replicate", "Partial", "Placement", "ones", "empty", "full", "rand", "randn",
           "zeros"]
