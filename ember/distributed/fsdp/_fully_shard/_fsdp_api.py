"""The policies ``fully_shard`` takes: ``MixedPrecisionPolicy`` (the dtypes of the unsharded
parameters, of the gradient reduction and of the forward outputs) and ``OffloadPolicy`` /
``CPUOffloadPolicy`` (where the sharded parameters, gradients and optimizer states live)."""
from dataclasses import dataclass

__all__ = ["MixedPrecisionPolicy", "OffloadPolicy", "CPUOffloadPolicy"]


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """FSDP's module-level mixed precision.

    - ``param_dtype``: the dtype of the unsharded parameters, hence of the all-gather and of
      forward/backward compute (``None``: the original dtype). The optimizer steps the sharded
      parameters in their original dtype.
    - ``reduce_dtype``: the dtype of the gradient reduction (``None`` with a ``param_dtype``:
      the compute dtype); gradients accumulated without synchronization use it too.
    - ``output_dtype``: the dtype floating-point forward outputs are cast to.
    - ``cast_forward_inputs``: whether floating-point forward inputs are cast to
      ``param_dtype``.
    """

    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    """No offloading (the default ``offload_policy``)."""


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """Sharded parameters, gradients and optimizer states live on the CPU: the sharded
    parameters are copied to the mesh's device before the all-gather, the sharded gradients
    back to the CPU after the reduce-scatter, and the optimizer steps on the CPU. With
    ``pin_memory`` the CPU copies are pinned (which needs an accelerator)."""

    pin_memory: bool = True
