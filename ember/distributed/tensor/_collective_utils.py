"""Collectives over one mesh dimension (scatter, broadcast, the all-to-all that moves a shard to
another tensor dimension), the padding that lets uneven shards travel in equal-sized
collectives, the cross-rank metadata check of ``from_local(run_check=True)``, and PyTorch's cost
model of redistributions (which sharding propagation minimises).
"""
import math
from dataclasses import dataclass
from functools import lru_cache

import ember

from .. import _functional_collectives as funcol
from .. import distributed_c10d as c10d
from ..device_mesh import _mesh_resources


def mesh_scatter(output, scatter_list, mesh, mesh_dim=0, async_op=False, *, group_src=0):
    """Scatter ``scatter_list`` from group rank ``group_src`` of the mesh dimension's group into
    ``output`` on every rank of it."""
    if output.is_meta:
        return None
    group = mesh.get_group(mesh_dim)
    mine = group_src == c10d.get_rank(group)
    return c10d.scatter(output, scatter_list=scatter_list if mine else None, group=group,
                        async_op=async_op, group_src=group_src)


def mesh_broadcast(tensor, mesh, mesh_dim=0, async_op=False, *, group_src=0):
    """Broadcast ``tensor`` from group rank ``group_src`` of the mesh dimension's group."""
    if tensor.is_meta:
        return None
    return c10d.broadcast(tensor, group=mesh.get_group(mesh_dim), async_op=async_op,
                          group_src=group_src)


def shard_dim_alltoall(input, gather_dim, shard_dim, mesh, mesh_dim):
    """``input`` (this rank's shard along ``gather_dim``, with ``shard_dim`` whole and divisible
    by the group size) re-sharded along ``shard_dim``: one all-to-all."""
    n = mesh.size(mesh_dim)
    parts = ember.stack(ember.chunk(input, n, dim=shard_dim)).contiguous()
    got = funcol.all_to_all_single(parts, None, None, (mesh, mesh_dim))
    return ember.cat(ember.unbind(got, 0), dim=gather_dim).contiguous()


def pad_tensor(tensor, pad_dim, pad_size):
    if pad_size == 0:
        return tensor
    pad = [0, 0] * (tensor.ndim - pad_dim)
    pad[-1] = pad_size
    return ember.nn.functional.pad(tensor, pad)


def unpad_tensor(tensor, pad_dim, pad_size):
    if pad_size == 0:
        return tensor
    return tensor.narrow(pad_dim, start=0, length=tensor.size(pad_dim) - pad_size)


def fill_empty_tensor_to_shards(shards, shard_dim, num_empty_tensors):
    if num_empty_tensors == 0:
        return shards
    size = list(shards[0].size())
    size[shard_dim] = 0
    empty = shards[0].new_zeros(size)
    shards.extend(empty for _ in range(num_empty_tensors))
    return shards


def check_tensor_meta(local_tensor, check_shape_stride=False):
    """Raise unless every rank's local tensor has this one's dtype and requires_grad (and shape
    and stride, if asked)."""
    local = {"dtype": local_tensor.dtype, "requires_grad": local_tensor.requires_grad}
    if check_shape_stride:
        local.update({"shape": tuple(local_tensor.shape), "stride": local_tensor.stride()})
    gathered = [None] * c10d.get_world_size()
    c10d.all_gather_object(gathered, local)
    if not all(meta == local for meta in gathered):
        raise ValueError("Inconsistent tensor metadata (including shape and stride) across "
                         "ranks.")


# --- PyTorch's communication cost model (microseconds; ring collectives on an NVLink/NCCL host)

@dataclass
class MeshTopoInfo:
    mesh: object
    mesh_dim_devices: list
    mesh_dim_bandwidth: list
    mesh_dim_latency: list

    @staticmethod
    @lru_cache(None)
    def build_from_mesh(mesh):
        per_host = _mesh_resources.num_devices_per_host(mesh.device_type)
        bandwidth = [87.7] * mesh.ndim  # GB/s intra-node
        latency = [0.6] * mesh.ndim  # us
        devices = [1] * mesh.ndim
        total = 1
        for d in reversed(range(mesh.ndim)):
            devices[d] = mesh.size(d)
            total *= devices[d]
            if total > per_host:  # inter-host
                bandwidth[d] *= 0.22
                latency[d] = 2.7
        return MeshTopoInfo(mesh, devices, bandwidth, latency)


def _ring_cost(bytes_gb, topo, mesh_dim, hops_factor):
    n = topo.mesh_dim_devices[mesh_dim]
    hops = hops_factor * (n - 1)
    latency = 6.6 + hops * topo.mesh_dim_latency[mesh_dim]
    bw = (bytes_gb * hops / n) / topo.mesh_dim_bandwidth[mesh_dim]
    return latency + bw * 1e6


def allgather_cost(bytes_gb, topo, mesh_dim):
    return _ring_cost(bytes_gb, topo, mesh_dim, 1)


def allreduce_cost(bytes_gb, topo, mesh_dim):
    return _ring_cost(bytes_gb, topo, mesh_dim, 2)


def reduce_scatter_cost(bytes_gb, topo, mesh_dim):
    return _ring_cost(bytes_gb, topo, mesh_dim, 1)


def _transition_cost(current, target, topo, mesh_dim, comm_bytes_gb):
    """(cost, bytes after) of one placement change on one mesh dimension."""
    if current == target:
        return 0.0, comm_bytes_gb
    n = topo.mesh_dim_devices[mesh_dim]
    if current.is_shard() and target.is_replicate():
        comm_bytes_gb *= n
        return allgather_cost(comm_bytes_gb, topo, mesh_dim), comm_bytes_gb
    if current.is_shard() and target.is_shard():
        # an all-to-all, costed as an all-gather plus a penalty (PyTorch's choice)
        return allgather_cost(comm_bytes_gb, topo, mesh_dim) + 1.0, comm_bytes_gb
    if current.is_partial() and target.is_replicate():
        return allreduce_cost(comm_bytes_gb, topo, mesh_dim), comm_bytes_gb
    if current.is_partial() and target.is_shard():
        return reduce_scatter_cost(comm_bytes_gb, topo, mesh_dim), comm_bytes_gb / n
    if current.is_shard() and target.is_partial():
        return float("inf"), comm_bytes_gb
    if current.is_partial() and target.is_partial():
        return float("inf"), comm_bytes_gb
    if current.is_replicate() and target.is_shard():
        return 0.0, comm_bytes_gb / n
    return 0.0, comm_bytes_gb


def redistribute_cost(current_spec, target_spec):
    """The communication cost of redistributing ``current_spec`` to ``target_spec``."""
    from ._redistribute import _gen_transform_infos
    from .placement_types import _StridedShard
    if current_spec.mesh != target_spec.mesh:
        return float("inf")
    if current_spec.is_replicated():
        return 0.0
    if current_spec.placements == target_spec.placements:
        return 0.0
    if not current_spec.mesh._is_current_rank_part_of_mesh():
        return 0.0
    if any(isinstance(p, _StridedShard)
           for p in current_spec.placements + target_spec.placements):
        return float("inf")
    topo = MeshTopoInfo.build_from_mesh(current_spec.mesh)
    meta = current_spec.tensor_meta
    comm_bytes_gb = (meta.dtype.itemsize * math.prod(meta.shape) / current_spec.num_shards
                     / 1024 / 1024 / 1024)
    cost = 0.0
    for info in _gen_transform_infos(current_spec, target_spec):
        current, target = info.src_dst_placements
        step, comm_bytes_gb = _transition_cost(current, target, topo, info.mesh_dim,
                                               comm_bytes_gb)
        if step == float("inf"):
            return step
        cost += step
    return cost
