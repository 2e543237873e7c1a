"""A parameter group's two collectives. ``foreach_all_gather`` gathers every parameter's
padded shard in one all-gather (mixed dtypes travel as bytes) and
``foreach_all_gather_copy_out`` copies the rank-major result into the parameters' places in
the group's unsharded buffers. ``foreach_reduce`` lays the unsharded gradients out rank-major
(each padded on dim 0), reduce-scatters them in one collective (all-reducing over the
replicate dim for HSDP), divides as PyTorch does, and hands each sharded parameter its
gradient (a ``Shard`` DTensor), accumulating onto an existing one.
"""
from typing import NamedTuple

import ember

from ... import distributed_c10d as dist
from ._fsdp_common import _get_dim0_padded_size, _to_dtype_if_needed
from ._fsdp_param import _unsafe_preserve_version_counter

ReduceOp = dist.ReduceOp


class AllGatherResult(NamedTuple):
    all_gather_output: ember.Tensor  # 1-D: every rank's flat all-gather input, rank-major
    all_gather_work: object  # the pending collective (async_op), else None
    param_all_gather_input_dtypes: list
    param_all_gather_input_numels: list


@ember.no_grad()
def foreach_all_gather(fsdp_params, group, async_op, device):
    world_size = group.size()
    inputs = [fsdp_param.all_gather_inputs[0] for fsdp_param in fsdp_params]
    dtypes = [t.dtype for t in inputs]
    numels = [t.numel() for t in inputs]
    if len(set(dtypes)) == 1:
        all_gather_input = ember.cat(inputs)
    else:
        all_gather_input = ember.cat([t.view(ember.uint8) for t in inputs])
    if world_size == 1:
        return AllGatherResult(all_gather_input, None, dtypes, numels)
    output = ember.empty(all_gather_input.numel() * world_size, dtype=all_gather_input.dtype,
                         device=device)
    work = dist.all_gather_single(output, all_gather_input, group=group, async_op=async_op)
    return AllGatherResult(output, work, dtypes, numels)


@ember.no_grad()
def foreach_all_gather_copy_out(all_gather_result, fsdp_params, world_size):
    output, work, dtypes, numels = all_gather_result
    if work is not None:
        work.wait()
    gathered = output.view(world_size, -1)
    as_bytes = output.dtype == ember.uint8
    offset = 0
    targets = [fsdp_param.all_gather_output for fsdp_param in fsdp_params]
    with _unsafe_preserve_version_counter(targets):
        for fsdp_param, target, dtype, numel in zip(fsdp_params, targets, dtypes, numels):
            width = numel * dtype.itemsize if as_bytes else numel
            part = gathered[:, offset:offset + width]
            offset += width
            if part.dtype != dtype:
                part = part.contiguous().view(dtype)
            shard_dim = fsdp_param.fsdp_placement.dim
            if shard_dim == 0:
                target.view(world_size, -1).copy_(part)
                continue
            # Shard(dim > 0): the ranks' shards are concatenated along that dim
            pre_size = list(fsdp_param.padded_sharded_param_size)
            pre_size[0] *= world_size
            post_size = list(fsdp_param.padded_sharded_param_size)
            post_size[shard_dim] *= world_size
            chunks = ember.chunk(part.contiguous().view(pre_size), world_size, dim=0)
            target.view(post_size).copy_(ember.cat(chunks, dim=shard_dim))


def _chunk_cat(tensors, num_chunks, dtype):
    """Each tensor padded on dim 0 to a multiple of ``num_chunks`` and cut into that many
    rows; row ``r`` of the result is every tensor's row ``r`` (PyTorch's ``_chunk_cat``),
    flattened."""
    rows = []
    for t in tensors:
        t = _to_dtype_if_needed(t, dtype)
        pad = -t.size(0) % num_chunks
        if pad:
            t = ember.cat([t, t.new_zeros((pad,) + tuple(t.shape[1:]))])
        rows.append(t.reshape(num_chunks, -1))
    return ember.cat(rows, dim=1).reshape(-1)


class _PreMulSum(NamedTuple):
    """NCCL's ``ReduceOp.PREMUL_SUM(scale)``: a sum of the inputs times ``scale``."""
    scale: float


@ember.no_grad()
def foreach_reduce(fsdp_params, unsharded_grads, reduce_scatter_group, orig_dtype,
                   reduce_dtype, device, gradient_divide_factor, all_reduce_group,
                   all_reduce_grads, partial_reduce_output, all_reduce_hook,
                   force_sum_reduction_for_comms=False):
    """Reduce the gradients onto the sharded parameters; returns HSDP's partial (reduce-
    scattered, not yet all-reduced) output when ``all_reduce_grads`` is False.
    ``unsharded_grads`` owns the gradients: it is cleared once they are copied."""
    grad_dtypes = {grad.dtype for grad in unsharded_grads}
    if len(grad_dtypes) != 1:
        raise AssertionError(f"FSDP reduce-scatter expects uniform gradient dtype but got "
                             f"{grad_dtypes}")
    reduce_dtype = reduce_dtype or unsharded_grads[0].dtype
    predivide_factor, postdivide_factor, reduce_scatter_op, all_reduce_op = \
        _get_gradient_divide_factors(reduce_scatter_group, all_reduce_group, reduce_dtype,
                                     device.type, gradient_divide_factor,
                                     force_sum_reduction_for_comms)
    world_size = reduce_scatter_group.size()
    if world_size > 1:
        for i, (fsdp_param, grad) in enumerate(zip(fsdp_params, unsharded_grads)):
            if (shard_dim := fsdp_param.fsdp_placement.dim) == 0:
                continue
            if grad.size(shard_dim) % world_size != 0:
                raise AssertionError(f"Shard({shard_dim}) requires even sharding: "
                                     f"{grad.size()=} {world_size=}")
            unsharded_grads[i] = ember.cat(ember.chunk(grad, world_size, dim=shard_dim), dim=0)
    padded_unsharded_sizes = [_get_dim0_padded_size(grad.size(), world_size)
                              for grad in unsharded_grads]
    reduce_scatter_input = _chunk_cat(unsharded_grads, world_size, reduce_dtype)
    unsharded_grads.clear()
    _div_if_needed(reduce_scatter_input, predivide_factor)
    if world_size > 1:
        op = reduce_scatter_op
        if isinstance(op, _PreMulSum):
            # ember's MPI backend has no PREMUL_SUM: the same scaling, then a SUM
            reduce_scatter_input.mul_(op.scale)
            op = ReduceOp.SUM
        reduce_output = ember.empty(reduce_scatter_input.numel() // world_size,
                                    dtype=reduce_dtype, device=device)
        dist.reduce_scatter_single(reduce_output, reduce_scatter_input, op=op,
                                   group=reduce_scatter_group)
    elif gradient_divide_factor is not None:
        reduce_output = reduce_scatter_input / gradient_divide_factor
    else:
        reduce_output = reduce_scatter_input
    if all_reduce_group is not None:  # HSDP
        if not all_reduce_grads:
            if partial_reduce_output is not None:
                partial_reduce_output += reduce_output
                return partial_reduce_output
            return reduce_output
        if partial_reduce_output is not None:
            reduce_output += partial_reduce_output
        dist.all_reduce(reduce_output, group=all_reduce_group, op=all_reduce_op)
    if all_reduce_hook is not None:
        all_reduce_hook(reduce_output)
    _div_if_needed(reduce_output, postdivide_factor)
    reduce_output = _to_dtype_if_needed(reduce_output, orig_dtype)
    offset = 0
    for padded_unsharded_size, fsdp_param in zip(padded_unsharded_sizes, fsdp_params):
        # the shard is the padded row's prefix (padding sits at the end of dim 0)
        numel = fsdp_param.sharded_size.numel()
        new_sharded_grad = reduce_output[offset:offset + numel].view(fsdp_param.sharded_size)
        if fsdp_param.offload_to_cpu:
            new_sharded_grad = new_sharded_grad.to("cpu")
        sharded_param = fsdp_param.sharded_param
        if sharded_param.grad is not None:
            sharded_param.grad._local_tensor += new_sharded_grad
        else:
            sharded_param.grad = fsdp_param.to_sharded_dtensor(new_sharded_grad)
        meta = sharded_param._autograd
        if meta is not None and meta.post_acc_hooks:
            for hook in list(meta.post_acc_hooks.values()):
                hook(sharded_param)
        offset += padded_unsharded_size.numel() // world_size
    return None


def _get_gradient_divide_factors(reduce_scatter_group, all_reduce_group, reduce_dtype,
                                 device_type="", factor=None,
                                 force_sum_reduction_for_comms=False):
    """(pre-divide factor, post-divide factor, reduce-scatter op, all-reduce op): fp32 and
    bf16 reduce with AVG (or a scaled sum for a custom factor); other dtypes sum, divided by
    about sqrt(N) before and after, against overflow and underflow."""
    if device_type == "mtia":  # it only sums
        force_sum_reduction_for_comms = True
    overflow_risk = reduce_dtype not in (ember.float32, ember.bfloat16)
    data_parallel_size = reduce_scatter_group.size() if reduce_scatter_group is not None else 1
    if all_reduce_group is not None:
        data_parallel_size *= all_reduce_group.size()
    if not overflow_risk and not force_sum_reduction_for_comms:
        if factor is None:
            if data_parallel_size == 1:
                return None, None, ReduceOp.SUM, ReduceOp.SUM
            return None, None, ReduceOp.AVG, ReduceOp.AVG
        if reduce_scatter_group is not None and factor == reduce_scatter_group.size():
            reduce_scatter_op = ReduceOp.AVG
        else:
            reduce_scatter_op = _PreMulSum(1 / factor)
        return None, None, reduce_scatter_op, ReduceOp.SUM
    if factor is None:
        factor = float(data_parallel_size)
    if overflow_risk:
        pre_factor = 1
        while factor % pre_factor == 0 and factor / pre_factor > pre_factor:
            pre_factor *= 2
        post_factor = factor / pre_factor
    else:  # post-dividing touches less data
        pre_factor, post_factor = None, factor
    return pre_factor, post_factor, ReduceOp.SUM, ReduceOp.SUM


def _div_if_needed(tensor, div_factor):
    if div_factor is not None and div_factor != 1:
        tensor.div_(div_factor)
