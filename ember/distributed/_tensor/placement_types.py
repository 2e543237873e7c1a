"""``torch.distributed._tensor.placement_types``: the old path of the placements and of
``DTensorSpec``/``TensorMeta``."""
from ..tensor._dtensor_spec import DTensorSpec, TensorMeta
from ..tensor.placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensorSpec", "TensorMeta", "Placement", "Shard", "Replicate", "Partial"]
