"""The default save and load planners (PyTorch's ``default_planner``); the items they plan
are built in ``planner_helpers``, the deduplication is ``_dedup_save_plans``.

Saving: the state dict is flattened to dotted keys; every rank plans a write per value (a tensor
as one chunk at offset zero, a DTensor as this rank's shard at its global offsets, anything else
as a byte object pickled with ``ember.save``); the coordinator keeps each write on one rank only
(the rank with the fewest bytes planned so far, or the lowest with
``dedup_save_to_lowest_rank``), builds the Metadata (a tensor's chunks: one per distinct shard)
and checks that each tensor's chunks are in bounds, do not overlap and, with several ranks,
cover it. Loading: one read per saved chunk that overlaps each destination chunk (a plain
tensor, or this rank's shard of a DTensor: resharding), and byte objects replaced in the
caller's (nested) state dict.
"""
import dataclasses
import io
import logging
import math
import sys
from bisect import bisect_right, insort
from collections import ChainMap

from ._dedup_save_plans import dedup_save_plans
from ._traverse import flatten_state_dict, set_element
from .metadata import BytesStorageMetadata, Metadata, TensorStorageMetadata
from .planner import LoadPlan, LoadPlanner, SavePlan, SavePlanner, WriteItemType
from .planner_helpers import (_create_default_metadata_only_plan, _create_read_items,
                              _create_write_items, _init_state_dict)
from .utils import find_state_dict_object
from ..tensor import DTensor

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
        validation_errors = _validate_global_plan(global_plan, metadata)
        if validation_errors:
            error_summary = "; ".join(validation_errors)
            if len(error_summary) > 500:
                error_summary = error_summary[:500] + "... (truncated)"
            raise ValueError(f"Failed to validate global plan: {error_summary}")
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


class _EmptyStateDictLoadPlanner(DefaultLoadPlanner):
    """Rebuilds the state dict from the checkpoint's metadata into an empty dict (an empty
    tensor per saved tensor, nested back by the saved key paths), then loads into it: a
    checkpoint read without a model (``format_utils.dcp_to_torch_save``, Lightning's
    ``_load_distributed_checkpoint``). ``keys`` keeps only those keys (or their parents)."""

    def __init__(self, keys=None, *args, **kwargs):
        self.keys = keys
        super().__init__(*args, **kwargs)

    def _should_include_key(self, key, metadata):
        if self.keys is None or key in self.keys:
            return True
        # "a.b.c" is kept when "a" or "a.b" is asked for
        prefix = None
        for part in metadata.planner_data.get(key):
            prefix = part if prefix is None else f"{prefix}.{part}"
            if prefix in self.keys:
                return True
        return False

    def set_up_planner(self, state_dict, metadata=None, is_coordinator=False):
        if state_dict:
            raise AssertionError("not state_dict")
        if metadata is None:
            raise AssertionError("metadata is not None")
        from ... import empty
        for key, value in metadata.state_dict_metadata.items():
            if not self._should_include_key(key, metadata):
                continue
            if isinstance(value, TensorStorageMetadata):
                value = empty(value.size, dtype=value.properties.dtype)
            if metadata.planner_data is not None and key in metadata.planner_data:
                set_element(state_dict, metadata.planner_data[key], value)
            else:
                state_dict[key] = value
        super().set_up_planner(state_dict, metadata, is_coordinator)


def narrow_tensor_by_index(tensor, offsets, sizes):
    """The view of ``tensor`` at ``offsets`` with ``sizes``."""
    narrowed = tensor
    for dim, (offset, size) in enumerate(zip(offsets, sizes)):
        if offset != 0 or size != tensor.size(dim):
            narrowed = narrowed.narrow(dim, offset, size)
    return narrowed


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
        # a rank outside a DTensor's (sub)mesh holds none of it
        if not isinstance(obj, DTensor) or obj.device_mesh.get_coordinate() is not None:
            requests += _create_read_items(fqn, md, obj)
    return LoadPlan(requests)


def create_default_global_load_plan(all_plans):
    """Loading needs no global coordination: the local plans unchanged."""
    return all_plans


def create_default_local_save_plan(state_dict, is_coordinator):
    """A write per value on every rank (a DTensor: on the ranks of its mesh); the coordinator
    deduplicates."""
    requests = []
    for fqn, obj in state_dict.items():
        if not isinstance(obj, DTensor) or obj.device_mesh.get_coordinate() is not None:
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


def _create_default_local_metadata(state_dict):
    """The ``Metadata`` DefaultSavePlanner would give a checkpoint of ``state_dict`` saved by
    this rank alone."""
    _, md = create_default_global_save_plan([_create_default_metadata_only_plan(state_dict)])
    return md


def _check_box_overlap(box0, box1):
    """Whether two chunks overlap."""
    for i in range(len(box0.offsets)):
        if box0.offsets[i] >= box1.offsets[i] + box1.sizes[i]:
            return False
        if box1.offsets[i] >= box0.offsets[i] + box0.sizes[i]:
            return False
    return True


def _check_box_bounds(outer_box_size, inner_box):
    for i in range(len(outer_box_size)):
        if inner_box.offsets[i] < 0 or inner_box.sizes[i] < 0:
            return False
        if inner_box.offsets[i] + inner_box.sizes[i] > outer_box_size[i]:
            return False
    return True


def _validate_global_plan(global_plan, metadata):
    """The global plan's errors (PyTorch's messages; empty if valid): a tensor chunk out of
    bounds, two overlapping chunks, or (several ranks) chunks not covering the tensor."""
    errors = []
    for key, value in metadata.state_dict_metadata.items():
        if isinstance(value, BytesStorageMetadata) or len(value.size) == 0:
            continue
        chunks = value.chunks
        chunks_volume = 0
        for chunk in chunks:
            if not _check_box_bounds(value.size, chunk):
                msg = (f"key:{key} has out of bounds chunk: tensor-size:{value.size} "
                       f"chunk: {chunk}")
                logger.warning(msg)
                errors.append(msg)
            chunks_volume += math.prod(chunk.sizes)
        if len(chunks) > 1:
            # a sweep along the largest dim compares only chunks that meet along it
            dims = len(value.size)
            sweep_dim = max(range(dims), default=0, key=lambda d: value.size[d])
            order = sorted(range(len(chunks)), key=lambda idx: (
                chunks[idx].offsets[sweep_dim], *(chunks[idx].offsets[d] for d in range(dims))))
            active = []
            for idx in order:
                current = chunks[idx]
                start = current.offsets[sweep_dim]
                cutoff = bisect_right(active, (start, sys.maxsize))
                if cutoff:
                    del active[:cutoff]
                for _, other_idx in active:
                    other = chunks[other_idx]
                    if _check_box_overlap(current, other):
                        msg = f"key:{key} has overlapping chunks: {current} {other}"
                        logger.warning(msg)
                        errors.append(msg)
                insort(active, (start + current.sizes[sweep_dim], idx))
        tensor_volume = math.prod(value.size)
        if len(global_plan) > 1 and chunks_volume != tensor_volume:
            msg = (f"key:{key} invalid fill tensor-volume: {tensor_volume} chunks-volume: "
                   f"{chunks_volume}")
            logger.warning(msg)
            errors.append(msg)
    return errors
