"""The post-local-SGD DDP communication hook (PyTorch's
``torch.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook``): gradients are all-reduced
over the whole group for the first ``start_localSGD_iter`` iterations, then only within a
subgroup (by default each machine's ranks), a model averager syncing the parameters globally."""
import logging

import ember
import ember.distributed as dist

from . import default_hooks as default

logger = logging.getLogger(__name__)

__all__ = ["PostLocalSGDState", "post_localSGD_hook"]


class PostLocalSGDState:
    """The groups, the iteration from which the subgroup is used, whether gradients are still
    all-reduced in the subgroup after it (``post_local_gradient_allreduce``), and the count."""

    __slots__ = ["process_group", "subgroup", "start_localSGD_iter",
                 "post_local_gradient_allreduce", "iter"]

    def __init__(self, process_group, subgroup, start_localSGD_iter,
                 post_local_gradient_allreduce=True):
        logger.info("Local SGD will be started after %s iterations", start_localSGD_iter)
        self.process_group = process_group
        self.subgroup = subgroup
        self.start_localSGD_iter = start_localSGD_iter
        self.post_local_gradient_allreduce = post_local_gradient_allreduce
        self.iter = 0

    def maybe_increase_iter(self, bucket):
        # bucket 0 is the last one all-reduced in an iteration
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_localSGD_iter:
            logger.info("Start to apply local SGD after %s iterations.", self.iter)


def post_localSGD_hook(state, bucket):
    """All-reduce ``bucket`` over ``state.process_group`` (or the world) until
    ``start_localSGD_iter``, then over ``state.subgroup`` (made by ``new_subgroups()`` when
    None), or not at all without ``post_local_gradient_allreduce``."""
    global_group_to_use = (state.process_group if state.process_group is not None
                           else dist.group.WORLD)
    input_tensor = bucket.buffer()
    if state.iter < state.start_localSGD_iter:
        state.maybe_increase_iter(bucket)
        return default._allreduce_fut(global_group_to_use, input_tensor)
    if not state.post_local_gradient_allreduce:
        fut = ember.futures.Future()
        fut.set_result(input_tensor)
        return fut
    if state.subgroup is None:
        state.subgroup, _ = dist.new_subgroups()
    return default._allreduce_fut(state.subgroup, input_tensor)
