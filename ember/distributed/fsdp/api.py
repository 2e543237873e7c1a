"""The configuration classes of ``FullyShardedDataParallel`` (FSDP1), PyTorch's
``torch/distributed/fsdp/api.py``: sharding strategies, prefetching, mixed precision, CPU
offloading and the state-dict types with their configurations (same fields and defaults)."""
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum, auto

from ...nn.modules.batchnorm import _BatchNorm

__all__ = [
    "ShardingStrategy",
    "BackwardPrefetch",
    "MixedPrecision",
    "CPUOffload",
    "StateDictType",
    "StateDictConfig",
    "FullStateDictConfig",
    "LocalStateDictConfig",
    "ShardedStateDictConfig",
    "OptimStateDictConfig",
    "FullOptimStateDictConfig",
    "LocalOptimStateDictConfig",
    "ShardedOptimStateDictConfig",
    "StateDictSettings",
]


class ShardingStrategy(Enum):
    """What FSDP shards: ``FULL_SHARD`` parameters, gradients and optimizer states (parameters
    gathered for forward and again for backward); ``SHARD_GRAD_OP`` keeps the parameters
    gathered from forward to the end of backward; ``NO_SHARD`` replicates like DDP (gradients
    all-reduced); ``HYBRID_SHARD`` / ``_HYBRID_SHARD_ZERO2`` apply ``FULL_SHARD`` /
    ``SHARD_GRAD_OP`` within a node and replicate across nodes."""

    FULL_SHARD = auto()
    SHARD_GRAD_OP = auto()
    NO_SHARD = auto()
    HYBRID_SHARD = auto()
    _HYBRID_SHARD_ZERO2 = auto()


class BackwardPrefetch(Enum):
    """When backward issues the next unit's all-gather: before (``BACKWARD_PRE``) or after
    (``BACKWARD_POST``) the current unit's gradient computation."""

    BACKWARD_PRE = auto()
    BACKWARD_POST = auto()


@dataclass
class MixedPrecision:
    """FSDP-native mixed precision: ``param_dtype`` for the gathered parameters (forward and
    backward computation), ``reduce_dtype`` for the gradient reduction (``param_dtype`` when
    None), ``buffer_dtype`` for the buffers; the sharded parameters stay in full precision."""

    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True
    _module_classes_to_ignore: Sequence = (_BatchNorm,)


@dataclass
class CPUOffload:
    """``offload_params=True`` keeps the sharded parameters and their gradients on the CPU
    (the optimizer step runs there)."""

    offload_params: bool = False


class StateDictType(Enum):
    """Which ``state_dict`` FSDP modules return and load: full unflattened tensors, each
    rank's flat shard, or per-parameter shards."""

    FULL_STATE_DICT = auto()
    LOCAL_STATE_DICT = auto()
    SHARDED_STATE_DICT = auto()


@dataclass
class StateDictConfig:
    offload_to_cpu: bool = False


@dataclass
class FullStateDictConfig(StateDictConfig):
    rank0_only: bool = False


@dataclass
class LocalStateDictConfig(StateDictConfig):
    pass


@dataclass
class ShardedStateDictConfig(StateDictConfig):
    _use_dtensor: bool = False


@dataclass
class OptimStateDictConfig:
    offload_to_cpu: bool = True


@dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    rank0_only: bool = False


@dataclass
class LocalOptimStateDictConfig(OptimStateDictConfig):
    offload_to_cpu: bool = False


@dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    _use_dtensor: bool = False


@dataclass
class StateDictSettings:
    state_dict_type: StateDictType
    state_dict_config: StateDictConfig
    optim_state_dict_config: OptimStateDictConfig
