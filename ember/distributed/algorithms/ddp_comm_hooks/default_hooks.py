"""DDP communication hooks (``torch.distributed.algorithms.ddp_comm_hooks.default_hooks``):
``hook(state, bucket) -> Future[Tensor]`` replaces the all-reduce of a gradient bucket."""
import ember
import ember.distributed as dist

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]


def _allreduce_fut(process_group, tensor):
    """Average ``tensor`` over the group, asynchronously."""
    group_to_use = process_group if process_group is not None else dist.group.WORLD
    tensor.div_(group_to_use.size())
    return (dist.all_reduce(tensor, group=group_to_use, async_op=True)
            .get_future().then(lambda fut: fut.value()[0]))


def allreduce_hook(process_group, bucket):
    """What DDP does without a hook: all-reduce the bucket and divide by the world size."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    group_to_use = process_group if process_group is not None else dist.group.WORLD
    world_size = group_to_use.size()
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(world_size)
    fut = dist.all_reduce(compressed, group=group_to_use, async_op=True).get_future()

    def decompress(fut):
        # copy back into the bucket: that is where DDP reads the averaged gradients
        buffer.copy_(fut.value()[0])
        return buffer

    return fut.then(decompress)


def fp16_compress_hook(process_group, bucket):
    """All-reduce the bucket in float16 (half the bytes), then back to the bucket's dtype."""
    return _compress_hook(ember.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """All-reduce the bucket in bfloat16."""
    return _compress_hook(ember.bfloat16, process_group, bucket)
