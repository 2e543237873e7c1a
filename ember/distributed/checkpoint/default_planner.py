"""The default save and load planners (PyTorch's ``default_planner``, ``planner_helpers`` and
``_dedup_save_plans``) for plain tensors and other objects.

Saving: the state dict is flattened to dotted keys; every rank plans a write per value (a tensor
as one chunk at offset zero, anything else as a byte object pickled with ``ember.save``); the
coordinator keeps each key on one rank only (the rank with the fewest bytes planned so far, or
the lowest with ``dedup_save_to_lowest_rank``) and builds the Metadata. Loading: one read per
saved chunk that overlaps the destination tensor (a checkpoint of PyTorch's sharded tensors has
several), and byte objects replaced in the caller's (nested) state dict.
"""
import dataclasses
import io
import logging
from collections import ChainMap, defaultdict

from ._traverse import flatten_state_dict, set_element
from .metadata import (BytesStorageMetadata, ChunkStorageMetadata, Metadata, MetadataIndex,
                       TensorProperties, TensorStorageMetadata)
from .planner import (LoadItemType, LoadPlan, LoadPlanner, ReadItem, SavePlan, SavePlanner,
                      TensorWriteData, WriteItem, WriteItemType)
from .utils import find_state_dict_object
from ..._core.size import Size
from ..._tensor import Tensor

logger = logging.getLogger(__name__)

__all__ = ["DefaultSavePlanner", "DefaultLoadPlanner", "create_default_local_load_plan",
           "create_default_global_load_plan", "create_default_local_save_plan",
           "create_default_global_save_plan"]


class DefaultSavePlanner(SavePlanner):
    """``flatten_sharded_tensors`` is accepted as in PyTorch; ember has no ShardedTensor, so
    there is never one to flatten."""

    def __init__(self, flatten_state_dict=True, flatten_sharded_tensors=True,
                 dedup_replicated_tensors=None, dedup_save_to_lowest_rank=False,
                 enable_plan_caching=False):
        if enable_plan_caching:
            raise NotImplementedError("DefaultSavePlanner(enable_plan_caching=True): ember does "
                                      "not cache save plans")
        self.flatten_state_dict = flatten_state_dict
        self.flatten_sharded_tensors = flatten_sharded_tensors
        self.mappings = {}
        self.dedup_save_to_lowest_rank = dedup_save_to_lowest_rank
        if dedup_replicated_tensors is not None:
            logger.warning("DefaultSavePlanner's `dedup_replicated_tensors` argument is being "
                           "deprecated, and no longer has any effect. Please remove this "
                           "argument from your call.")

    def set_up_planner(self, state_dict, storage_meta=None, is_coordinator=False):
        if self.flatten_state_dict:
            state_dict, self.mappings = flatten_state_dict(state_dict)
        self.state_dict = state_dict
        self.is_coordinator = is_coordinator

    def create_local_plan(self):
        plan = create_default_local_save_plan(self.state_dict, self.is_coordinator)
        if self.flatten_state_dict:
            plan = dataclasses.replace(plan, planner_data=self.mappings)
        self.plan = plan
        return plan

    def create_global_plan(self, all_plans):
        deduped = dedup_save_plans(all_plans, self.dedup_save_to_lowest_rank)
        global_plan, metadata = create_default_global_save_plan(deduped)
        if self.flatten_state_dict:
            merged = dict(ChainMap(*[p.planner_data for p in global_plan]))
            metadata = dataclasses.replace(metadata, planner_data=merged)
        self.global_plan = global_plan
        self.metadata = metadata
        return global_plan, metadata

    def finish_plan(self, new_plan):
        self.plan = new_plan
        return new_plan

    def resolve_data(self, write_item):
        return self.transform_object(write_item, self.lookup_object(write_item.index))

    def lookup_object(self, index):
        """Extension point: the state-dict value ``index`` names."""
        return find_state_dict_object(self.state_dict, index)

    def transform_object(self, write_item, object):
        """Extension point: a byte item's object pickled as ``ember.save`` writes it."""
        if write_item.type == WriteItemType.BYTE_IO:
            from ...serialization import save
            buf = io.BytesIO()
            save(object, buf)
            object = buf
        return object


class DefaultLoadPlanner(LoadPlanner):
    """Loads in place into the state dict's tensors; other values are replaced.
    ``allow_partial_load``: keys of the state dict missing from the checkpoint are skipped
    instead of raising."""

    def __init__(self, flatten_state_dict=True, flatten_sharded_tensors=True,
                 allow_partial_load=False):
        self.flatten_state_dict = flatten_state_dict
        self.flatten_sharded_tensors = flatten_sharded_tensors
        self.original_state_dict = {}
        self.mappings = {}
        self.allow_partial_load = allow_partial_load

    def set_up_planner(self, state_dict, metadata=None, is_coordinator=False):
        _init_state_dict(state_dict)
        self.original_state_dict = state_dict
        if self.flatten_state_dict:
            state_dict, self.mappings = flatten_state_dict(state_dict)
        self.state_dict = state_dict
        self.metadata = metadata
        self.is_coordinator = is_coordinator

    def create_local_plan(self):
        if self.metadata is None:
            raise AssertionError("self.metadata is not None")
        return create_default_local_load_plan(self.state_dict, self.metadata,
                                              not self.allow_partial_load)

    def create_global_plan(self, global_plan):
        return create_default_global_load_plan(global_plan)

    def finish_plan(self, new_plan):
        return new_plan

    def load_bytes(self, read_item, value):
        from ...serialization import load
        obj = load(value, weights_only=False)
        if self.flatten_state_dict:
            set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], obj)
        else:
            self.state_dict[read_item.dest_index.fqn] = obj

    def resolve_tensor(self, read_item):
        return self.transform_tensor(read_item, self.lookup_tensor(read_item.dest_index))

    def commit_tensor(self, read_item, tensor):
        pass

    def lookup_tensor(self, index):
        """Extension point: the state-dict tensor ``index`` names."""
        return find_state_dict_object(self.state_dict, index)

    def transform_tensor(self, read_item, tensor):
        """Extension point: the part of ``tensor`` that ``read_item`` fills."""
        return narrow_tensor_by_index(tensor, read_item.dest_offsets, read_item.lengths)


def narrow_tensor_by_index(tensor, offsets, sizes):
    """The view of ``tensor`` at ``offsets`` with ``sizes``."""
    narrowed = tensor
    for dim, (offset, size) in enumerate(zip(offsets, sizes)):
        if offset != 0 or size != tensor.size(dim):
            narrowed = narrowed.narrow(dim, offset, size)
    return narrowed


def _init_state_dict(state_dict):
    """Meta tensors are materialized (uninitialized) where the load puts data: the CPU, which
    is where ember's process groups (gloo/mpi on CPU tensors) default to."""

    def materialize(container, key, value):
        if isinstance(value, Tensor):
            if value.device.type == "meta":
                from ... import empty_like
                container[key] = empty_like(value, device="cpu")
        elif isinstance(value, dict):
            for k, v in value.items():
                materialize(value, k, v)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                materialize(value, i, v)

    for k, v in state_dict.items():
        materialize(state_dict, k, v)


def _create_write_items(fqn, object):
    if hasattr(object, "__create_write_items__"):
        return object.__create_write_items__(fqn, object)
    if isinstance(object, Tensor):
        offsets = Size([0] * object.dim())
        return [WriteItem(
            index=MetadataIndex(fqn, offsets), type=WriteItemType.TENSOR,
            tensor_data=TensorWriteData(
                chunk=ChunkStorageMetadata(offsets=offsets, sizes=object.size()),
                properties=TensorProperties.create_from_tensor(object), size=object.size()))]
    return [WriteItem(index=MetadataIndex(fqn), type=WriteItemType.BYTE_IO)]


def _create_read_items(fqn, md, obj):
    if isinstance(md, BytesStorageMetadata):
        return [ReadItem(type=LoadItemType.BYTE_IO, dest_index=MetadataIndex(fqn),
                         dest_offsets=Size((0,)), storage_index=MetadataIndex(fqn),
                         storage_offsets=Size((0,)), lengths=Size((0,)))]
    if hasattr(obj, "__create_chunk_list__"):
        local_chunks = obj.__create_chunk_list__()
    elif isinstance(obj, Tensor):
        local_chunks = [ChunkStorageMetadata(offsets=Size([0] * obj.dim()), sizes=obj.size())]
    else:
        raise ValueError(f"Invalid checkpoint metadata for {fqn}, expected "
                         f"BytesStorageMetadata but found {type(md)}")
    return create_read_items_for_chunk_list(fqn, md, local_chunks)


def create_read_items_for_chunk_list(fqn, checkpoint_md, local_chunks):
    """A read per (local chunk, saved chunk) pair that overlap: the overlap's offsets in each
    and its lengths."""
    read_items = []
    for local_idx, local in enumerate(local_chunks):
        for storage_idx, saved in enumerate(checkpoint_md.chunks):
            storage_offsets, dest_offsets, lengths = [], [], []
            for lo, ls, so, ss in zip(local.offsets, local.sizes, saved.offsets, saved.sizes):
                start, end = max(lo, so), min(lo + ls, so + ss)
                if end <= start:
                    break
                storage_offsets.append(start - so)
                dest_offsets.append(start - lo)
                lengths.append(end - start)
            else:
                read_items.append(ReadItem(
                    type=LoadItemType.TENSOR,
                    dest_index=MetadataIndex(fqn, local.offsets, local_idx),
                    dest_offsets=Size(dest_offsets),
                    storage_index=MetadataIndex(fqn, saved.offsets, storage_idx),
                    storage_offsets=Size(storage_offsets), lengths=Size(lengths)))
    return read_items


def create_default_local_load_plan(state_dict, metadata, strict=True):
    """A read per state-dict value; a key the checkpoint lacks raises (``strict``) or is
    skipped."""
    requests = []
    for fqn, obj in state_dict.items():
        if fqn not in metadata.state_dict_metadata:
            if strict:
                raise RuntimeError(f"Missing key in checkpoint state_dict: {fqn}.")
            continue
        md = metadata.state_dict_metadata[fqn]
        if (isinstance(md, TensorStorageMetadata) and getattr(obj, "size", None) is not None
                and md.size != obj.size()):
            raise ValueError(f"Size mismatch between saved {md.size} and current: "
                             f"{obj.size()} for {fqn}")
        requests += _create_read_items(fqn, md, obj)
    return LoadPlan(requests)


def create_default_global_load_plan(all_plans):
    """Loading needs no global coordination: the local plans unchanged."""
    return all_plans


def create_default_local_save_plan(state_dict, is_coordinator):
    """A write per value on every rank; the coordinator deduplicates."""
    requests = []
    for fqn, obj in state_dict.items():
        requests += _create_write_items(fqn, obj)
    return SavePlan(requests)


def create_default_global_save_plan(all_plans, rewrite_index_hints=True):
    """The Metadata of every write in ``all_plans``; each tensor item's index hint is set to
    its chunk's position in the metadata's chunk list."""
    md = {}
    new_plans = []
    for plan in all_plans:
        new_items = []
        for item in plan.items:
            if item.type != WriteItemType.SHARD and item.index.fqn in md:
                raise AssertionError("item.index.fqn not in md")
            if item.type == WriteItemType.BYTE_IO:
                md[item.index.fqn] = BytesStorageMetadata()
                new_items.append(item)
                continue
            tensor_md = md.setdefault(item.index.fqn, TensorStorageMetadata(
                properties=item.tensor_data.properties, size=item.tensor_data.size, chunks=[]))
            new_item = item
            if rewrite_index_hints:
                new_item = dataclasses.replace(item, index=dataclasses.replace(
                    item.index, index=len(tensor_md.chunks)))
            new_items.append(new_item)
            tensor_md.chunks.append(item.tensor_data.chunk)
        new_plans.append(dataclasses.replace(plan, items=new_items))
    return new_plans, Metadata(md)


def dedup_save_plans(all_plans, save_to_lowest_rank=False):
    """Each write that several plans hold (a replicated value) is kept in one plan only: the
    one with the fewest bytes planned so far (or the lowest rank)."""
    plan_indices = defaultdict(set)
    items_by_index = {}
    kept = [{item.index for item in plan.items} for plan in all_plans]
    for plan_idx, plan in enumerate(all_plans):
        for item in plan.items:
            plan_indices[item.index].add(plan_idx)
            items_by_index[item.index] = item
    plan_size = [0] * len(all_plans)
    for index, holders in plan_indices.items():
        if save_to_lowest_rank:
            chosen = min(holders)
        else:
            chosen = min(holders, key=lambda i: plan_size[i])
        # a non-tensor's storage size is unknown: count it as one byte
        plan_size[chosen] += items_by_index[index].tensor_storage_size() or 1
        for other in holders - {chosen}:
            kept[other].discard(index)
    return [dataclasses.replace(plan, items=[i for i in plan.items if i.index in keep])
            for plan, keep in zip(all_plans, kept)]
