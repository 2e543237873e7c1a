"""The write and read items the default planners build (PyTorch's ``planner_helpers`` and
``resharding``).

A plain tensor is one chunk at offset zero; a DTensor is this rank's shard, a chunk at its
global offsets (``compute_local_shape_and_global_offset``) written as a SHARD item, so that
every rank writes its own shard and the replicas of a replicated placement, being the same
item, are kept on one rank by the save plan's deduplication. Loading reads, for each local
chunk, the overlap of every saved chunk that intersects it: a checkpoint loads into any other
sharding, on any number of ranks.
"""
import itertools
from bisect import bisect_right, insort

from .metadata import (BytesStorageMetadata, ChunkStorageMetadata, MetadataIndex,
                       TensorProperties)
from .planner import LoadItemType, ReadItem, SavePlan, TensorWriteData, WriteItem, WriteItemType
from ..tensor import DTensor
from ..tensor._utils import compute_local_shape_and_global_offset
from ..tensor.placement_types import Shard, _StridedShard
from ..._core.size import Size
from ..._tensor import Tensor

__all__ = ["create_read_items_for_chunk_list"]


def _create_chunk_from_tensor(tensor):
    return ChunkStorageMetadata(offsets=Size([0] * len(tensor.size())), sizes=tensor.size())


def _check_strided_shard_is_a_block(tensor):
    """A ``_StridedShard`` may leave a rank with global indices that are not one contiguous
    block (e.g. rows 0, 1, 4, 5); a chunk is a block, so such a shard cannot be described by
    one. PyTorch would record the block starting at the first index, and write wrong data;
    this raises instead. FSDP2 + TP's (``_StridedShard(0, split_factor=tp)``, ``Shard(0)``)
    leaves blocks and passes."""
    mesh, placements = tensor.device_mesh, tensor.placements
    if not any(isinstance(p, _StridedShard) for p in placements):
        return
    coord = mesh.get_coordinate()
    for dim in {p.dim for p in placements if isinstance(p, (Shard, _StridedShard))}:
        indices = range(tensor.shape[dim])
        for mesh_dim, p in enumerate(placements):
            if not isinstance(p, (Shard, _StridedShard)) or p.dim != dim:
                continue
            n = mesh.size(mesh_dim)
            if isinstance(p, _StridedShard):
                indices = [indices[i] for i in p._indices(len(indices), n)[coord[mesh_dim]]]
            else:
                size, offset = Shard.local_shard_size_and_offset(len(indices), n,
                                                                 coord[mesh_dim])
                indices = indices[offset:offset + size]
        if list(indices) != list(range(indices[0], indices[0] + len(indices))
                                 if len(indices) else []):
            raise NotImplementedError(
                f"Checkpointing a DTensor with placements {placements}: this rank's shard "
                f"holds the non-contiguous indices {list(indices)} of dim {dim}, which one "
                f"checkpoint chunk cannot describe; redistribute it (e.g. to Shard) first")


def _create_chunk_from_dtensor(tensor):
    _check_strided_shard_is_a_block(tensor)
    sizes, offsets = compute_local_shape_and_global_offset(tensor.shape, tensor.device_mesh,
                                                           tensor.placements)
    return ChunkStorageMetadata(offsets=Size(offsets), sizes=Size(sizes))


def _create_write_items_for_dtensor(fqn, tensor):
    chunk = _create_chunk_from_dtensor(tensor)
    return WriteItem(index=MetadataIndex(fqn, chunk.offsets), type=WriteItemType.SHARD,
                     tensor_data=TensorWriteData(
                         chunk=chunk,
                         properties=TensorProperties.create_from_tensor(tensor.to_local()),
                         size=tensor.size()))


def _create_write_item_for_tensor(fqn, tensor):
    offsets = Size([0] * len(tensor.size()))
    return WriteItem(index=MetadataIndex(fqn, offsets), type=WriteItemType.TENSOR,
                     tensor_data=TensorWriteData(
                         chunk=ChunkStorageMetadata(offsets=offsets, sizes=tensor.size()),
                         properties=TensorProperties.create_from_tensor(tensor),
                         size=tensor.size()))


def _create_write_item_for_bytesio(fqn, bytes):
    return WriteItem(index=MetadataIndex(fqn), type=WriteItemType.BYTE_IO)


def _create_read_item_for_byteio(dest_index, dest_offset, storage_index, storage_offset,
                                 length):
    return ReadItem(type=LoadItemType.BYTE_IO, dest_index=dest_index,
                    dest_offsets=Size((dest_offset,)), storage_index=storage_index,
                    storage_offsets=Size((storage_offset,)), lengths=Size((length,)))


def _create_read_item_for_tensor(dest_index, dest_offsets, storage_index, storage_offsets,
                                 lengths):
    return ReadItem(type=LoadItemType.TENSOR, dest_index=dest_index,
                    dest_offsets=Size(dest_offsets), storage_index=storage_index,
                    storage_offsets=Size(storage_offsets), lengths=Size(lengths))


def _check_shard_metadata_pair_overlap(shard1, shard2):
    """Whether two chunks overlap."""
    for i in range(len(shard1.offsets)):
        if shard1.offsets[i] >= shard2.offsets[i] + shard2.sizes[i]:
            return False
        if shard2.offsets[i] >= shard1.offsets[i] + shard1.sizes[i]:
            return False
    return True


def _shards_get_overlap_region_wrt_saved_tensor(saved_shard, current_shard):
    """Per dim, ``(dim, offset in saved_shard, offset in current_shard, length)`` of the two
    chunks' overlap."""
    narrows = []
    for dim, (saved_offset, current_offset, saved_size, current_size) in enumerate(zip(
            saved_shard.offsets, current_shard.offsets, saved_shard.sizes,
            current_shard.sizes)):
        length = (min(saved_offset + saved_size, current_offset + current_size)
                  - max(current_offset, saved_offset))
        if saved_offset > current_offset:
            narrows.append((dim, 0, saved_offset - current_offset, length))
        else:
            narrows.append((dim, current_offset - saved_offset, 0, length))
    return narrows


def create_read_items_for_chunk_list(fqn, checkpoint_md, local_chunks):
    """The ``ReadItem``s that fill ``local_chunks`` from the saved chunks of
    ``checkpoint_md``: one per overlapping (local, saved) pair. As PyTorch, the pairs are found
    by a sweep along the dim of largest extent, so the items come in PyTorch's order."""
    read_items = []
    saved_chunks = checkpoint_md.chunks
    if not local_chunks or not saved_chunks:
        return read_items
    num_dims = len(local_chunks[0].offsets)
    sweep_dim = 0
    if num_dims > 1:
        max_size = 0
        for dim in range(num_dims):
            dim_size = max(c.offsets[dim] + c.sizes[dim]
                           for c in itertools.chain(local_chunks, saved_chunks))
            if dim_size > max_size:
                max_size, sweep_dim = dim_size, dim
    if num_dims == 0:
        # every 0-d chunk overlaps every other
        saved_bounds = [(0, 1)] * len(saved_chunks)
        local_bounds = [(0, 1)] * len(local_chunks)
    else:
        saved_bounds = [(c.offsets[sweep_dim], c.offsets[sweep_dim] + c.sizes[sweep_dim])
                        for c in saved_chunks]
        local_bounds = [(c.offsets[sweep_dim], c.offsets[sweep_dim] + c.sizes[sweep_dim])
                        for c in local_chunks]
    saved_order = sorted(range(len(saved_chunks)), key=lambda i: saved_bounds[i][0])
    local_order = sorted(range(len(local_chunks)), key=lambda i: local_bounds[i][0])
    active_saved = []  # (end, saved index) of the saved chunks that may still overlap
    saved_ptr = 0
    for local_idx in local_order:
        local_chunk = local_chunks[local_idx]
        local_start, local_end = local_bounds[local_idx]
        cutoff = bisect_right(active_saved, (local_start, -1))
        if cutoff:
            del active_saved[:cutoff]
        while saved_ptr < len(saved_order):
            storage_idx = saved_order[saved_ptr]
            saved_start, saved_end = saved_bounds[storage_idx]
            if saved_start >= local_end:
                break
            insort(active_saved, (saved_end, storage_idx))
            saved_ptr += 1
        for _, storage_idx in active_saved:
            storage_chunk = saved_chunks[storage_idx]
            if not _check_shard_metadata_pair_overlap(local_chunk, storage_chunk):
                continue
            narrows = _shards_get_overlap_region_wrt_saved_tensor(saved_shard=storage_chunk,
                                                                 current_shard=local_chunk)
            read_items.append(_create_read_item_for_tensor(
                dest_index=MetadataIndex(fqn, local_chunk.offsets, local_idx),
                dest_offsets=[n[2] for n in narrows],
                storage_index=MetadataIndex(fqn, storage_chunk.offsets, storage_idx),
                storage_offsets=[n[1] for n in narrows], lengths=[n[3] for n in narrows]))
    return read_items


def _create_default_metadata_only_plan(state_dict):
    """The write items of ``state_dict`` as this rank would plan them, without deduplication:
    a DTensor's shard, a tensor, or a byte object per value."""
    requests = []
    for fqn, obj in state_dict.items():
        if isinstance(obj, DTensor):
            requests.append(_create_write_items_for_dtensor(fqn, obj))
        elif isinstance(obj, Tensor):
            requests.append(_create_write_item_for_tensor(fqn, obj))
        else:
            requests.append(_create_write_item_for_bytesio(fqn, obj))
    return SavePlan(requests)


def _create_write_items(fqn, object):
    if hasattr(object, "__create_write_items__"):
        # DTensor's checkpoint hook: its shard
        return object.__create_write_items__(fqn, object)
    if isinstance(object, Tensor):
        return [_create_write_item_for_tensor(fqn, object)]
    return [_create_write_item_for_bytesio(fqn, object)]


def _create_chunk_list(tensor):
    if hasattr(tensor, "__create_chunk_list__"):
        # DTensor's checkpoint hook: its shard
        return tensor.__create_chunk_list__()
    if isinstance(tensor, Tensor):
        return [_create_chunk_from_tensor(tensor)]
    raise ValueError("Unsupported Type, expecting one of [Tensor, DTensor, ShardedTensor] "
                     f",but got {type(tensor)}")


def _create_read_items(fqn, md, obj):
    if isinstance(md, BytesStorageMetadata):
        return [_create_read_item_for_byteio(dest_index=MetadataIndex(fqn), dest_offset=0,
                                             storage_index=MetadataIndex(fqn), storage_offset=0,
                                             length=0)]
    try:
        local_chunks = _create_chunk_list(obj)
    except ValueError as ex:
        raise ValueError(f"Invalid checkpoint metadata for {fqn}, expected "
                         f"BytesStorageMetadata but found {type(md)}") from ex
    return create_read_items_for_chunk_list(fqn, md, local_chunks)


def _init_state_dict(state_dict):
    """Meta tensors are materialized (uninitialized) where the load puts data, in place in the
    (nested) state dict: a plain tensor on the CPU, which is where ember's process groups
    (gloo/mpi on CPU tensors) default to; a DTensor as a CPU local tensor of its shard's shape
    (``from_local`` moves it to its mesh's device), with the global shape and stride given, as
    a shard may be uneven."""
    from ... import empty_like

    def materialize(value):
        if isinstance(value, DTensor):
            if value.device.type != "meta":
                return value
            return DTensor.from_local(empty_like(value.to_local(), device="cpu"),
                                      device_mesh=value.device_mesh, placements=value.placements,
                                      shape=value.size(), stride=value.stride())
        if isinstance(value, Tensor):
            return empty_like(value, device="cpu") if value.device.type == "meta" else value
        if isinstance(value, dict):
            for k, v in value.items():
                value[k] = materialize(v)
            return value
        if isinstance(value, (list, tuple)):
            out = [materialize(v) for v in value]
            return tuple(out) if isinstance(value, tuple) else out
        return value

    for k, v in state_dict.items():
        state_dict[k] = materialize(v)
