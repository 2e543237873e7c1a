"""``ShardedGradScaler`` (PyTorch's ``torch/distributed/fsdp/sharded_grad_scaler.py``): the
``GradScaler`` for sharded training. Each rank holds only its gradient shards, so whether an
inf/NaN appeared is all-reduced over the process group in ``unscale_``, and every rank skips
(or takes) the same optimizer step. CPU tensors are allowed, and scaled outputs keep their
dtype (an FSDP model's bfloat16/float16 loss stays low precision)."""
from collections import abc

import ember
import ember.distributed as dist
from ...amp.grad_scaler import GradScaler, _MultiDeviceReplicator

__all__ = ["ShardedGradScaler"]


def _is_supported_device(tensor):
    return tensor.is_cuda or tensor.device.type in ("xla", "cpu", "hpu", "mtia", "xpu")


class _GeneralMultiDeviceReplicator(_MultiDeviceReplicator):
    """``_MultiDeviceReplicator`` that also serves the CPU."""

    def __init__(self, master_tensor):
        if not _is_supported_device(master_tensor):
            raise AssertionError(f"Expected supported device, got {master_tensor.device}")
        self.master = master_tensor
        self._per_device_tensors = {}


class ShardedGradScaler(GradScaler):
    """``GradScaler`` whose inf/NaN check is agreed over ``process_group``."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, backoff_factor=0.5,
                 growth_factor=2.0, growth_interval=2000, enabled=True,
                 process_group=dist.group.WORLD):
        super().__init__(device, init_scale=init_scale, backoff_factor=backoff_factor,
                         growth_factor=growth_factor, growth_interval=growth_interval,
                         enabled=enabled)
        if self._enabled:
            self.process_group = process_group

    def scale(self, outputs):
        if not self._enabled:
            return outputs
        if isinstance(outputs, ember.Tensor):
            if not _is_supported_device(outputs):
                raise AssertionError(f"Expected supported device, got {outputs.device}")
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            scaled_output = outputs * self._scale.to(device=outputs.device, non_blocking=True)
            return scaled_output.type(outputs.dtype)

        stash = []

        def apply_scale(val):
            if isinstance(val, ember.Tensor):
                if not _is_supported_device(val):
                    raise AssertionError(f"Expected supported device, got {val.device}")
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_GeneralMultiDeviceReplicator(self._scale))
                return (val * stash[0].get(val.device)).type(val.dtype)
            if isinstance(val, abc.Iterable):
                iterator = map(apply_scale, val)
                return type(val)(iterator) if isinstance(val, (list, tuple)) else iterator
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    _replicator = _GeneralMultiDeviceReplicator
    _found_inf_shape = (1,)
    _allow_fp16 = True

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16=True):
        found = super()._unscale_grads_(optimizer, inv_scale, found_inf, allow_fp16)
        # a rank without gradients (all its shards empty) still takes part in the all-reduce
        return found or {self._scale.device: found_inf.to(self._scale.device, copy=True)}

    def _agree_on_found_inf(self, found_inf_per_device):
        works = [dist.all_reduce(f, async_op=True, group=self.process_group)
                 for f in found_inf_per_device.values()]
        for work in works:
            work.wait()
