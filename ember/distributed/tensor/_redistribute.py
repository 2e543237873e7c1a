"""Redistribution: turning a DTensor's local tensor from one layout into another on the same
mesh, one mesh dimension at a time (PyTorch's greedy plan: nested shardings are gathered from
the innermost mesh dimension out before anything is re-sharded), and ``Redistribute``, its
autograd function (the gradient goes back to the input's layout, Partial becoming Replicate).
"""
from dataclasses import dataclass
from functools import lru_cache

import ember

from . import _api as dtensor
from ._dtensor_spec import DTensorSpec, TensorMeta
from ._utils import assert_no_mixed_partial_types
from .placement_types import Replicate, Shard, _StridedShard, _is_shard_like


@dataclass
class _TransformInfo:
    mesh_dim: int
    src_dst_placements: tuple
    # the tensor's shape as the mesh dim sees it (sharded by the mesh dims before it)
    logical_shape: list


def _logical_shapes(spec):
    """For each mesh dim, the shape of the tensor as sharded by the mesh dims before it."""
    mesh = spec.mesh
    shapes = [list(spec.shape)]
    for i, src in enumerate(spec.placements[:-1]):
        current = shapes[i]
        if _is_shard_like(src):
            size, _ = src._local_shard_size_and_offset(current[src.dim], mesh.size(mesh_dim=i),
                                                       mesh._sym_get_coordinate(i))
            current = list(current)
            current[src.dim] = size
        shapes.append(current)
    return shapes


@lru_cache(maxsize=1024)
def _gen_transform_infos(src_spec, dst_spec):
    """The one-mesh-dim steps from ``src_spec`` to ``dst_spec`` (PyTorch's greedy plan)."""
    mesh = src_spec.mesh
    if mesh.ndim == 1:
        src, dst = src_spec.placements[0], dst_spec.placements[0]
        return [] if src == dst else [_TransformInfo(0, (src, dst), list(src_spec.shape))]
    shapes = _logical_shapes(src_spec)
    current = list(src_spec.placements)
    target = list(dst_spec.placements)
    infos = []
    if src_spec.num_shards > 1:
        # innermost first: a tensor dim sharded by different mesh dims before this one than
        # the target has must be gathered here before it can be re-sharded
        for mesh_dim in reversed(range(len(current))):
            cur, tgt = current[mesh_dim], target[mesh_dim]
            if isinstance(tgt, Shard):
                before_cur = [i for i in range(mesh_dim) if current[i].is_shard(tgt.dim)]
                before_tgt = [i for i in range(mesh_dim) if target[i].is_shard(tgt.dim)]
                if before_cur != before_tgt:
                    tgt = Replicate()
            if cur != tgt:
                infos.append(_TransformInfo(mesh_dim, (cur, tgt), shapes[mesh_dim]))
                current[mesh_dim] = tgt
    for mesh_dim, (cur, tgt) in enumerate(zip(current, target)):
        if cur != tgt:
            infos.append(_TransformInfo(mesh_dim, (cur, tgt), shapes[mesh_dim]))
            current[mesh_dim] = tgt
    return infos


def redistribute_local_tensor(local_tensor, current_spec, target_spec, *, async_op=False):
    """This rank's local tensor of ``target_spec``'s layout, from ``local_tensor`` in
    ``current_spec``'s (the collectives each step needs; ember's collectives complete before
    returning, so ``async_op`` changes nothing)."""
    if current_spec.mesh != target_spec.mesh:
        raise NotImplementedError("Cross device mesh comm not supported yet!")
    assert_no_mixed_partial_types(current_spec.placements)
    assert_no_mixed_partial_types(target_spec.placements)
    mesh = current_spec.mesh
    if not mesh._is_current_rank_part_of_mesh():
        return local_tensor
    new_local = local_tensor
    for info in _gen_transform_infos(current_spec, target_spec):
        i = info.mesh_dim
        current, target = info.src_dst_placements
        if current == target or mesh.size(mesh_dim=i) == 1:
            continue
        coord = mesh._sym_get_coordinate(i)
        if target.is_replicate():
            if current.is_partial():
                new_local = current._reduce_value(local_tensor, mesh, i)
            elif _is_shard_like(current):
                new_local = current._to_replicate_tensor(local_tensor, mesh, i,
                                                         info.logical_shape)
            else:
                raise RuntimeError(f"redistribute from {current} to {target} not supported yet")
        elif target.is_shard():
            if current.is_partial():
                new_local = current._reduce_shard_value(local_tensor, mesh, i, target)
            elif current.is_replicate():
                new_local = target._replicate_to_shard(local_tensor, mesh, i, coord)
            elif isinstance(current, _StridedShard):
                replicated = current._to_replicate_tensor(local_tensor, mesh, i,
                                                          info.logical_shape)
                new_local = target._replicate_to_shard(replicated, mesh, i, coord)
            elif current.dim != target.dim:
                new_local = current._to_new_shard_dim(local_tensor, mesh, i, info.logical_shape,
                                                      target.dim)
        elif target.is_partial():
            if current.is_replicate():
                new_local = target._partition_value(local_tensor, mesh, i)
            elif _is_shard_like(current):
                raise RuntimeError(f"redistribute from {current} to {target} not supported yet")
            else:
                raise AssertionError(f"Redistribution from one partial type ({current}) to "
                                     f"another ({target}) is unsupported.")
        elif isinstance(target, _StridedShard):
            if current.is_partial():
                replicated = current._reduce_value(local_tensor, mesh, i)
            elif current.is_replicate():
                replicated = local_tensor
            else:
                replicated = current._to_replicate_tensor(local_tensor, mesh, i,
                                                          info.logical_shape)
            new_local = target._replicate_to_strided_shard(replicated, mesh, i, coord)
        local_tensor = new_local
    return new_local


def _grad_spec(current_spec, previous_spec):
    """The layout a gradient goes back in: the input's, except that a Partial input gets a
    Replicate gradient where the gradient is sharded or replicated (reducing it again would
    only cost)."""
    placements = tuple(Replicate() if (_is_shard_like(c) or c.is_replicate()) and t.is_partial()
                       else t for c, t in zip(current_spec.placements, previous_spec.placements))
    return DTensorSpec(previous_spec.mesh, placements, tensor_meta=previous_spec.tensor_meta)


def _redistribute_backward(grad_output, previous_spec, *, out_dtype, op_dtype, async_op=False):
    local = grad_output._local_tensor
    current_spec = grad_output._spec
    if op_dtype != local.dtype:
        local = local.to(dtype=op_dtype)
        meta = TensorMeta(grad_output.shape, grad_output.stride(), op_dtype)
        current_spec = DTensorSpec(current_spec.mesh, current_spec.placements, tensor_meta=meta)
        previous_spec = DTensorSpec(previous_spec.mesh, previous_spec.placements,
                                    tensor_meta=meta)
    target = _grad_spec(current_spec, previous_spec)
    output = redistribute_local_tensor(local, current_spec, target, async_op=async_op)
    if output.dtype != out_dtype:
        output = output.to(out_dtype)
    spec = DTensorSpec(target.mesh, target.placements,
                       tensor_meta=TensorMeta(grad_output.shape, grad_output.stride(),
                                              output.dtype))
    return output, spec


class Redistribute(ember.autograd.Function):
    @staticmethod
    def forward(ctx, input, device_mesh, placements, async_op, dtype_config):
        ctx.async_op = async_op
        ctx.bwd_op_dtype = dtype_config["backward_options"]["op_dtype"]
        ctx.bwd_out_dtype = dtype_config["backward_options"]["out_dtype"]
        op_dtype, out_dtype = dtype_config["op_dtype"], dtype_config["out_dtype"]
        local, current_spec = input._local_tensor, input._spec
        if op_dtype != local.dtype:
            local = local.to(dtype=op_dtype)
            current_spec = DTensorSpec(device_mesh, current_spec.placements,
                                       tensor_meta=TensorMeta(input.shape, input.stride(),
                                                              op_dtype))
        ctx.current_spec = current_spec
        if current_spec.placements != placements:
            target_spec = DTensorSpec(device_mesh, placements,
                                      tensor_meta=current_spec.tensor_meta)
            output = redistribute_local_tensor(local, current_spec, target_spec,
                                               async_op=async_op)
        else:
            output, target_spec = local, current_spec
        if output.dtype != out_dtype:
            output = output.to(out_dtype)
            target_spec = DTensorSpec(device_mesh, target_spec.placements,
                                      tensor_meta=TensorMeta(input.shape, input.stride(),
                                                             out_dtype))
        return dtensor.DTensor(output, target_spec, requires_grad=input.requires_grad)

    @staticmethod
    def backward(ctx, grad_output):
        return (NestedRedistribute.apply(grad_output, ctx.current_spec, ctx.async_op,
                                         ctx.bwd_op_dtype, ctx.bwd_out_dtype),
                None, None, None, None)


class NestedRedistribute(ember.autograd.Function):
    """The backward of ``Redistribute`` as a function of its own, so that it has a backward
    too (redistribute is twice differentiable)."""

    @staticmethod
    def forward(ctx, grad_output, previous_spec, async_op, op_dtype, out_dtype):
        ctx.async_op = async_op
        ctx.original_dtype = grad_output._local_tensor.dtype
        ctx.op_dtype = op_dtype
        output, spec = _redistribute_backward(grad_output, previous_spec, out_dtype=out_dtype,
                                              op_dtype=op_dtype, async_op=async_op)
        ctx.current_spec = spec
        return dtensor.DTensor(output, spec, requires_grad=grad_output.requires_grad)

    @staticmethod
    def backward(ctx, grad2_output):
        return (NestedRedistribute.apply(grad2_output, ctx.current_spec, ctx.async_op,
                                         ctx.op_dtype, ctx.original_dtype),
                None, None, None, None)
