"""FSDP2: ``fully_shard`` and its policies (PyTorch's
``torch.distributed.fsdp._fully_shard``)."""
from ._fsdp_api import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy
from ._fully_shard import FSDPModule, UnshardHandle, fully_shard, register_fsdp_forward_method

__all__ = ["CPUOffloadPolicy", "FSDPModule", "fully_shard", "MixedPrecisionPolicy",
           "OffloadPolicy", "register_fsdp_forward_method", "UnshardHandle"]
