"""PyTorch's ``torch.distributed.fsdp``: FSDP2's ``fully_shard`` (``_fully_shard/``), which
shards each parameter as a DTensor over the data-parallel mesh, and FSDP1's
``FullyShardedDataParallel`` wrapper (``fully_sharded_data_parallel.py``), which flattens each
wrapped unit's parameters into one sharded ``FlatParameter`` (``_flat_param.py``)."""
from . import _flat_param
from ._fully_shard import (CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy,
                           UnshardHandle, fully_shard, register_fsdp_forward_method)
from .fully_sharded_data_parallel import (BackwardPrefetch, CPUOffload,
                                          FullOptimStateDictConfig, FullStateDictConfig,
                                          FullyShardedDataParallel, LocalOptimStateDictConfig,
                                          LocalStateDictConfig, MixedPrecision,
                                          OptimStateDictConfig, OptimStateKeyType,
                                          ShardedOptimStateDictConfig, ShardedStateDictConfig,
                                          ShardingStrategy, StateDictConfig, StateDictSettings,
                                          StateDictType)

__all__ = ["BackwardPrefetch", "CPUOffload", "FullOptimStateDictConfig", "FullStateDictConfig",
           "FullyShardedDataParallel", "LocalOptimStateDictConfig", "LocalStateDictConfig",
           "MixedPrecision", "OptimStateDictConfig", "OptimStateKeyType",
           "ShardedOptimStateDictConfig", "ShardedStateDictConfig", "ShardingStrategy",
           "StateDictConfig", "StateDictSettings", "StateDictType",
           "CPUOffloadPolicy", "FSDPModule", "fully_shard", "MixedPrecisionPolicy",
           "OffloadPolicy", "register_fsdp_forward_method", "UnshardHandle"]

FlatParameter = _flat_param.FlatParameter  # importable from here as in PyTorch (not in __all__)

# FSDP2's public names' module, as PyTorch sets it
for _obj in (CPUOffloadPolicy, FSDPModule, fully_shard, MixedPrecisionPolicy, OffloadPolicy,
             register_fsdp_forward_method, UnshardHandle):
    _obj.__module__ = "ember.distributed.fsdp"
del _obj
