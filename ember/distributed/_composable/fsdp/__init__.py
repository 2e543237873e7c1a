"""``torch.distributed._composable.fsdp``: FSDP2's public names, where PyTorch first put them
(``from torch.distributed._composable.fsdp import fully_shard``)."""
from ...fsdp import (CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy,
                     UnshardHandle, fully_shard, register_fsdp_forward_method)

__all__ = ["CPUOffloadPolicy", "FSDPModule", "fully_shard", "MixedPrecisionPolicy",
           "OffloadPolicy", "register_fsdp_forward_method", "UnshardHandle"]
