"""Shape arithmetic between a DTensor's global tensor and this rank's local shard."""
from collections.abc import Sequence

import ember

from .placement_types import Partial, Replicate, Shard, _StridedShard, _is_shard_like


def compute_local_shape_and_global_offset(global_shape, mesh, placements, skip_offset=False):
    """This rank's local shape and the global offset of its first element along each dim
    (placements applied left to right, ``torch.chunk``'s rule; ``((0,), ())`` off the mesh)."""
    if not mesh._is_current_rank_part_of_mesh():
        return ((0,), ())
    return _compute_local_shape_and_global_offset(global_shape, mesh.shape,
                                                  mesh.get_coordinate(), placements, skip_offset)


def _compute_local_shape_and_global_offset(global_shape, mesh_shape, my_coordinate, placements,
                                           skip_offset=False):
    """The same for the mesh coordinate ``my_coordinate`` of a mesh of ``mesh_shape``."""
    local_shape = list(global_shape)
    positions = {}  # tensor dim -> the global indices this rank holds along it (a range)
    for mesh_dim, p in enumerate(placements):
        if not _is_shard_like(p):
            continue
        if p.dim >= len(local_shape):
            raise AssertionError(f"Sharding dim {p.dim} greater than tensor ndim "
                                 f"{len(local_shape)}")
        prev = positions.get(p.dim, range(global_shape[p.dim]))
        n, rank = mesh_shape[mesh_dim], my_coordinate[mesh_dim]
        if isinstance(p, _StridedShard):
            mine = [prev[i] for i in p._indices(len(prev), n)[rank]]
        else:
            size, offset = Shard.local_shard_size_and_offset(len(prev), n, rank)
            mine = prev[offset:offset + size]
        local_shape[p.dim] = len(mine)
        positions[p.dim] = mine
    if skip_offset:
        return tuple(local_shape), ()
    offset = [0] * len(global_shape)
    for dim, mine in positions.items():
        offset[dim] = mine[0] if mine else global_shape[dim]
    return tuple(local_shape), tuple(offset)


def compute_global_tensor_info(tensor, mesh, placements):
    """The global shape and stride of even shards like ``tensor`` (each sharded dim times its
    mesh dim's size, strides above it scaled alike)."""
    shape, stride = list(tensor.size()), list(tensor.stride())
    for idx, p in enumerate(placements):
        n = mesh.size(idx)
        if _is_shard_like(p):
            if p.dim < 0:
                raise AssertionError(f"Shard placements should have negative dims normalized in "
                                     f"the user-facing APIs: {p}")
            if p.dim >= len(shape):
                raise AssertionError(f"Sharding dim {p.dim} greater than tensor ndim "
                                     f"{len(shape)} for placement number {idx}.")
            shard_stride = stride[p.dim]
            shape[p.dim] *= n
            for i in range(len(stride)):
                if i != p.dim and stride[i] >= shard_stride:
                    stride[i] *= n
        elif not isinstance(p, (Replicate, Partial)):
            raise RuntimeError(f"placement type {type(p)} not supported!")
    return shape, stride


def compute_local_tensor_info(global_tensor, mesh, placements):
    """The local shape and stride of even shards of ``global_tensor``."""
    shape, stride = list(global_tensor.size()), list(global_tensor.stride())
    for idx, p in enumerate(placements):
        n = mesh.size(idx)
        if _is_shard_like(p):
            size = shape[p.dim]
            if size % n != 0:
                raise AssertionError(f"Global dim {size} not divisible by mesh size {n}")
            shape[p.dim] = size // n
            for i in range(len(stride)):
                if i != p.dim and stride[i] >= stride[p.dim] * n:
                    stride[i] //= n
        elif not isinstance(p, (Replicate, Partial)):
            raise RuntimeError(f"placement type {type(p)} not supported!")
    return shape, stride


def compute_local_stride(global_stride, local_shape):
    """Contiguous strides for ``local_shape`` in the dim order the global strides imply."""
    perm = sorted(range(len(global_stride)), key=lambda d: global_stride[d], reverse=True)
    strides = [0] * len(global_stride)
    s = 1
    for d in reversed(perm):
        strides[d] = s
        s *= local_shape[d]
    return tuple(strides)


def normalize_to_torch_size(size):
    """``ember.Size`` from an int, a sequence, or a sequence wrapped in a tuple."""
    if isinstance(size, ember.Size):
        return size
    if isinstance(size, int):
        return ember.Size([size])
    if len(size) == 1 and isinstance(size[0], Sequence):
        return ember.Size(list(size[0]))
    return ember.Size(list(size))


def assert_no_mixed_partial_types(placements):
    ops = {p.reduce_op for p in placements if isinstance(p, Partial)}
    if len(ops) > 1 and ops != {"sum", "avg"}:
        raise ValueError(f"Mixed Partial reduce types are not supported in the same placement "
                         f"list. Found reduce ops: {ops}. Please ensure all Partial placements "
                         f"use the same reduce operation.")


def try_find_mesh_from_args(op_call, args):
    from ._api import DTensor
    from ._dtensor_spec import DTensorSpec
    for arg in args:
        if isinstance(arg, (DTensor, DTensorSpec)):
            return arg.device_mesh
        if isinstance(arg, (list, tuple)) and arg and isinstance(arg[0], (DTensor, DTensorSpec)):
            return arg[0].device_mesh
    raise ValueError(f"Cannot find device mesh from args for op : {op_call}.")
